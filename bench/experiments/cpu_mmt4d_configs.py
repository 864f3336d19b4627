"""IREE's float32 mmt4d lowering configurations for one matmul, side by side with eager on this
host (bench/NOTES.md §57, issue 41): each variant replaces braze.compiler.cpu_tiles.configure_mmt4d
with one fixed lowering_config, so register tiles, workgroups and cache tiling can be tried on
exactly the dispatch they change.

    python bench/experiments/cpu_mmt4d_configs.py SHAPES VARIANTS [NAME=DN,VN,VM[,KB[,DM]]]...

SHAPES: MxNxK (x @ W.T, a Linear: the activation is IREE's LHS) or wMxNxK (W @ x, the weight as
the LHS, as ResNet's convolutions come out), comma-separated. VARIANTS: names from V below or
defined on the command line: DN weight panels and DM row tiles per workgroup (DM 0: up to 8),
a VM x (16 * VN) register tile, KB > 0 a cache_reduction tile for K (IREE 3.13 ignores it: the
assembly is the same). ROUNDS (env) interleaved rounds of 10 calls, median; DUMP=1 dumps each
variant's executables to /tmp/fma/dump-NAME.
"""
import os
import sys

import torch
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cpu_tiles_ab
from cpu_tiles_ab import side_by_side
torch.set_num_threads(1)
import braze
braze.set_cpu_threads(1)
from braze.compiler import cpu_tiles as ct
from braze.compiler._iree_compiler import iree_ir
from braze.irutil import all_ops

def make(template, codegen=True):
    def configure(module_op, mode="auto"):
        out = []
        for variant in all_ops(module_op, "hal.executable.variant"):
            text = str(variant.attributes["target"])
            if '"llvm-cpu"' not in text:
                continue
            nouk = iree_ir.Attribute.parse(text.replace('ukernels = "all"', 'ukernels = "none"')) if codegen else None
            for func in all_ops(variant, "func.func"):
                for op in all_ops(func, "linalg.mmt4d"):
                    lhs, rhs, _ = (iree_ir.RankedTensorType(v.type) for v in list(op.operands)[:3])
                    if list(lhs.shape[2:]) != [16, 1] or list(rhs.shape[2:]) != [16, 1]:
                        continue
                    m1, k1 = lhs.shape[0], lhs.shape[1]
                    s = template.format(m1=min(m1, 8), k1=k1)
                    op.attributes["lowering_config"] = iree_ir.Attribute.parse(s)
                    out.append(s)
                    if nouk is not None:
                        func.attributes["hal.executable.target"] = nouk
        print(out)
        return out
    return configure

def cfg(dn, vn, vm, kb=0, dm=0, cg=True, cp=None):
    M = dm or "{m1}"
    cache = f"cache_parallel = [{M}, {cp or dn}, 0, 0, 0, 0], cache_reduction = [0, 0, {kb}, 0, 0, 0], " if kb else ""
    return (f"#iree_cpu.lowering_config<distribution = [{M}, {dn}, 0, 0, 0, 0], {cache}vector_common_parallel = [1, {vn}, 0, {vm}, 16, 0], vector_reduction = [0, 0, 1, 0, 0, 1]>", cg)

V = {  # the variants named in §57: cur (16x32, braze's Intel tile before §57), 8-row tiles, K tiles, the microkernel
    "cur": cfg(2, 2, 16), "r8x32": cfg(2, 2, 8), "r16x16": cfg(2, 1, 16), "kb128": cfg(2, 2, 16, 128),
    "kb128r8": cfg(2, 2, 8, 128), "uk": cfg(1, 1, 16, cg=False), "ukkb128": cfg(1, 1, 16, 128, cg=False),
}
for spec in sys.argv[3:]:
    # name=dn,vn,vm[,kb[,dm]]
    name, vals = spec.split("=")
    p = [int(v) for v in vals.split(",")]
    V[name] = cfg(*p)
DUMP = os.environ.get("DUMP")
cpu_tiles_ab.ROUNDS = int(os.environ.get("ROUNDS", 15))
class WX(torch.nn.Module):
    def __init__(self, m, k):
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(m, k) / k ** 0.5)
    def forward(self, x):
        return self.w @ x
shapes = [s for s in sys.argv[1].split(",")]
names = sys.argv[2].split(",")
for shape in shapes:
    torch.manual_seed(0)
    if shape.startswith("w"):
        m, n, k = map(int, shape[1:].split("x"))
        lin = WX(m, k).eval()
        x = torch.randn(k, n)
    else:
        m, n, k = map(int, shape.split("x"))
        lin = torch.nn.Linear(k, n, bias=False).eval()
        x = torch.randn(m, k)
    mods = {}
    for v in names:
        t, cg = V[v]
        ct.configure_mmt4d = make(t, cg)
        try:
            mods[v] = braze.compile(lin, x, device="cpu", cache=False, iree_flags=[f"--iree-hal-dump-executable-files-to=/tmp/fma/dump-{v}"] if DUMP else [])
        except Exception as e:
            print(v, "failed:", str(e)[:300])
    side_by_side(shape, lin, (x,), mods)
