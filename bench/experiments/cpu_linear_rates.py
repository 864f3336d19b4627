"""Eager's (oneDNN/MKL) float32 Linear rates at the TransformerEncoderLayer's matmul shapes, one
thread, on this host: what IREE's mmt4d dispatches (cpu_dispatch_times.py) are compared with
(bench/NOTES.md §56).

    python bench/experiments/cpu_linear_rates.py
"""
import statistics
import time

import torch

torch.set_num_threads(1)
for m, n, k in ((128, 2304, 768), (128, 768, 768), (128, 3072, 768), (128, 768, 3072)):
    x, w = torch.randn(m, k), torch.randn(n, k)
    with torch.no_grad():
        for _ in range(5):
            torch.nn.functional.linear(x, w)
        times = []
        for _ in range(7):
            t = time.perf_counter()
            for _ in range(10):
                torch.nn.functional.linear(x, w)
            times.append((time.perf_counter() - t) / 10)
    s = statistics.median(times)
    print(f"linear {m}x{n}x{k} f32: {s * 1e3:.3f} ms, {2 * m * n * k / s / 1e9:.1f} GFLOP/s")
