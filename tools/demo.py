"""`braze demo`: compile a small transformer block, print the report and the error against eager."""

from __future__ import annotations

import time

from braze.accuracy import max_error


def run_demo(device: str = "cpu", fusion: bool = True) -> int:
    import torch

    import braze

    torch.manual_seed(0)
    block = torch.nn.TransformerEncoderLayer(
        d_model=256, nhead=4, dim_feedforward=1024, batch_first=True, activation="gelu"
    ).eval()
    x = torch.randn(2, 16, 256)
    print(f"braze {braze.__version__}: compiling TransformerEncoderLayer(256, 4, 1024, gelu) "
          f"for input [2, 16, 256] on {device} ...", flush=True)
    compiled = braze.compile(block, x, device=device, fusion=fusion)
    print()
    print(compiled.report)
    x2 = torch.randn(2, 16, 256)
    with torch.no_grad():
        expected = block(x2)
    t0 = time.perf_counter()
    got = compiled(x2)
    call_ms = (time.perf_counter() - t0) * 1000
    got = got.to(expected.device)
    err = (got - expected).abs().max().item()
    rel = max_error(got, expected, floor=0.0)  # NaN-aware: a NaN braze result is an infinite error
    print()
    print(f"max |braze - eager| = {err:.3g} (relative {rel:.3g}) on a fresh random input; "
          f"first call {call_ms:.1f} ms")
    ok = rel < 1e-4
    print("PASS: matches eager PyTorch to 1e-4 relative" if ok else "FAIL: differs from eager PyTorch")
    return 0 if ok else 1
