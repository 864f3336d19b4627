"""Timing calls on the CPU and on CUDA: the one timer `braze bench`, `braze tune` and the
experiments in bench/ share, and the reader of ncu's kernel times.

    timer = Timer("cuda")
    seconds = timer.event_call(fn, args)      # CUDA events around one call (torch's stream)
    seconds = timer.sync_call(fn, args)       # wall clock, device synchronized before and after
    ms = median_ms(fn, reps=50, device="cuda")
    ms = per_call_ms(fn, n=100)               # n back-to-back calls, synchronized at the ends
    ms = profiled_kernel_ms(fn)               # the GPU time of the kernels one call runs
    kernels = profiled_kernels(fn, calls=5)   # {kernel name: (launches, ms)} a call
    ms = events_per_call_ms(fn, calls=100)    # the same between CUDA events, median of 5 blocks
    launches = ncu_kernels("ncu.csv")         # [(kernel name, us), ...] in launch order
"""

from __future__ import annotations

import csv
import statistics
import time


class Timer:
    """Times one call on a device; returns seconds."""

    def __init__(self, device: str):
        self.cuda = device == "cuda"
        if self.cuda:
            import torch

            self._torch = torch
            self._start = torch.cuda.Event(enable_timing=True)
            self._end = torch.cuda.Event(enable_timing=True)

    def event_call(self, fn, args=()) -> float:
        """On CUDA, the time between events recorded on the current stream around the call (work
        the call queues there counts; host time outside it does not); elsewhere, wall clock."""
        if self.cuda:
            self._start.record()
            fn(*args)
            self._end.record()
            self._end.synchronize()
            return self._start.elapsed_time(self._end) / 1000.0
        t0 = time.perf_counter()
        fn(*args)
        return time.perf_counter() - t0

    def sync_call(self, fn, args=()) -> float:
        """Wall clock of one call with the device idle before it and after it: for calls that do
        their work outside torch's stream (IREE's runtime)."""
        if self.cuda:
            self._torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn(*args)
        if self.cuda:
            self._torch.cuda.synchronize()
        return time.perf_counter() - t0


def median_ms(fn, reps: int = 50, device: str = "cuda", warmup: int = 3, sync: bool = False) -> float:
    """Median milliseconds of `reps` calls after `warmup` (event-timed; wall clock with `sync`)."""
    timer = Timer(device)
    for _ in range(warmup):
        fn()
    measure = timer.sync_call if sync else timer.event_call
    times = sorted(measure(fn) for _ in range(max(1, reps)))
    return statistics.median(times) * 1000.0


def per_call_ms(fn, n: int, warmup: int = 5) -> float:
    """Mean wall milliseconds of n back-to-back calls, synchronizing the CUDA device (where torch
    has one) before and after; on the CPU, plain wall clock."""
    import torch

    sync = torch.cuda.synchronize if torch.cuda.is_available() else (lambda: None)
    for _ in range(warmup):
        fn()
    sync()
    t = time.perf_counter()
    for _ in range(n):
        fn()
    sync()
    return (time.perf_counter() - t) / n * 1e3


def events_per_call_ms(fn, calls: int, runs: int = 5, warmup: int = 5) -> float:
    """Median over `runs` blocks of the per-call milliseconds of `calls` back-to-back calls,
    each block between CUDA events on torch's stream, after `warmup` calls and a synchronize."""
    import torch

    timer = Timer("cuda")
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()

    def block():
        for _ in range(calls):
            fn()

    return statistics.median(timer.event_call(block) * 1000.0 / calls for _ in range(runs))


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


def _profiled(fn, calls: int, warmup: int):
    """torch.profiler's record (CUDA activity: CUPTI, which sees kernels launched through the
    driver by braze's launcher too) of `calls` calls of fn, after `warmup` unprofiled calls."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
    return prof


def profiled_kernel_ms(fn, calls: int = 20) -> float:
    """Mean per call of the summed GPU time of the kernels a call runs (torch.profiler / CUPTI;
    memcpy and memset operations left out), after 3 unprofiled calls."""
    prof = _profiled(fn, calls, warmup=3)
    total_us = sum(e.device_time_total for e in prof.key_averages() if e.device_time_total and
                   not e.key.startswith(("Memcpy", "Memset", "cudaDeviceSynchronize")))
    return total_us / calls / 1000.0


def kernel_times(events, calls: int) -> dict[str, tuple[float, float]]:
    """{kernel name: (launches, ms)} per call from torch.profiler events over `calls` calls: every
    device (CUDA) event that took time, copies included."""
    kernels: dict[str, list] = {}
    for e in events:
        if e.device_type.name == "CUDA" and e.device_time > 0:
            k = kernels.setdefault(e.name, [0, 0.0])
            k[0] += 1
            k[1] += e.device_time / 1e3  # us -> ms
    return {name: (n / calls, ms / calls) for name, (n, ms) in kernels.items()}


def profiled_kernels(fn, calls: int = 5, warmup: int = 1) -> dict[str, tuple[float, float]]:
    """kernel_times of `calls` calls of fn under torch.profiler (CUPTI: kernels launched through
    the driver by braze's launcher too), after `warmup` unprofiled calls."""
    return kernel_times(_profiled(fn, calls, warmup).events(), calls)


def ncu_kernels(path) -> list[tuple[str, float]]:
    """(kernel name, us) per launch, in launch order, from `ncu --metrics gpu__time_duration.sum
    --csv` output: the quoted CSV rows among the program's own output, in the unit ncu printed
    each value in (nanoseconds where the CSV names none). Names are ncu's, argument list and all."""
    with open(path, newline="") as f:
        rows = [r for r in csv.reader(line for line in f if line.startswith('"')) if len(r) > 10]
    if not rows:
        return []
    header, rows = rows[0], rows[1:]
    name, value = header.index("Kernel Name"), header.index("Metric Value")
    metric = header.index("Metric Name") if "Metric Name" in header else None
    unit = header.index("Metric Unit") if "Metric Unit" in header else None
    return [(r[name], _microseconds(float(r[value].replace(",", "")), r[unit] if unit is not None else "nsecond"))
            for r in rows if metric is None or r[metric] == "gpu__time_duration.sum"]


def _microseconds(value: float, unit: str) -> float:
    """ncu on the H200 host writes "ns", even for kernels of milliseconds; the longer spellings
    ("nsecond", "usecond", "msecond") are the ones bench/experiments/ncu_table.py read before."""
    if unit.startswith("n"):
        return value / 1000
    if unit.startswith("m"):
        return value * 1000
    if unit in ("s", "second"):
        return value * 1e6
    return value  # us, usecond
