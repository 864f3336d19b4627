"""CPU: fusion-expand-erf (erf as one rational function) against IREE's own erf, beside eager,
on the bench workloads that have a GELU; interleaved medians (braze.tools.timing.interleaved_ms)
in one process (bench/NOTES.md §31). `iree-mulf` is IREE's erf with only GELU's x/sqrt(2)
made x*(1/sqrt 2) (`fusion-expand-erf{rational=false}`).

    python bench/experiments/cpu_erf.py [THREADS] [WORKLOAD ...]   (default 1 thread; torch's and IREE's)
"""

import sys
import warnings

import iree.runtime as rt
import torch

import braze
from braze.tools.timing import interleaved_ms
from braze.testing.zoo import WORKLOADS

warnings.filterwarnings("ignore")
threads = int(sys.argv[1]) if len(sys.argv) > 1 else 1
torch.set_num_threads(threads)
rt.flags.parse_flags(f"--task_topology_group_count={threads}")
MULF = "fusion-conv-to-matmul,fusion-default-pipeline,fusion-expand-erf{rational=false},fusion-cpu-codegen"
PIPELINES = {"iree": "fusion-cpu-pipeline{erf=iree}", "iree-mulf": MULF, "rational": "fusion-cpu-pipeline{erf=rational}"}
for name in sys.argv[2:] or ["layernorm_gelu", "gelu_mlp", "transformer_encoder", "bert_layer"]:
    m, a = WORKLOADS[name].build("cpu")
    mods = {k: braze.compile(m, *a, cache=False, pipeline=p) for k, p in PIPELINES.items()}
    with torch.no_grad():
        want = m.double()(*[t.double() for t in a])
        m.float()
        fns = {"eager": lambda: m(*a), **{k: (lambda c=c: c(*a)) for k, c in mods.items()}}
        med = interleaved_ms(fns, rounds=9, pace="eager")
        err = {k: float((f().double() - want).abs().max()) for k, f in fns.items()}
    print(f"{name:20s} threads={threads}  " + "  ".join(f"{k} {med[k]:.2f} ms (err {err[k]:.1e})" for k in fns)
          + f"  rational vs iree {med['iree'] / med['rational']:.2f}x, vs eager {med['eager'] / med['rational']:.2f}x",
          flush=True)
