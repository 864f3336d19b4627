"""The cost models behind braze's GPU kernel choices: elementwise tiles, im2col tiles, matmul
tiles (and which matmuls to pad so that a tile fits), all pure functions of shapes.

No MLIR here: the passes read shapes off the IR (`matchers.py`) and ask these functions; the
tuner asks them too, for the choice it compares measured candidates against.
"""

from __future__ import annotations

from braze.targets import cuda_sm_count

from .configs import KernelConfig, MatmulConfig, MatmulSignature

# ---------------------------------------------------------------------------
# Elementwise kernels.


def choose_config(elements: int, max_element_bytes: int, threads: int = 256, access_bytes: int = 16) -> KernelConfig | None:
    """The configuration of a memory-bound 1-D kernel (None: leave it to IREE).

    Each thread moves 16 bytes per operand (one 128-bit access: 4 float32 or 8 bfloat16
    elements), 256 threads per workgroup, so a workgroup covers 256 * 16 / element-bytes
    elements; thread and workgroup tiles shrink by powers of two until they divide the element
    count. Measured on the H200: the 16M-element float32 chain ran in 33 us with workgroup 1024 /
    thread 4 / 256 threads against 82 us with IREE's default (32-thread workgroups of 128 elements).
    """
    thread = max(1, access_bytes // max(1, max_element_bytes))
    while thread > 1 and elements % thread:
        thread //= 2
    while threads > 32 and elements % (threads * thread):
        threads //= 2
    if elements % (threads * thread) or elements < threads * thread:
        return None
    return KernelConfig((threads * thread,), (thread,), threads)


def choose_im2col_config(shape: list[int], element_bytes: int, threads: int = 256) -> KernelConfig:
    """Tiles for an im2col copy (fusion-conv-to-matmul) over (C, KH, KW, N, OH, OW).

    Each thread writes up to 16 bytes of one output row (OW innermost, the contiguous dimension
    on both sides); a workgroup takes whole rows, then whole images of rows, then more of the
    outer dimensions, while it stays within `threads` threads."""
    per_thread = max(1, 16 // element_bytes)
    while shape[-1] % per_thread:
        per_thread //= 2
    thread = [1] * (len(shape) - 1) + [per_thread]
    workgroup = [1] * (len(shape) - 1) + [shape[-1]]
    used = shape[-1] // per_thread
    for d in range(len(shape) - 2, -1, -1):
        tile = max((t for t in range(1, shape[d] + 1) if shape[d] % t == 0 and used * t <= threads), default=1)
        workgroup[d] = tile
        used *= tile
        if tile < shape[d]:
            break
    return KernelConfig(tuple(workgroup), tuple(thread), used)


# ---------------------------------------------------------------------------
# Matmuls.

MATMUL_CANDIDATES = {
    "f32": [MatmulConfig.parse_short(t) for t in (
        "simt:128x64:8:8x4:16x16", "simt:64x64:16:4x4:16x16", "simt:64x32:16:4x2:16x16",
        "simt:32x32:8:2x2:16x16", "simt:128x128:8:8x8:16x16", "simt:64x128:8:4x8:16x16",
        "simt:64x64:8:4x4:16x16", "simt:64x32:8:4x2:16x16", "simt:128x64:16:8x4:16x16",
        "simt:128x64:32:8x4:16x16", "simt:64x64:32:4x4:16x16", "simt:64x32:32:4x2:16x16")],
    "bf16": [MatmulConfig.parse_short(t) for t in (
        "mma:128x128:4:4x8:128:3", "mma:128x64:4:4x4:128:3", "mma:64x64:4:2x4:128:3",
        "mma:128x256:4:4x8:256:3", "mma:128x128:4:2x8:256:3", "mma:64x128:4:2x8:128:3",
        "mma:64x64:2:2x4:128:4", "mma:32x128:4:1x8:128:3", "mma:128x64:8:4x4:128:3",
        "mma:64x64:8:2x4:128:3")],
}
"""Tile configurations the autotuner measures for each input element type (the element types
braze tiles at all)."""

MATMUL_PREFERENCE = {key: [(MatmulConfig.parse_short(t), waves) for t, waves in entries] for key, entries in {
    "f32": [("simt:128x64:8:8x4:16x16", 2), ("simt:64x64:16:4x4:16x16", 2), ("simt:64x32:16:4x2:16x16", 2),
            ("simt:32x32:8:2x2:16x16", 0)],
    "f32_tb": [("simt:128x64:32:8x4:16x16", 2), ("simt:64x64:32:4x4:16x16", 2), ("simt:64x32:32:4x2:16x16", 2),
               ("simt:32x32:8:2x2:16x16", 0)],
    "bf16": [("mma:128x128:4:4x8:128:3", 4), ("mma:128x64:4:4x4:128:3", 2), ("mma:64x64:4:2x4:128:3", 2)],
}.items()}
"""The cost model: (configuration, waves) in order of preference; the first that divides the
matmul and gives at least `waves` workgroups per SM wins. Fitted to kernel times (ncu) of 30
matmul shapes from the bench's layers on the H200, where it picks the measured winner or one
within 10% of it in every case (bench/NOTES.md §10): float32 wants about two workgroups per SM,
and K steps of 16 (32 when B is a transposed weight, read along K: `f32_tb`); for bfloat16,
IREE's own choice beat every candidate on the shapes too small for two waves of 128 x 64
tiles, so those keep it."""


def choose_matmul_config(batch: int, m: int, n: int, k: int, element: str, target: str,
                         transposed_b: bool = False) -> MatmulConfig | None:
    """The cost model's tiles (MATMUL_PREFERENCE); None: IREE's default.

    float32 always gets tiles (IREE's default runs these shapes 3-15x slower): when none
    reaches its waves, the candidate with the most workgroups among those that divide.
    """
    sms = cuda_sm_count(target)
    count = lambda c: batch * (m // c.workgroup[0]) * (n // c.workgroup[1])  # noqa: E731
    key = element + "_tb" if transposed_b and element + "_tb" in MATMUL_PREFERENCE else element
    fits = [(c, waves) for c, waves in MATMUL_PREFERENCE.get(key, []) if c.divides(m, n, k)]
    for config, waves in fits:
        if count(config) >= waves * sms:
            return config
    if element == "f32" and fits:
        return max((c for c, _ in fits), key=count)
    return None


def select_matmul_config(sig: MatmulSignature, target: str, cache=None, forced: str = "") -> MatmulConfig | None:
    """The tiles a matmul gets: `forced` (a short form, for tuning) where it applies, else the
    tuning cache's measured winner for its signature, else the cost model's."""
    if forced:
        config = MatmulConfig.parse_short(forced)
        ok = config.divides(sig.m, sig.n, sig.k) and (config.kind == "mma") == (sig.element == "bf16")
        return config if ok else None
    stored = cache.lookup(sig.text(), target) if cache is not None else None
    if stored is not None:
        try:
            config = MatmulConfig.parse(stored)
            if config.divides(sig.m, sig.n, sig.k):
                return config
        except ValueError:
            pass  # a damaged cache entry: the cost model decides
    return choose_matmul_config(sig.batch, sig.m, sig.n, sig.k, sig.element, target, sig.transposed_b)


PAD = {"m": 32, "n": 32, "k": 16}
"""fusion-pad-matmuls rounds M, N and K up to these multiples: the smallest tiles offered."""


def _up(value: int, multiple: int) -> int:
    return -(-value // multiple) * multiple


def padded(m: int, n: int, k: int) -> tuple[int, int, int]:
    """(M, N, K) rounded up to PAD's multiples."""
    return _up(m, PAD["m"]), _up(n, PAD["n"]), _up(k, PAD["k"])
