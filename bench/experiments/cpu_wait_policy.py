"""How the calling thread waits for IREE's CPU workers (bench/NOTES.md §41): braze's CPU calls
as iree.runtime leaves the caller (BRAZE_CPU_WAIT=normal) and with the caller SCHED_BATCH during
the call (batch, braze's default), beside eager, interleaved in one process (eager first: run with
OMP_WAIT_POLICY=PASSIVE, or torch's spinning threads slow the contender timed after it):

    python bench/experiments/cpu_wait_policy.py THREADS [WORKLOAD,...] [--calls]

--calls: call by call instead (6 rounds of 6 calls each way, forced batch and normal), printing
each way's p10 / median / mean / p90 and its first 18 calls: the slow way is bimodal.

THREADS sets torch's intra-op threads and IREE's local-task workers alike. Each result is
checked against eager (relative error printed).
"""

import os
import sys
import time
import warnings

import numpy as np

import iree.runtime as rt
import torch

import braze
from braze.tools.timing import interleaved_ms
from braze.testing.zoo import WORKLOADS

warnings.filterwarnings("ignore")
calls = "--calls" in sys.argv
argv = [a for a in sys.argv if a != "--calls"]
threads = int(argv[1])
names = argv[2].split(",") if len(argv) > 2 else ["layernorm_gelu", "attention", "gelu_mlp",
                                                          "transformer_encoder", "conv_bn_relu"]
torch.set_num_threads(threads)
rt.flags.parse_flags(f"--task_topology_group_count={threads}")

for name in names:
    model, args = WORKLOADS[name].build("cpu")
    modules = {}
    for policy in ("normal", "batch"):
        os.environ["BRAZE_CPU_WAIT"] = policy  # read when the module is loaded
        modules[policy] = braze.compile(model, *args)
    os.environ.pop("BRAZE_CPU_WAIT")
    if calls:
        per = {"batch": [], "normal": []}
        with torch.no_grad():
            for k in per:
                modules[k](*args)
            for _ in range(6):
                for k in per:
                    for _ in range(6):
                        t = time.perf_counter()
                        modules[k](*args)
                        per[k].append((time.perf_counter() - t) * 1e3)
        for k, v in per.items():
            v = np.array(v)
            print(f"{name:20s} threads={threads} {k:6s} p10 {np.percentile(v, 10):.2f} median {np.median(v):.2f} "
                  f"mean {v.mean():.2f} p90 {np.percentile(v, 90):.2f} ms; first 18: "
                  + " ".join(f"{x:.1f}" for x in v[:18]), flush=True)
        continue
    with torch.no_grad():
        ref = model(*args)
        fns = {"eager": lambda: model(*args),
               **{f"braze {k}": (lambda c=c: c(*args)) for k, c in modules.items()}}
        times = interleaved_ms(fns, rounds=15, pace="eager")
        errs = {k: float((c(*args) - ref).abs().max() / ref.abs().max()) for k, c in modules.items()}
    eager = times["eager"]
    print(f"{name:20s} threads={threads} eager {eager:.3f} ms | "
          + " | ".join(f"braze {k} {times['braze ' + k]:.3f} ms {eager / times['braze ' + k]:.2f}x eager "
                       f"(err {errs[k]:.1e})" for k in modules), flush=True)
