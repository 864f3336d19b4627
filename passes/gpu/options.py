"""Options the GPU passes share: the CUDA target and the tuning cache."""

from __future__ import annotations

from typing import Any

from braze.targets import CUDA_ARCHS

from ..registry import option


def known_cuda_target(value: str) -> str | None:
    """Why `value` is not a CUDA capability braze compiles for (None when it is)."""
    if value not in CUDA_ARCHS:
        return f"names no CUDA target braze compiles for: '{value}' (known: {', '.join(CUDA_ARCHS)})"
    return None


def cuda_target(doc: str) -> Any:
    """A `target` option: empty, or a CUDA capability braze compiles for (sm_80, sm_90, ...)."""
    return option("", doc, check=lambda value: known_cuda_target(value) if value else None)


def tuning_cache() -> Any:
    """A `tuning-cache` option: the JSON file of measured winners (`braze tune import` writes it)."""
    return option("", "Tuning cache (JSON) with measured configurations to prefer over the cost model; "
                      "empty: none (braze.compile passes the user's cache)")
