"""CPU: fusion-expand-erf (erf as one rational function) against IREE's own erf, beside eager,
on the bench workloads that have a GELU; median of 9 interleaved blocks of 3 calls (bench/NOTES.md §31).

    python bench/experiments/cpu_erf.py [THREADS] [WORKLOAD ...]   (default 1 thread; torch's and IREE's)
"""

import statistics
import sys
import time
import warnings

import iree.runtime as rt
import torch

import braze
from braze.zoo import WORKLOADS

warnings.filterwarnings("ignore")
threads = int(sys.argv[1]) if len(sys.argv) > 1 else 1
torch.set_num_threads(threads)
rt.flags.parse_flags(f"--task_topology_group_count={threads}")
for name in sys.argv[2:] or ["layernorm_gelu", "gelu_mlp", "transformer_encoder", "bert_layer"]:
    m, a = WORKLOADS[name].build("cpu")
    mods = {k: braze.compile(m, *a, cache=False, pipeline=f"fusion-cpu-pipeline{{erf={k}}}") for k in ("iree", "rational")}
    with torch.no_grad():
        want = m.double()(*[t.double() for t in a])
        m.float()
        fns = {"eager": lambda: m(*a), **{k: (lambda c=c: c(*a)) for k, c in mods.items()}}
        for f in fns.values():
            f()
        times = {k: [] for k in fns}
        for _ in range(9):
            for k, f in fns.items():
                t = time.perf_counter()
                for _ in range(3):
                    f()
                times[k].append((time.perf_counter() - t) / 3 * 1000)
        med = {k: statistics.median(v) for k, v in times.items()}
        err = {k: float((f().double() - want).abs().max()) for k, f in fns.items()}
    print(f"{name:20s} threads={threads}  " + "  ".join(f"{k} {med[k]:.2f} ms (err {err[k]:.1e})" for k in fns)
          + f"  rational vs iree {med['iree'] / med['rational']:.2f}x, vs eager {med['eager'] / med['rational']:.2f}x",
          flush=True)
