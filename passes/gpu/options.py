"""Options the GPU passes share: the CUDA target, the tuning cache, forced kernel tiles."""

from __future__ import annotations

from typing import Any

from braze.kernels.spec import is_tuning_signature, parse_tile
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


def kernel_tiles() -> Any:
    """A `tiles` option: generated kernels' tiles forced by tuning signature (`braze tune`)."""
    return option("", "Force generated kernels' tiles: SIGNATURE=TILE[;SIGNATURE=TILE...] (a kernel's tuning "
                      "signature, e.g. gemm_0123456789abcdef=64x64x64x4x4x2; for braze tune)", check=_check_tiles)


def forced_tiles(text: str) -> dict[str, tuple]:
    """{signature: tile} of a `tiles` option's text."""
    forced = {}
    for part in filter(None, text.split(";")):
        signature, _, tile = part.partition("=")
        forced[signature.strip()] = parse_tile(tile.strip())
    return forced


def _check_tiles(text: str) -> str | None:
    for part in filter(None, text.split(";")):
        signature, eq, tile = part.partition("=")
        if not eq or not is_tuning_signature(signature.strip()):
            return f"takes SIGNATURE=TILE pairs (e.g. gemm_0123456789abcdef=64x64x64x4x4), got '{part}'"
        try:
            parse_tile(tile.strip())
        except ValueError as e:
            return str(e)
    return None
