"""LayerNorm + GELU on the CPU with each row sum written as 16 partial sums (a parallel dimension
IREE could vectorize) against braze's default and eager, one thread (bench/NOTES.md §36).

    python bench/experiments/cpu_layernorm_partial_sums.py
"""
import statistics, time, warnings, sys
warnings.filterwarnings("ignore")
import torch, torch.nn.functional as F
import iree.runtime as rt
import braze
torch.set_num_threads(1); rt.flags.parse_flags("--task_topology_group_count=1")

class LNG(torch.nn.Module):
    def __init__(s, d): super().__init__(); s.norm = torch.nn.LayerNorm(d)
    def forward(s, x, r): return F.gelu(s.norm(x + r))

class LNGPartial(torch.nn.Module):
    """The same, with each row sum written as 16 partial sums and their sum."""
    def __init__(s, d): super().__init__(); s.norm = torch.nn.LayerNorm(d)
    def forward(s, x, r):
        h = x + r
        d = h.shape[-1]
        mean = h.view(*h.shape[:-1], d // 16, 16).sum(-2).sum(-1, keepdim=True) / d
        c = h - mean
        var = (c * c).view(*h.shape[:-1], d // 16, 16).sum(-2).sum(-1, keepdim=True) / d
        return F.gelu(c * torch.rsqrt(var + s.norm.eps) * s.norm.weight + s.norm.bias)

torch.manual_seed(0)
a = LNG(768).eval(); b = LNGPartial(768).eval(); b.load_state_dict(a.state_dict())
with torch.no_grad():
    a.norm.weight.normal_(); a.norm.bias.normal_(); b.load_state_dict(a.state_dict())
x, r = torch.randn(8, 512, 768), torch.randn(8, 512, 768)
ca = braze.compile(a, x, r, cache=False); cb = braze.compile(b, x, r, cache=False)
ref = a.double()(x.double(), r.double()); a.float()
fns = {"eager": lambda: a(x, r), "braze": lambda: ca(x, r), "braze-partial": lambda: cb(x, r)}
with torch.no_grad():
    for f in fns.values(): f()
    t = {k: [] for k in fns}
    for _ in range(7):
        for k, f in fns.items():
            s0 = time.perf_counter()
            for _ in range(10): f()
            t[k].append((time.perf_counter() - s0) / 10 * 1000)
    for k in fns:
        err = ((fns[k]().double() - ref).abs().max() / ref.abs().max()).item()
        print(f"{k:14s} {statistics.median(t[k]):.3f} ms  rel err {err:.1e}")
print("dispatches", ca.report.dispatch_count, cb.report.dispatch_count)
