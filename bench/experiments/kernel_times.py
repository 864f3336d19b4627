"""Kernel times behind bench/NOTES.md, read with ncu on the GPU host.

    python bench/experiments/kernel_times.py build DIR    # here (compiler installed)
    ncu --clock-control none --metrics gpu__time_duration.sum --csv \\
        python bench/experiments/kernel_times.py run DIR > kernels.csv     # GPU host
    python bench/experiments/kernel_times.py table kernels.csv

Runs, three calls each: the 16M-element float32 chain as sm_80 PTX and as sm_90 PTX (IREE's
default configuration), the same chain with braze's kernel configuration, and
TransformerEncoderLayer(768, 12, 3072) at 8x128 without and with braze's passes, then in torch eager.
"""

import os
import sys

from braze.tools.timing import ncu_kernels


def build(out: str) -> None:
    import braze
    from braze.testing.zoo import WORKLOADS

    os.makedirs(out, exist_ok=True)
    chain, (x,) = WORKLOADS["elementwise_chain"].build("cuda")
    for arch in ("sm_80", "sm_90"):
        braze.compile(chain, x, device="cuda", target=arch, fusion=False).save(
            os.path.join(out, f"chain-default-{arch}.braze"), overwrite=True)
    braze.compile(chain, x, device="cuda", target="sm_90").save(
        os.path.join(out, "chain-braze-sm_90.braze"), overwrite=True)
    model, args = WORKLOADS["transformer_encoder"].build("cuda")
    for name, fusion in (("transformer-iree", False), ("transformer-braze", True)):
        braze.compile(model, *args, device="cuda", target="sm_90", fusion=fusion).save(
            os.path.join(out, f"{name}.braze"), overwrite=True)


def run(out: str) -> None:
    import torch

    import braze
    from braze.testing.zoo import WORKLOADS

    x = torch.randn(4096, 4096, device="cuda")
    for name in ("chain-default-sm_80", "chain-default-sm_90", "chain-braze-sm_90"):
        module = braze.load(os.path.join(out, f"{name}.braze"), device="cuda")
        for _ in range(3):
            module(x)
    model, args = WORKLOADS["transformer_encoder"].build("cuda")
    model, args = model.cuda(), [a.cuda() for a in args]
    for name in ("transformer-iree", "transformer-braze"):
        module = braze.load(os.path.join(out, f"{name}.braze"), device="cuda")
        for _ in range(3):
            module(*args)
    with torch.no_grad():
        for _ in range(3):
            model(*args)
    torch.cuda.synchronize()


def table(path: str) -> None:
    for name, us in ncu_kernels(path):
        print(f"{us:9.1f} us  {name[:90]}")


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("build", "run", "table"):
        sys.exit(__doc__)
    {"build": build, "run": run, "table": table}[sys.argv[1]](sys.argv[2])
