"""braze's passes. Importing this package loads the registry only (no MLIR): each pass's module
is imported when its name is first looked up (`PASSES[name]`, parsing a pipeline that names it;
registry.PASS_MODULES says where each lives).

Target-independent passes live here (`form_groups`, `lower_to_linalg`, `report`,
`fold_broadcast_matmul`, `fold_concat`, `expand_f64_math` with `float64_math`, and `elementwise` and `template` as their
shared leaves); the CPU's passes live in `cpu/` (`cpu_codegen`, `expand_erf`), the CUDA passes in
`gpu/` (the CPU pipeline also runs `gpu.conv_to_matmul`, without a target: it then rewrites every
convolution it can); `pipelines` names the pipelines `braze.compile` runs per device and `runner`
runs them (with reproducers when a pass fails).
"""

from braze.passes.registry import PASSES, PIPELINES, ModulePass, PassPipeline, parse_pipeline, register

__all__ = ["PASSES", "PIPELINES", "ModulePass", "PassPipeline", "parse_pipeline", "register"]
