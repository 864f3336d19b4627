"""Kernels braze generates itself and embeds in IREE's program (CUDA, sm_90).

`spec` (what a kernel computes: plain data, shared with the pass that finds it), `gemm` (the
Triton template and its cost model), `build` (Triton compile on a machine without a GPU, and the
on-disk kernel cache), `embed` (the back end's module hook: an outlined function becomes one
dispatch of its kernel). Compile-side only: braze.load never imports this package.
"""
