"""How TF32 operands are rounded, on the GPU host (issue 35: braze's float32 convolutions, TF32 by
default as cuDNN's, lost 3.6-18x more accuracy than cuDNN's on deep networks).

Triton's `tl.dot(..., input_precision="tf32")` hands float32 bits to wgmma, which ignores the low
13 mantissa bits: it truncates (round toward zero), a bias of half a TF32 ulp on average in every
operand, which compounds layer after layer. Rounding each operand to nearest first
(`cvt.rna.tf32.f32`, what Triton's own 3xTF32 split does for its big part) is unbiased.

    python bench/experiments/tf32_rounding.py

prints, for a float32 GEMM (M=N=2048, K from 256 to 8192) and a 3x3 convolution with ReLU'd
(positive) inputs: which input-channel counts cuDNN runs in TF32 when TF32 is allowed; the error against float64 of Triton's TF32 dot as it is (truncating), with the
operands rounded to nearest first, torch's TF32 (cuBLAS, cuDNN) and float32; the mean signed error
(the bias) of each; and the time of both Triton variants (triton.testing.do_bench).
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _round(x):
    return tl.inline_asm_elementwise("cvt.rna.tf32.f32 $0, $1;", "=r,r", [x], dtype=tl.float32, is_pure=True, pack=1)


@triton.jit
def gemm(a_ptr, b_ptr, c_ptr, M, N, K, ROUND: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pid_m, pid_n = tl.program_id(0), tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + (k0 + rk)[None, :])
        b = tl.load(b_ptr + rn[None, :] * K + (k0 + rk)[:, None])
        if ROUND:
            a = _round(a)
            b = _round(b)
        acc = tl.dot(a, b, acc, input_precision="tf32")
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc)


def triton_gemm(a, b, round_):
    m, k = a.shape
    n = b.shape[0]
    c = torch.empty(m, n, device=a.device)
    gemm[(m // 128, n // 128)](a, b, c, m, n, k, ROUND=round_, BM=128, BN=128, BK=32, num_warps=8, num_stages=3)
    return c


def stats(got, want):
    d = got.double() - want
    return f"max rel {d.abs().max().item() / want.abs().max().item():.2e}  mean signed rel {d.mean().item() / want.abs().mean().item():+.2e}"


def main():
    torch.manual_seed(0)
    print(torch.cuda.get_device_name(), "torch", torch.__version__, "triton", triton.__version__)
    for k in (256, 1024, 4096, 8192):
        a = torch.rand(2048, k, device="cuda")  # positive, as activations after ReLU
        b = torch.randn(2048, k, device="cuda")
        want = a.double() @ b.double().T
        rows = {"triton tf32 (as is)": triton_gemm(a, b, False), "triton tf32, operands rounded": triton_gemm(a, b, True)}
        torch.backends.cuda.matmul.allow_tf32 = True
        rows["torch tf32 (cuBLAS)"] = a @ b.T
        torch.backends.cuda.matmul.allow_tf32 = False
        rows["torch float32"] = a @ b.T
        print(f"GEMM 2048x2048x{k}")
        for name, got in rows.items():
            print(f"  {name:32s} {stats(got, want)}")
        t0 = triton.testing.do_bench(lambda: triton_gemm(a, b, False))
        t1 = triton.testing.do_bench(lambda: triton_gemm(a, b, True))
        print(f"  time: as is {t0 * 1e3:.1f} us, rounded {t1 * 1e3:.1f} us ({t1 / t0:.2f}x)")
    print("cuDNN with TF32 allowed, 3x3 convolutions 16x Cin x 28x28 -> 64: TF32 or float32? (error against float64)")
    for cin in (2, 3, 4, 8, 12, 16, 24, 32, 48, 64):
        x = torch.rand(16, cin, 28, 28, device="cuda")
        w = torch.randn(64, cin, 3, 3, device="cuda") / (3 * cin ** 0.5)
        want = torch.nn.functional.conv2d(x.double(), w.double(), padding=1)
        errs = []
        for tf32 in (True, False):
            torch.backends.cudnn.allow_tf32 = tf32
            got = torch.nn.functional.conv2d(x, w, padding=1)
            errs.append((got.double() - want).abs().max().item() / want.abs().max().item())
        print(f"  Cin {cin:3d}: TF32 allowed {errs[0]:.2e}, float32 {errs[1]:.2e} -> {'TF32' if errs[0] > 4 * errs[1] else 'float32'}")
    print("cuDNN with TF32 allowed, by kernel size and stride (8 x Cin x 56x56 -> 2 Cin): TF32 or float32?")
    for k, stride in ((1, 1), (1, 2), (3, 1), (3, 2)):
        for cin in (32, 64, 128, 256):
            x = torch.rand(8, cin, 56, 56, device="cuda")
            w = torch.randn(2 * cin, cin, k, k, device="cuda") / (k * cin ** 0.5)
            want = torch.nn.functional.conv2d(x.double(), w.double(), stride=stride, padding=k // 2)
            errs = []
            for tf32 in (True, False):
                torch.backends.cudnn.allow_tf32 = tf32
                got = torch.nn.functional.conv2d(x, w, stride=stride, padding=k // 2)
                errs.append((got.double() - want).abs().max().item() / want.abs().max().item())
            print(f"  {k}x{k} stride {stride} Cin {cin:3d}: TF32 allowed {errs[0]:.2e}, float32 {errs[1]:.2e} -> "
                  f"{'TF32' if errs[0] > 4 * errs[1] else 'float32'}")
    torch.backends.cudnn.allow_tf32 = True
    x = torch.rand(16, 256, 28, 28, device="cuda")
    w = torch.randn(256, 256, 3, 3, device="cuda") / 48
    want = torch.nn.functional.conv2d(x.double(), w.double(), padding=1)
    for tf32 in (True, False):
        torch.backends.cudnn.allow_tf32 = tf32
        got = torch.nn.functional.conv2d(x, w, padding=1)
        print(f"conv 3x3 256->256 16x28x28, cuDNN {'tf32' if tf32 else 'float32':8s} {stats(got, want)}")


if __name__ == "__main__":
    main()
