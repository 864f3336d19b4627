"""CPU: what IREE's llvm-cpu path offers for convolutions and matmuls, against eager, on the
bench's contraction workloads (issue 19). Each variant is braze.compile with extra iree-compile
flags (or a braze pipeline); median of 7 interleaved blocks of calls, one process.

    python bench/experiments/cpu_contractions.py THREADS WORKLOAD[,WORKLOAD] [VARIANT,...]

THREADS sets torch's intra-op threads and IREE's local-task workers alike.
"""

import statistics
import sys
import time
import warnings

import iree.runtime as rt
import torch

import braze
from braze.testing.zoo import WORKLOADS

warnings.filterwarnings("ignore")
threads = int(sys.argv[1])
names = sys.argv[2].split(",")
torch.set_num_threads(threads)
rt.flags.parse_flags(f"--task_topology_group_count={threads}")

UK = "--iree-llvmcpu-enable-ukernels=all"
IM2COL = "--iree-global-opt-use-im2col-for-convs"
DT_CONV = "--iree-dispatch-creation-experimental-set-data-tiling-ops=convolution"
DT = "--iree-opt-data-tiling=true"
NODT = "--iree-opt-data-tiling=false"
VARIANTS = {
    "default": {},
    "ukernels": {"iree_flags": [UK]},
    "im2col": {"iree_flags": [IM2COL]},
    "im2col+uk": {"iree_flags": [IM2COL, UK]},
    "dt-conv": {"iree_flags": [DT, DT_CONV]},
    "dt-conv+uk": {"iree_flags": [DT, DT_CONV, UK]},
    "no-dt": {"iree_flags": [NODT]},
    "dt": {"iree_flags": [DT]},
    "dt+uk": {"iree_flags": [DT, UK]},
    "im2col+dt": {"iree_flags": [IM2COL, DT]},
    "im2col+dt+uk": {"iree_flags": [IM2COL, DT, UK]},
    "braze-im2col+dt+uk": {"pipeline": "fusion-conv-to-matmul{target=sm_80},fusion-default-pipeline",
                           "iree_flags": [DT, UK]},
    "attention-op": {"attention": True},
    "attention-op+dt": {"attention": True, "pipeline": "fusion-cpu-pipeline{data-tiling=on}"},
    "aggressive": {"iree_flags": ["--iree-dispatch-creation-enable-aggressive-fusion=true"]},
    "braze-im2col": {"pipeline": "fusion-conv-to-matmul{target=sm_80},fusion-default-pipeline"},
    "cpu": {"pipeline": "fusion-cpu-pipeline"},
    "cpu-direct": {"pipeline": "fusion-cpu-pipeline{conv=direct}"},
    "cpu-direct-nodt": {"pipeline": "fusion-cpu-pipeline{conv=direct data-tiling=off}"},
    "cpu-im2col-nodt": {"pipeline": "fusion-cpu-pipeline{data-tiling=off}"},
    "cpu-direct-dt": {"pipeline": "fusion-cpu-pipeline{conv=direct data-tiling=on}"},
    "no-fusion": {"fusion": False},
    "reassoc": {"iree_flags": ["--iree-llvmcpu-reassociate-fp-reductions=true"]},
    "no-reassoc": {"pipeline": "fusion-cpu-pipeline{reassociate=off}"},
    "cpu-dt-nouk": {"pipeline": "fusion-cpu-pipeline{data-tiling=off}", "iree_flags": [DT]},
    "cpu-dt-tile64k": {"iree_flags": ["--iree-llvmcpu-matmul-tile-bytes=65536"]},
    "cpu-dt-tile1m": {"iree_flags": ["--iree-llvmcpu-matmul-tile-bytes=1048576"]},
    "braze-im2col+uk": {"pipeline": "fusion-conv-to-matmul{target=sm_80},fusion-default-pipeline", "iree_flags": [UK]},
}
chosen = sys.argv[3].split(",") if len(sys.argv) > 3 else list(VARIANTS)

for name in names:
    m, a = WORKLOADS[name].build("cpu")
    mods = {}
    for v in chosen:
        t = time.perf_counter()
        try:
            mods[v] = braze.compile(m, *a, cache=False, **VARIANTS[v])
        except Exception as e:  # a variant IREE cannot compile is a result too
            print(f"{name:20s} {v:16s} failed: {type(e).__name__}: {str(e).splitlines()[0][:160]}", flush=True)
            continue
        mods[v].compile_s = time.perf_counter() - t
    with torch.no_grad():
        ref = m(*a)
        fns = {"eager": lambda: m(*a), **{k: (lambda c=c: c(*a)) for k, c in mods.items()}}
        t = time.perf_counter()
        fns["eager"]()
        reps = max(1, int(0.05 / max(time.perf_counter() - t, 1e-6)))
        for f in fns.values():
            f()
        times = {k: [] for k in fns}
        for _ in range(7):
            for k, f in fns.items():
                t = time.perf_counter()
                for _ in range(reps):
                    f()
                times[k].append((time.perf_counter() - t) / reps * 1000)
    med = {k: statistics.median(v) for k, v in times.items()}
    print(f"{name:20s} threads={threads} eager {med['eager']:.3f} ms", flush=True)
    for k, c in mods.items():
        err = float(((c(*a) - ref).abs().max() / ref.abs().max()))
        print(f"{name:20s} {k:16s} {med[k]:8.3f} ms  {med['eager'] / med[k]:5.2f}x eager  "
              f"{c.report.dispatch_count:3d} disp  rel err {err:.1e}  compile {c.compile_s:.1f} s", flush=True)
