"""The front-end MLIR bindings: torch-mlir's copy of MLIR's Python API.

Everything in braze that builds or rewrites IR before IREE (the importer, the fusion
dialect, the passes, braze-opt) imports MLIR from here and nowhere else, so the rest of
the code never cares which binding package it holds. IR never crosses to IREE's
bindings as objects: it crosses as bytecode (see `braze.compiler._iree_compiler`).
"""

from __future__ import annotations

from braze.errors import DependencyError

try:
    from torch_mlir import ir, passmanager, rewrite
    from torch_mlir.dialects import arith, func, linalg, math, tensor
    from torch_mlir.dialects import ext as dialect_ext
    from torch_mlir.dialects import irdl
except ImportError as e:  # pragma: no cover - exercised only without torch-mlir
    raise DependencyError(
        f"braze's compiler needs torch-mlir ({e}). Install it with "
        "`pip install torch-mlir==20261001` (or `pip install braze[compile]`); "
        "running a saved artifact needs only iree-base-runtime."
    ) from e

__all__ = [
    "fx_importer", "arith", "dialect_ext", "func", "ir", "irdl", "linalg", "math", "passmanager",
    "rewrite", "tensor",
]


def fx_importer():
    """torch-mlir's FX importer pieces: (FxImporter, torch dialect module, decomposition table).

    Imported on first use: they import torch, which braze-opt never needs.
    """
    from torch_mlir.dialects import torch as torch_dialect
    from torch_mlir.extras.fx_decomp_util import get_decomposition_table
    from torch_mlir.extras.fx_importer import FxImporter

    return FxImporter, torch_dialect, get_decomposition_table()
