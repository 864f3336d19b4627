"""How the calling thread waits for IREE's CPU workers (bench/NOTES.md §41): braze's CPU calls
as iree.runtime leaves the caller (BRAZE_CPU_WAIT=normal), with the caller SCHED_BATCH during the
call (batch), and as each program measured faster on its first calls (auto, braze's default; the
way it chose is printed), beside eager, interleaved in one process:

    python bench/experiments/cpu_wait_policy.py THREADS [WORKLOAD,...]

THREADS sets torch's intra-op threads and IREE's local-task workers alike. Each result is
checked against eager (relative error printed).
"""

import os
import sys
import warnings

import iree.runtime as rt
import torch

import braze
from braze.tools.timing import interleaved_ms
from braze.zoo import WORKLOADS

warnings.filterwarnings("ignore")
threads = int(sys.argv[1])
names = sys.argv[2].split(",") if len(sys.argv) > 2 else ["layernorm_gelu", "attention", "gelu_mlp",
                                                          "transformer_encoder", "conv_bn_relu"]
torch.set_num_threads(threads)
rt.flags.parse_flags(f"--task_topology_group_count={threads}")

for name in names:
    model, args = WORKLOADS[name].build("cpu")
    modules = {}
    for policy in ("normal", "batch", "auto"):
        os.environ["BRAZE_CPU_WAIT"] = policy  # read when the module is loaded
        modules[policy] = braze.compile(model, *args)
    os.environ.pop("BRAZE_CPU_WAIT")
    with torch.no_grad():
        ref = model(*args)
        fns = {"eager": lambda: model(*args),
               **{f"braze {k}": (lambda c=c: c(*args)) for k, c in modules.items()}}
        times = interleaved_ms(fns, rounds=15, pace="eager")
        errs = {k: float((c(*args) - ref).abs().max() / ref.abs().max()) for k, c in modules.items()}
    eager = times["eager"]
    print(f"{name:20s} threads={threads} eager {eager:.3f} ms | "
          + " | ".join(f"braze {k} {times['braze ' + k]:.3f} ms {eager / times['braze ' + k]:.2f}x eager "
                       f"(err {errs[k]:.1e})" for k in modules)
          + f" | auto chose {modules['auto'].program.wait_policy}", flush=True)
