"""CPU: IREE's aggressive dispatch fusion against the default on the bench's LayerNorm-bearing
workloads and the GELU MLP, braze's CPU pipeline, median of 7 interleaved blocks of 3 calls.

    python bench/experiments/cpu_dispatch_fusion.py [THREADS]   (torch's threads for eager)
"""

import statistics
import sys
import time
import warnings

import torch

import braze
from braze.zoo import WORKLOADS

warnings.filterwarnings("ignore")
FLAG = ["--iree-dispatch-creation-enable-aggressive-fusion=true"]
threads = int(sys.argv[1]) if len(sys.argv) > 1 else 1
torch.set_num_threads(threads)
for name in ["layernorm_gelu", "transformer_encoder", "bert_layer", "gelu_mlp"]:
    m, a = WORKLOADS[name].build("cpu")
    mods = {"default": braze.compile(m, *a, cache=False), "aggressive": braze.compile(m, *a, cache=False, iree_flags=FLAG)}
    with torch.no_grad():
        ref = m(*a)
        fns = {"eager": lambda: m(*a), **{k: (lambda c=c: c(*a)) for k, c in mods.items()}}
        for f in fns.values():
            f()
        times = {k: [] for k in fns}
        for _ in range(7):
            for k, f in fns.items():
                t = time.perf_counter()
                for _ in range(3):
                    f()
                times[k].append((time.perf_counter() - t) / 3 * 1000)
    med = {k: statistics.median(v) for k, v in times.items()}
    err = {k: float((c(*a) - ref).abs().max()) for k, c in mods.items()}
    print(f"{name:20s} threads={threads} eager {med['eager']:.2f} ms  default {med['default']:.2f} ({mods['default'].report.dispatch_count} disp)  "
          f"aggressive {med['aggressive']:.2f} ({mods['aggressive'].report.dispatch_count} disp)  err {err['default']:.1e}/{err['aggressive']:.1e}", flush=True)
