"""braze's attention template: one flash-attention kernel per AttentionSpec.

Each program owns BM query rows of one head: it loads q's [BM, E] tile once, then walks the keys
BN at a time, computing the [BM, BN] scores on tensor cores (`tl.dot`: wgmma on sm_90), adding
the mask, and folding them into a running softmax (the row maximum m, the row sum l, the
[BM, EV] accumulator rescaled by exp(m_old - m_new) each step) before multiplying by v's tile.
The [L, S] score matrix never reaches memory, which is the point: the three-dispatch form
(batch matmul, softmax, batch matmul) writes and re-reads it.

Softmax is computed in base 2 (exp2 with the scale folded into log2(e); with an additive mask
the scores are scaled by log2(e) inside exp2 only, so that a finite mask stays finite), in f32
whatever the operands; a row every key of which is masked gives 0, as torch's SDPA (its "safe softmax") and
torch-mlir's attention do. Causal attention stops each program's key loop at its last row
(keys j <= query i, torch's top-left alignment; when L <= S). The parameters are IREE's CUDA ABI for an
external executable, as for the GEMM template (braze.kernels.gemm).
"""

from __future__ import annotations

import math

from braze.kernels.gemm import TL_TYPES, TRITON_TYPES, rounding_source
from braze.kernels.spec import AttentionSpec

LOG2E = 1.4426950408889634


def kernel_name(spec: AttentionSpec) -> str:
    return f"braze_attention_{spec.key()}"


def _pow2(n: int) -> int:
    return max(16, 1 << (n - 1).bit_length())


def _load(ptr: str, conds: list[str]) -> str:
    """tl.load of `ptr`, masked (zero outside) only where a bound can be crossed."""
    conds = [c for c in conds if c]
    return f"tl.load({ptr}, mask={' & '.join(conds)}, other=0.0)" if conds else f"tl.load({ptr})"


def _base(name: str, per_b: int, per_h: int, heads: int, group: int = 1) -> str:
    """The address of head `bh`'s first element in operand `name` (whose head is the query
    head // group: k and v of grouped-query attention)."""
    if group > 1:
        return f"{name}_ptr + (bh // {heads}) * {per_b} + ((bh % {heads}) // {group}) * {per_h}"
    if heads == 1 or per_b == heads * per_h:
        return f"{name}_ptr + bh * {per_h if heads > 1 else per_b}"
    return f"{name}_ptr + (bh // {heads}) * {per_b} + (bh % {heads}) * {per_h}"


def source(spec: AttentionSpec) -> str:
    """The Triton source of the spec's kernel (spec.tile set). Bounds are checked only where a
    tile can cross one (L, S not multiples of BM, BN; head sizes not powers of two)."""
    l, s, e, ev = spec.l, spec.s, spec.e, spec.ev
    bm, bn = spec.tile[:2]
    ep, vp = _pow2(e), _pow2(ev)
    prec = f', input_precision="{spec.precision}"' if spec.precision else ""
    # one TF32 product: every operand rounded to nearest first (braze.kernels.gemm.TF32_ROUNDING)
    tf32 = (lambda x: f"_tf32({x})") if spec.precision == "tf32" else (lambda x: x)  # noqa: E731
    mask_param = "mask_ptr, " if spec.mask == "add" else ""
    causal_stop = spec.mask == "causal" and l <= s
    # the causal loop's last row block may reach past S
    past = s % bn or (causal_stop and -(-l // bm) * bm > s)
    rows = f"(rm[:, None] < {l})" if l % bm else ""
    keys = f"(cols[:, None] < {s})" if past else ""
    key_cols = f"(cols[None, :] < {s})" if past else ""
    heads_e = f"(re[None, :] < {e})" if e != ep else ""
    heads_v = f"(rv[None, :] < {ev})" if ev != vp else ""
    (qb, qh, qi), (kb, kh, ki), (vb, vh, vi), (ob, oh, oi) = spec.operand_strides()
    base = {}
    for name, sb, sh in (("q", qb, qh), ("k", kb, kh), ("v", vb, vh), ("o", ob, oh)):
        base[name] = _base(name, sb, sh, spec.heads, spec.group if name in ("k", "v") else 1)
        offset = dict(zip("qkv", spec.offsets)).get(name, 0)
        if offset:
            base[name] = f"{base[name]} + {offset}"
    setup = ""
    if spec.mask == "add":
        sb, sh, si, sj = spec.mask_strides
        setup = f"    mask_base = {_base('mask', sb, sh, spec.heads)}\n"
    # Causal: a program's keys end at its last row (past S only in the last row block, where the
    # loads are masked); when there are more queries than keys, every key may be seen.
    hi = "(pid_m + 1) * BM" if causal_stop else f"{s}"
    keep = [key_cols]
    if spec.mask == "causal":
        keep.append("(cols[None, :] <= rm[:, None])")
    keep = [c for c in keep if c]
    body = []
    if spec.mask == "add":  # scores in natural units until exp2: a finite mask stays finite
        m_load = _load(f"mask_base + rm[:, None] * {si} + cols[None, :] * {sj}", [rows, key_cols])
        body.append(f"qk += {m_load}.to(tl.float32)")
    if keep:
        body.append(f"qk = tl.where({' & '.join(keep)}, qk, float(\"-inf\"))")
    body.append("m_new = tl.maximum(m_i, tl.max(qk, 1))")
    if spec.mask == "add":  # a mask can hide every key of a row so far: keep exp2's argument finite
        body.append('m_use = tl.where(m_new == float("-inf"), 0.0, m_new)')
    else:  # the first key block always holds a visible key for every row
        body.append("m_use = m_new")
    extra = "".join(f"\n        {line}" for line in body)
    # With an additive mask the scores stay in natural units, scaled by log2(e) only inside
    # exp2: finfo.min in a mask times log2(e) would be -inf, and a row whose every key such a
    # mask hides would give 0 instead of eager's uniform weights.
    if spec.mask == "add":
        qk_scale = spec.scale
        exp_arg, alpha_arg = f"(qk - m_use[:, None]) * {LOG2E!r}", f"(m_i - m_use) * {LOG2E!r}"
    else:
        qk_scale = spec.scale * LOG2E
        exp_arg, alpha_arg = "qk - m_use[:, None]", "m_i - m_use"
    q_load = _load(f"{base['q']} + rm[:, None] * {qi} + re[None, :]", [rows, heads_e])
    k_load = _load(f"{base['k']} + cols[:, None] * {ki} + re[None, :]", [keys, heads_e])
    v_load = _load(f"{base['v']} + cols[:, None] * {vi} + rv[None, :]", [keys, heads_v])
    store_mask = " & ".join(c for c in (rows, heads_v) if c)
    store_mask = f", mask={store_mask}" if store_mask else ""
    return f'''\
# Generated by braze (braze.kernels.attention) for: {spec.describe()}
import triton
import triton.language as tl
{rounding_source(spec.precision)}

@triton.jit
def {kernel_name(spec)}(q_ptr, k_ptr, v_ptr, {mask_param}o_ptr, BM: tl.constexpr, BN: tl.constexpr):
    pid_m = tl.program_id(0)
    bh = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = tl.arange(0, BN)
    re = tl.arange(0, {ep})
    rv = tl.arange(0, {vp})
    q = {tf32(q_load)}
    m_i = tl.full((BM,), float("-inf"), tl.float32)
    l_i = tl.zeros((BM,), tl.float32)
    acc = tl.zeros((BM, {vp}), tl.float32)
{setup}    for start in range(0, {hi}, BN):
        cols = start + rn
        k = {tf32(k_load)}
        qk = tl.dot(q, tl.trans(k){prec}) * {qk_scale!r}{extra}
        p = tl.exp2({exp_arg})
        alpha = tl.exp2({alpha_arg})
        l_i = l_i * alpha + tl.sum(p, 1)
        v = {tf32(v_load)}
        acc = tl.dot({tf32("p.to(v.dtype)")}, v, acc * alpha[:, None]{prec})
        m_i = m_new
    out = acc / tl.where(l_i == 0.0, 1.0, l_i)[:, None]
    tl.store({base['o']} + rm[:, None] * {oi} + rv[None, :], out.to({TL_TYPES[spec.out]}){store_mask})
'''


def choose_tile(spec: AttentionSpec, sms: int) -> tuple[int, int, int, int]:
    """(BM, BN, warps, stages), as measured on the H200 (bench/NOTES.md §18, ncu kernel times of
    8 tiles a case over 6 cases, bench/experiments/kernel_tiles.py): 64x64 with 4 warps and
    3 stages was the fastest 16-bit tile in every case (head sizes 64 and 128, 128 to 1024
    keys, causal or not); float32 ran fastest at 128x64 with 8 warps and 2 stages (twice the
    shared memory a stage: wider heads take half the keys a step)."""
    width = max(_pow2(spec.e), _pow2(spec.ev))
    if spec.dtype == "f32":
        tile = (128, 64, 8, 2) if width <= 64 else (64, 32, 4, 2)
    else:
        tile = (64, 64, 4, 3) if width <= 128 else (64, 32, 4, 2)
    bm, bn, warps, stages = tile
    return bm, min(bn, _pow2(spec.s)), warps, stages


def grid(spec: AttentionSpec) -> tuple[int, int, int]:
    return (math.ceil(spec.l / spec.tile[0]), spec.batch, 1)


def signature(spec: AttentionSpec) -> dict[str, str]:
    t = "*" + TRITON_TYPES[spec.dtype]
    sig = {"q_ptr": t, "k_ptr": t, "v_ptr": t}
    if spec.mask == "add":
        sig["mask_ptr"] = "*" + TRITON_TYPES[spec.mask_dtype]
    sig["o_ptr"] = "*" + TRITON_TYPES[spec.out]
    sig["BM"] = sig["BN"] = "constexpr"
    return sig


def constexprs(spec: AttentionSpec) -> dict[str, int]:
    return {"BM": spec.tile[0], "BN": spec.tile[1]}


def options(spec: AttentionSpec) -> tuple[int, int]:
    """(warps, stages) for triton.compile."""
    return spec.tile[2], spec.tile[3]


CANDIDATES_16 = ((128, 64, 4, 3), (128, 64, 8, 3), (128, 128, 8, 3), (64, 64, 4, 3), (64, 128, 4, 3),
                 (128, 32, 4, 3), (64, 32, 4, 4))
CANDIDATES_32 = ((64, 64, 4, 2), (64, 32, 4, 2), (128, 64, 8, 2), (128, 32, 8, 2), (64, 64, 4, 3))


def candidates(spec: AttentionSpec, sms: int) -> list[tuple[int, ...]]:
    """Tiles `braze tune` measures for a spec: the cost model's first, then the rest of the
    ones bench/NOTES.md §20 measured (wide heads take the narrower key steps only)."""
    first = choose_tile(spec, sms)
    table = CANDIDATES_32 if spec.dtype == "f32" else CANDIDATES_16
    wide = max(_pow2(spec.e), _pow2(spec.ev)) > (64 if spec.dtype == "f32" else 128)
    rest = [t for t in table if not wide or t[1] <= 32]
    return [first] + [t for t in rest if t != first]
