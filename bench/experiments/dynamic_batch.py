"""Dynamic shapes (issue 18): a BERT layer called with batch sizes 1..64 from one
braze.compile(dynamic_shapes=...), against a static compile of each measured size, side by side
in one process (median of 7 interleaved blocks), one thread for torch and IREE alike.

    python bench/experiments/dynamic_batch.py [THREADS] [SIZES]     (SIZES: e.g. 1,8,64)

Prints the number of compiles (IREE compiles, counted) the dynamic module made for every size
1..64, each measured size's per-call time for the dynamic build, the static build of that
size, and eager, and the errors against eager in float64.
"""

import statistics
import sys
import time
import warnings

import iree.runtime as rt
import torch

import braze
from braze.compiler import backend
from braze.testing.zoo import BertLayer

warnings.filterwarnings("ignore")
threads = int(sys.argv[1]) if len(sys.argv) > 1 else 1
sizes = [int(s) for s in sys.argv[2].split(",")] if len(sys.argv) > 2 else [1, 2, 4, 8, 16, 32, 64]
torch.set_num_threads(threads)
rt.flags.parse_flags(f"--task_topology_group_count={threads}")

compiles = []
real = backend.compile_for_target


def counted(*a, **k):
    compiles.append(k.get("what", ""))
    return real(*a, **k)


backend.compile_for_target = counted
torch.manual_seed(0)
model = BertLayer().eval()
seq = 128
batch = torch.export.Dim("batch", min=1, max=64)
t = time.perf_counter()
fast = braze.compile(model, torch.randn(8, seq, 768), dynamic_shapes=({0: batch},), cache=False)
print(f"dynamic module: {len(compiles)} IREE compiles in {time.perf_counter() - t:.1f} s "
      f"(the dynamic build and the static one for batch 8)", flush=True)
with torch.no_grad():
    for n in range(1, 65):
        fast(torch.randn(n, seq, 768))
print(f"after calls with every batch 1..64: {len(compiles)} IREE compiles; calls per build {fast.calls}", flush=True)

before = len(compiles)
print(f"{'batch':>5s} {'dynamic ms':>11s} {'static ms':>10s} {'eager ms':>9s} {'dyn/static':>10s} {'err dyn':>8s} {'err static':>10s}")
with torch.no_grad():
    for n in sizes:
        x = torch.randn(n, seq, 768)
        static = braze.compile(model, x, cache=False)
        want = model.double()(x.double())
        model.float()
        err = {k: float((m(x).double() - want).abs().max() / want.abs().max()) for k, m in
               (("dyn", fast.dynamic), ("static", static))}
        fns = {"dynamic": lambda: fast.dynamic(x), "static": lambda: static(x), "eager": lambda: model(x)}
        for f in fns.values():
            f()
        t = time.perf_counter()
        fns["static"]()
        reps = max(1, int(0.2 / max(time.perf_counter() - t, 1e-6)))
        times = {k: [] for k in fns}
        for _ in range(7):
            for k, f in fns.items():
                t = time.perf_counter()
                for _ in range(reps):
                    f()
                times[k].append((time.perf_counter() - t) / reps * 1000)
        med = {k: statistics.median(v) for k, v in times.items()}
        print(f"{n:5d} {med['dynamic']:11.3f} {med['static']:10.3f} {med['eager']:9.3f} "
              f"{med['dynamic'] / med['static']:10.2f} {err['dyn']:8.1e} {err['static']:10.1e}", flush=True)
print(f"(the static comparisons compiled {len(compiles) - before} more: one per measured size)")
