"""braze's CPU (llvm-cpu) passes: `cpu_codegen` (IREE's data tiling where a contraction reads a
constant operand) and `expand_erf` (erf as one rational function). The CPU pipeline also runs
`gpu.conv_to_matmul` without a target (it then rewrites every convolution it can)."""
