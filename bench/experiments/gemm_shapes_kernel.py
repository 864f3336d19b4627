"""The kernel bench/experiments/gemm_shapes.py measures (its own file: Triton reads a function's
source from its file). One Linear tile y = x w^T + b, bf16 in and out, with knobs the GEMM
template does not have yet: a tile BN0 + BN1 columns wide (two dots, so 96 = 64 + 32 columns
are possible though Triton's blocks are powers of 2); for split K in two, a fixup where the
first program to finish stores its partial and the second adds it to its own accumulator
(FIX 1) instead of both storing and the last reading both back (FIX 0, the template's); and
EVEN 1, loads without masks where every tile is whole and the parts' K steps divide K; TMA 1,
A and B through TMA descriptors made on the device; WS 1, the K loop warp-specialized by Triton
(with TMA loads and 4 warps, Triton 3.6 gives sm_90 a producer warp group and consumer ones)."""

import triton
import triton.language as tl


@triton.jit
def _chunk_store(acc, rm, rn, bias_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr):
    out = acc + tl.load(bias_ptr + rn, mask=rn < N).to(tl.float32)[None, :]
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], out.to(c_ptr.dtype.element_ty), mask=mask)


@triton.jit
def gemm(a_ptr, b_ptr, bias_ptr, cnt_ptr, c_ptr, ws_ptr,
         M: tl.constexpr, N: tl.constexpr, K: tl.constexpr,
         BM: tl.constexpr, BN0: tl.constexpr, BN1: tl.constexpr, BK: tl.constexpr,
         SPLIT: tl.constexpr, FIX: tl.constexpr, GROUP_M: tl.constexpr, EVEN: tl.constexpr,
         TMA: tl.constexpr, WS: tl.constexpr):
    BN: tl.constexpr = BN0 + BN1
    STEPS: tl.constexpr = (K + BK * SPLIT - 1) // (BK * SPLIT)
    part = tl.program_id(0) % SPLIT
    pid = tl.program_id(0) // SPLIT
    tiles_m = (M + BM - 1) // BM
    tiles_n = (N + BN - 1) // BN
    in_group = GROUP_M * tiles_n
    first_m = (pid // in_group) * GROUP_M
    group_m = min(tiles_m - first_m, GROUP_M)
    pid_m = first_m + ((pid % in_group) % group_m)
    pid_n = (pid % in_group) // group_m
    rm = pid_m * BM + tl.arange(0, BM)
    rn0 = pid_n * BN + tl.arange(0, BN0)
    rk = tl.arange(0, BK)
    k0 = part * STEPS * BK
    a_ptrs = a_ptr + rm[:, None] * K + (k0 + rk)[None, :]
    b0_ptrs = b_ptr + rn0[None, :] * K + (k0 + rk)[:, None]
    acc0 = tl.zeros((BM, BN0), dtype=tl.float32)
    if BN1 > 0:
        rn1 = pid_n * BN + BN0 + tl.arange(0, BN1)
        b1_ptrs = b_ptr + rn1[None, :] * K + (k0 + rk)[:, None]
        acc1 = tl.zeros((BM, BN1), dtype=tl.float32)
    if TMA:  # descriptors made on the device (Triton's global scratch), as braze's TMA tiles make them
        a_desc = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[K, 1], block_shape=[BM, BK])
        b0_desc = tl.make_tensor_descriptor(b_ptr, shape=[N, K], strides=[K, 1], block_shape=[BN0, BK])
        if BN1 > 0:
            b1_desc = tl.make_tensor_descriptor(b_ptr, shape=[N, K], strides=[K, 1], block_shape=[BN1, BK])
    for kk in tl.range(0, STEPS, warp_specialize=WS):
        k_left = K - k0 - kk * BK
        if TMA:
            a = a_desc.load([pid_m * BM, k0 + kk * BK])
            b0 = b0_desc.load([pid_n * BN, k0 + kk * BK]).T
        elif EVEN:  # every tile whole and K a multiple of the parts' steps: no masks
            a = tl.load(a_ptrs)
            b0 = tl.load(b0_ptrs)
        else:
            a = tl.load(a_ptrs, mask=(rm[:, None] < M) & (rk[None, :] < k_left), other=0.0)
            b0 = tl.load(b0_ptrs, mask=(rn0[None, :] < N) & (rk[:, None] < k_left), other=0.0)
        acc0 = tl.dot(a, b0, acc0)
        if BN1 > 0:
            if TMA:
                b1 = b1_desc.load([pid_n * BN + BN0, k0 + kk * BK]).T
            elif EVEN:
                b1 = tl.load(b1_ptrs)
            else:
                b1 = tl.load(b1_ptrs, mask=(rn1[None, :] < N) & (rk[:, None] < k_left), other=0.0)
            acc1 = tl.dot(a, b1, acc1)
            b1_ptrs += BK
        a_ptrs += BK
        b0_ptrs += BK
    if SPLIT == 1:
        _chunk_store(acc0, rm, rn0, bias_ptr, c_ptr, M, N)
        if BN1 > 0:
            _chunk_store(acc1, rm, rn1, bias_ptr, c_ptr, M, N)
    else:
        tile = pid
        ws0 = ws_ptr + tile * (SPLIT * BM * BN) + tl.arange(0, BM)[:, None] * BN0 + tl.arange(0, BN0)[None, :]
        if BN1 > 0:
            ws1 = ws_ptr + tile * (SPLIT * BM * BN) + SPLIT * BM * BN0 + tl.arange(0, BM)[:, None] * BN1 \
                + tl.arange(0, BN1)[None, :]
        if FIX == 0:
            tl.store(ws0 + part * (BM * BN0), acc0)
            if BN1 > 0:
                tl.store(ws1 + part * (BM * BN1), acc1)
            tl.debug_barrier()
            arrived = tl.atomic_add(cnt_ptr + tile, 1, sem="acq_rel", scope="gpu")
            if arrived == SPLIT - 1:
                tl.debug_barrier()
                acc0 = tl.load(ws0, cache_modifier=".cg")
                for j in range(1, SPLIT):
                    acc0 += tl.load(ws0 + j * (BM * BN0), cache_modifier=".cg")
                _chunk_store(acc0, rm, rn0, bias_ptr, c_ptr, M, N)
                if BN1 > 0:
                    acc1 = tl.load(ws1, cache_modifier=".cg")
                    for j in range(1, SPLIT):
                        acc1 += tl.load(ws1 + j * (BM * BN1), cache_modifier=".cg")
                    _chunk_store(acc1, rm, rn1, bias_ptr, c_ptr, M, N)
                tl.atomic_xchg(cnt_ptr + tile, 0)  # ready for the next launch (the prototype has no fill)
        else:
            # two parts: whoever counts in first (old 0) stores its partial and counts again
            # (release); the other (old 1 or 2) waits for the count 3 and adds that partial to its
            # own accumulator: a + b == b + a, so the sum does not depend on which was first
            arrived = tl.atomic_add(cnt_ptr + tile, 1, sem="acq_rel", scope="gpu")
            if arrived == 0:
                tl.store(ws0, acc0)
                if BN1 > 0:
                    tl.store(ws1, acc1)
                tl.debug_barrier()
                tl.atomic_add(cnt_ptr + tile, 1, sem="release", scope="gpu")
            else:
                seen = arrived + 1  # the count after this program's own add
                while seen < 3:
                    seen = tl.atomic_add(cnt_ptr + tile, 0, sem="acquire", scope="gpu")
                tl.debug_barrier()
                acc0 += tl.load(ws0, cache_modifier=".cg")
                _chunk_store(acc0, rm, rn0, bias_ptr, c_ptr, M, N)
                if BN1 > 0:
                    acc1 += tl.load(ws1, cache_modifier=".cg")
                    _chunk_store(acc1, rm, rn1, bias_ptr, c_ptr, M, N)
                tl.atomic_xchg(cnt_ptr + tile, 0)
