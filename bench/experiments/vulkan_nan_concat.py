"""§54: where does a NaN go on Vulkan in fusion-fold-concat's generic? ThreePieces (test_fold_concat)
with a NaN in x, compiled for Vulkan with braze's pipeline and without fusion (fusion=False),
against eager: the NaN and infinity positions of each.

    python bench/experiments/vulkan_nan_concat.py build DIR   # here
    python bench/experiments/vulkan_nan_concat.py run DIR     # GPU host
"""
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "test", "python"))


def _case():
    from test_fold_concat import ThreePieces, _with_odd_values

    torch.manual_seed(3)
    return ThreePieces().eval(), (_with_odd_values(torch.randn(3, 16, 5)), torch.randn(3, 16, 5), torch.randn(5))


def main(mode: str, out: str) -> None:
    import braze

    model, args = _case()
    if mode == "build":
        os.makedirs(out, exist_ok=True)
        for label, options in (("fused", {}), ("unfused", {"fusion": False})):
            m = braze.compile(model, *args, device="vulkan", target="ampere", cache=False, **options)
            m.save(os.path.join(out, f"{label}.braze"), overwrite=True)
            print(label, m.report.dispatch_count, "dispatches", [d for d in m.report.decisions if "concat" in d])
        return
    with torch.no_grad():
        want = model(*args)
    print("eager: NaN at", torch.isnan(want).nonzero().tolist(), "inf at", torch.isinf(want).nonzero().tolist())
    for label in ("fused", "unfused"):
        got = braze.load(os.path.join(out, f"{label}.braze"), device="vulkan")(*args)
        print(f"{label}: NaN at", torch.isnan(got).nonzero().tolist(), "inf at", torch.isinf(got).nonzero().tolist(),
              "max |diff| where finite", float((got - want)[torch.isfinite(want)].abs().max()))
        odd = ~torch.isfinite(want)
        print(f"   values where eager is not finite: {got[odd].tolist()}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
