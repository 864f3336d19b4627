"""braze.compile default against fusion-cpu-pipeline{data-tiling=on} beside eager, on this host (bench/NOTES.md §56):
7 interleaved rounds of 10 calls, median ms, error against eager (cpu_tiles_ab.side_by_side).

    python bench/experiments/cpu_data_tiling_ab.py THREADS [WORKLOADS]   (default: attention)
"""
import sys

import torch

from cpu_tiles_ab import side_by_side

th = int(sys.argv[1]) if len(sys.argv) > 1 else 1
torch.set_num_threads(th)
import braze  # noqa: E402

braze.set_cpu_threads(th)
from braze.testing.zoo import WORKLOADS  # noqa: E402

variants = {"default": {}, "tiling-on": {"pipeline": "fusion-cpu-pipeline{data-tiling=on}"}}
for name in sys.argv[2].split(",") if len(sys.argv) > 2 else ["attention"]:
    model, inputs = WORKLOADS[name].build("cpu")
    mods = {v: braze.compile(model, *inputs, device="cpu", cache=False, **o) for v, o in variants.items()}
    side_by_side(name, model, inputs, mods, dispatches=True)
