"""IREE's float32 batch_matmul lowering configurations on the CPU, side by side with eager
(bench/NOTES.md §57, issue 41): each variant sets one lowering_config on every linalg.batch_matmul
at IREE's executable-configurations phase (braze's mmt4d hook, installed for every compile).

    T=THREADS ROUNDS=15 python bench/experiments/cpu_batch_matmul_configs.py WORKLOAD[,...] \
        "NAME=DISTRIBUTION;VECTOR_COMMON_PARALLEL;VECTOR_REDUCTION"...

e.g. "b=1,64,64,0;1,8,32,0;0,0,0,1" (an 8x32 register tile in 64x64 workgroups); "default" is
IREE's own configuration.
"""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cpu_tiles_ab
from cpu_tiles_ab import side_by_side
torch.set_num_threads(int(os.environ.get("T", 1)))
import braze
braze.set_cpu_threads(int(os.environ.get("T", 1)))
from braze.compiler import cpu_tiles as ct
from braze.compiler._iree_compiler import iree_ir
from braze.irutil import all_ops
from braze.testing.zoo import WORKLOADS
real = ct.configure_mmt4d
from braze.compiler import backend
_cft = backend.compile_for_target
def cft(*a, **k):
    if k.get("mmt4d_tiles") is None:
        k["mmt4d_tiles"] = "auto"
    return _cft(*a, **k)
backend.compile_for_target = cft

def make(spec):
    def configure(module_op, mode="auto"):
        out = real(module_op, mode)
        if spec is None:
            return out
        for variant in all_ops(module_op, "hal.executable.variant"):
            if '"llvm-cpu"' not in str(variant.attributes["target"]):
                continue
            for func in all_ops(variant, "func.func"):
                for op in all_ops(func, "linalg.batch_matmul"):
                    dist, vcp, vr = spec
                    op.attributes["lowering_config"] = iree_ir.Attribute.parse(
                        f"#iree_cpu.lowering_config<distribution = [{dist}], vector_common_parallel = [{vcp}], vector_reduction = [{vr}]>")
                    out.append(f"bmm {spec}")
        return out
    return configure

V = {"default": None}
for a in sys.argv[2:]:
    name, d, v, r = a.split("=")[0], *a.split("=")[1].split(";")
    V[name] = (d, v, r)
cpu_tiles_ab.ROUNDS = int(os.environ.get("ROUNDS", 15))
for w in sys.argv[1].split(","):
    model, inputs = WORKLOADS[w].build("cpu")
    mods = {}
    for k, spec in V.items():
        ct.configure_mmt4d = make(spec)
        try:
            mods[k] = braze.compile(model, *inputs, device="cpu", cache=False)
        except Exception as e:
            print(k, "failed", str(e)[:200])
    side_by_side(w, model, inputs, mods)
