"""CPU: IREE's aggressive dispatch fusion against the default on the bench's LayerNorm-bearing
workloads and the GELU MLP, braze's CPU pipeline, interleaved medians (braze.tools.timing).

    python bench/experiments/cpu_dispatch_fusion.py [THREADS]   (torch's threads for eager)
"""

import sys
import warnings

import torch

import braze
from braze.tools.timing import interleaved_ms
from braze.testing.zoo import WORKLOADS

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
        med = interleaved_ms(fns, rounds=7, pace="eager")
    err = {k: float((c(*a) - ref).abs().max()) for k, c in mods.items()}
    print(f"{name:20s} threads={threads} eager {med['eager']:.2f} ms  default {med['default']:.2f} ({mods['default'].report.dispatch_count} disp)  "
          f"aggressive {med['aggressive']:.2f} ({mods['aggressive'].report.dispatch_count} disp)  err {err['default']:.1e}/{err['aggressive']:.1e}", flush=True)
