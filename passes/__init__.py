"""braze's passes. Importing this package registers every pass and pipeline."""

from . import registry
from .registry import PASSES, PIPELINES, ModulePass, parse_pipeline, register, run_pipeline

from . import configure_kernels, fold_broadcast_matmul, form_groups, lower_to_linalg, report, pipelines  # noqa: E402,F401  (registration)

__all__ = ["PASSES", "PIPELINES", "ModulePass", "parse_pipeline", "register", "run_pipeline", "registry"]
