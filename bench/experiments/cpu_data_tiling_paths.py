"""IREE 3.13's two data-tiling paths side by side with eager on this host (bench/NOTES.md §57):
the one `--iree-opt-data-tiling` picks (from dispatch creation, braze's before §57) and the one
from global optimization (`--iree-global-opt-data-tiling`, braze's since), each as
backend.DATA_TILING_FLAGS for braze.compile.

    T=THREADS ROUNDS=11 python bench/experiments/cpu_data_tiling_paths.py WORKLOAD[,...]
"""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cpu_tiles_ab
from cpu_tiles_ab import side_by_side
T = int(os.environ.get("T", 1))
torch.set_num_threads(T)
import braze
braze.set_cpu_threads(T)
from braze.compiler import backend
from braze.testing.zoo import WORKLOADS
cpu_tiles_ab.ROUNDS = int(os.environ.get("ROUNDS", 11))
V = {"dispatch-path": ("--iree-opt-data-tiling=true", "--iree-llvmcpu-enable-ukernels=all"),
     "global-opt-path": ("--iree-opt-data-tiling=false", "--iree-global-opt-data-tiling=true", "--iree-llvmcpu-enable-ukernels=all")}
for w in sys.argv[1].split(","):
    model, inputs = WORKLOADS[w].build("cpu")
    mods = {}
    for k, f in V.items():
        backend.DATA_TILING_FLAGS = f
        mods[k] = braze.compile(model, *inputs, device="cpu", cache=False)
        print(k, mods[k].report.dispatch_count, mods[k].report.cpu_codegen[-90:])
    side_by_side(w, model, inputs, mods)
