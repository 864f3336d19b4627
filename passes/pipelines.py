"""Named pipelines. Names end in `-pipeline`."""

from .registry import register_pipeline

DEFAULT_PIPELINE = register_pipeline(
    "fusion-default-pipeline",
    "Fold broadcast batch matmuls, group elementwise chains, report the groups, lower each group to one linalg.generic",
    "fusion-fold-broadcast-matmul,fusion-form-groups,fusion-report,fusion-lower-to-linalg,canonicalize,cse",
)

BASELINE_PIPELINE = register_pipeline(
    "fusion-baseline-pipeline",
    "What braze.compile(fusion=False) runs: cleanup only, no fusion",
    "canonicalize,cse",
)
