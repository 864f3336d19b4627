"""Per-dispatch kernel times of one bench workload under braze, and torch eager's, read with ncu.

    python bench/experiments/layer_kernels.py build DIR [WORKLOAD...]   # here: DIR/WORKLOAD.braze
    ncu --clock-control none --metrics gpu__time_duration.sum --csv \\
        python bench/experiments/layer_kernels.py run DIR/WORKLOAD.braze WORKLOAD > k.csv   # GPU host
    python bench/experiments/layer_kernels.py table k.csv

`run` makes one braze call and one eager call, after a `braze:`/`eager:` marker kernel each
(a 1-element torch fill), so `table` can say which kernels belong to which.
"""

import os
import sys

from braze.tools.timing import ncu_kernels

LAYERS = ("transformer_encoder", "bert_layer", "transformer_encoder_bf16", "bert_layer_bf16")


def build(out: str, names: list[str]) -> None:
    import braze
    from braze.testing.zoo import WORKLOADS

    os.makedirs(out, exist_ok=True)
    for name in names or LAYERS:
        model, args = WORKLOADS[name].build("cuda")
        braze.compile(model, *args, device="cuda", target="sm_90").save(os.path.join(out, f"{name}.braze"),
                                                                       overwrite=True)


def run(path: str, name: str) -> None:
    import torch

    import braze
    from braze.testing.zoo import WORKLOADS

    model, args = WORKLOADS[name].build("cuda")
    model, args = model.cuda(), [a.cuda() for a in args]
    module = braze.load(path, device="cuda")
    marker = torch.empty(1, device="cuda")  # empty: no kernel of its own
    with torch.no_grad():
        marker.fill_(1.0)  # kernel boundary: braze's kernels follow
        torch.cuda.synchronize()
        module(*args)
        torch.cuda.synchronize()
        marker.fill_(2.0)  # eager's follow
        model(*args)
        torch.cuda.synchronize()


def table(path: str) -> None:
    part, totals = None, {}
    for name, us in ncu_kernels(path):
        if "FillFunctor" in name and us < 5 and part in (None, "braze"):
            part = "braze" if part is None else "eager"
            print(f"-- {part}")
            continue
        if part is None:
            continue
        totals[part] = totals.get(part, 0.0) + us
        print(f"{us:9.1f} us  {name[:110]}")
    print("   ".join(f"{k}: {v:.1f} us of kernels" for k, v in totals.items()))


if __name__ == "__main__":
    if len(sys.argv) < 3 or sys.argv[1] not in ("build", "run", "table"):
        sys.exit(__doc__)
    if sys.argv[1] == "build":
        build(sys.argv[2], sys.argv[3:])
    elif sys.argv[1] == "run":
        run(sys.argv[2], sys.argv[3])
    else:
        table(sys.argv[2])
