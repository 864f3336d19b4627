"""Helpers the H200 experiments share: per-call timing on CUDA, interleaved rounds, ncu's CSV."""

import csv
import statistics
import time


def per_call_ms(fn, n: int, warmup: int = 5) -> float:
    """Mean wall time of n back-to-back calls, synchronizing the device before and after."""
    import torch

    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(n):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - t) / n * 1e3


def interleaved_ms(fns: dict, rounds: int = 15, block_ms: float = 20.0, pace: str | None = None) -> dict:
    """Median per-call ms of each function, timed in blocks of ~block_ms, round robin, so every
    contender sees the same machine. `pace` names the function whose speed sets the block size."""
    for fn in fns.values():
        for _ in range(5):
            fn()
    probe = fns[pace or next(iter(fns))]
    n = max(5, int(block_ms / max(per_call_ms(probe, 5, warmup=0), 0.01)))
    times = {k: [] for k in fns}
    for _ in range(rounds):
        for k, fn in fns.items():
            times[k].append(per_call_ms(fn, n, warmup=0))
    return {k: statistics.median(v) for k, v in times.items()}


def ncu_kernels(path: str) -> list[tuple[str, float]]:
    """(kernel name, µs) per launch from `ncu --metrics gpu__time_duration.sum --csv` output."""
    rows = [r for r in csv.reader(open(path)) if len(r) > 10]
    header, rows = rows[0], rows[1:]
    name, value = header.index("Kernel Name"), header.index("Metric Value")
    return [(r[name], float(r[value].replace(",", "")) / 1000) for r in rows]
