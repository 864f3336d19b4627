"""braze.compile default against fusion-cpu-pipeline{data-tiling=on} beside eager, on this host (bench/NOTES.md §56):
7 interleaved rounds of 10 calls, median ms, error against eager.

    python bench/experiments/cpu_data_tiling_ab.py THREADS [WORKLOADS]   (default: attention)
"""
import sys, time, statistics, torch
th = int(sys.argv[1]) if len(sys.argv) > 1 else 1
torch.set_num_threads(th)
import braze
braze.set_cpu_threads(th)
from braze.testing.zoo import WORKLOADS
names = sys.argv[2].split(",") if len(sys.argv) > 2 else ["attention"]
variants = {"default": {}, "tiling-on": {"pipeline": "fusion-cpu-pipeline{data-tiling=on}"}}
for name in names:
    model, inputs = WORKLOADS[name].build("cpu")
    with torch.no_grad(): ref = model(*inputs)
    mods = {v: braze.compile(model, *inputs, device="cpu", cache=False, **o) for v, o in variants.items()}
    for m in mods.values(): m(*inputs)
    fns = {"eager": lambda: model(*inputs), **{k: (lambda c=c: c(*inputs)) for k, c in mods.items()}}
    times = {k: [] for k in fns}
    with torch.no_grad():
        for _ in range(7):
            for k, f in fns.items():
                t = time.perf_counter()
                for _ in range(10): f()
                times[k].append((time.perf_counter() - t) / 10 * 1000)
    med = {k: statistics.median(v) for k, v in times.items()}
    for k in fns:
        err = "" if k == "eager" else f"err {float((mods[k](*inputs) - ref).abs().max() / ref.abs().max()):.1e} {mods[k].report.dispatch_count} dispatches"
        print(f"{name:20s} {k:10s} {med[k]:8.3f} ms {med['eager']/med[k]:5.2f}x eager {err}", flush=True)
