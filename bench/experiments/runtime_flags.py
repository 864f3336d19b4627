"""IREE runtime flags against per-call time on CUDA (bench/NOTES.md §8).

    python bench/experiments/runtime_flags.py build DIR   # here
    python bench/experiments/runtime_flags.py run DIR     # GPU host; one process per flag set
"""

import os
import subprocess
import sys

from braze.tools.timing import per_call_ms

FLAG_SETS = [[], ["--cuda_use_streams=true"], ["--cuda_use_streams=true", "--cuda_allow_inline_execution=true"],
             ["--cuda_async_allocations=false"]]
"""braze's defaults ([]: CUDA graphs) against IREE's flag defaults (streams) and variations."""
LAYERS = ("transformer_encoder", "bert_layer")


def build(out: str) -> None:
    import torch

    import braze
    from braze.testing.zoo import WORKLOADS

    os.makedirs(out, exist_ok=True)
    for name in LAYERS:
        model, args = WORKLOADS[name].build("cuda")
        braze.compile(model, *args, device="cuda", target="sm_90").save(os.path.join(out, f"{name}.braze"), overwrite=True)

    class Chain(torch.nn.Module):
        def forward(self, x):
            return torch.sigmoid(torch.relu(x * 2 + 1)) * x - 0.5

    braze.compile(Chain(), torch.randn(1024), device="cuda", target="sm_90").save(
        os.path.join(out, "chain1k.braze"), overwrite=True)


def child(out: str) -> None:
    import torch

    import braze
    from braze.testing.zoo import WORKLOADS

    parts = []
    for name in LAYERS:
        _, args = WORKLOADS[name].build("cuda")
        args = [a.cuda() for a in args]
        module = braze.load(os.path.join(out, f"{name}.braze"), device="cuda")
        parts.append(f"{name} {per_call_ms(lambda: module(*args), 100):.3f} ms")
    x = torch.randn(1024, device="cuda")
    module = braze.load(os.path.join(out, "chain1k.braze"), device="cuda")
    parts.append(f"chain1k {per_call_ms(lambda: module(x), 500) * 1000:.1f} us")
    print(" | ".join(parts))


def run(out: str) -> None:
    for flags in FLAG_SETS:
        env = dict(os.environ, BRAZE_IREE_RUNTIME_FLAGS=" ".join(flags))
        r = subprocess.run([sys.executable, __file__, "child", out], capture_output=True, text=True, env=env)
        print(f"{' '.join(flags) or '(defaults)':70s} {r.stdout.strip() or r.stderr.strip()[-300:]}", flush=True)


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("build", "run", "child"):
        sys.exit(__doc__)
    {"build": build, "run": run, "child": child}[sys.argv[1]](sys.argv[2])
