"""braze's passes. Importing this package registers every pass and pipeline."""

from . import registry
from .registry import PASSES, PIPELINES, ModulePass, parse_pipeline, register, run_pipeline

from . import (configure_kernels, conv_to_matmul, fold_broadcast_matmul, form_groups, lower_to_linalg,  # noqa: E402,F401
               pad_matmuls, pipelines, report, split_k)  # (registration)

__all__ = ["PASSES", "PIPELINES", "ModulePass", "parse_pipeline", "register", "run_pipeline", "registry"]
