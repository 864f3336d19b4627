"""braze's passes. Importing this package registers every pass and pipeline.

Target-independent passes live here (`form_groups`, `lower_to_linalg`, `report`,
`fold_broadcast_matmul`, `expand_f64_math`, with `elementwise` and `template` as their shared leaves); the CPU's
passes live in `cpu/` (`cpu_codegen`, `expand_erf`), the CUDA passes in `gpu/` (the CPU pipeline
also runs `gpu.conv_to_matmul`, without a target: it then rewrites every convolution it can);
`pipelines` names the pipelines `braze.compile` runs per device and
`runner` runs them (with reproducers when a pass fails).
"""

from . import registry
from .registry import PASSES, PIPELINES, ModulePass, PassPipeline, parse_pipeline, register

from . import expand_f64_math, fold_broadcast_matmul, form_groups, lower_to_linalg, report  # noqa: E402,F401  (registration)
from .cpu import cpu_codegen, expand_erf  # noqa: E402,F401
from .gpu import configure_kernels, conv_to_matmul, generate_kernels, pad_matmuls, split_k  # noqa: E402,F401
from . import pipelines  # noqa: E402,F401
from .runner import run_pipeline  # noqa: E402

__all__ = ["PASSES", "PIPELINES", "ModulePass", "PassPipeline", "parse_pipeline", "register", "run_pipeline",
           "registry"]
