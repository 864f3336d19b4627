"""Which op of the bf16 MobileNet is wrong on CUDA: each op alone, in bfloat16 (one in float16), compiled for
CUDA without braze's passes (fusion=False) and with them, against eager in float64.

    python bench/repro/bf16_ops.py build DIR      (here)
    python bench/repro/bf16_ops.py run DIR        (on the GPU host)
"""

import json
import sys
from pathlib import Path

import torch
from torch import nn


def cases():
    torch.manual_seed(0)
    bn = nn.BatchNorm2d(96).eval()
    with torch.no_grad():
        bn.running_mean.uniform_(-0.3, 0.3)
        bn.running_var.uniform_(0.5, 1.5)
    return {
        "depthwise3x3": (nn.Conv2d(96, 96, 3, 1, 1, groups=96, bias=False), (2, 96, 16, 16)),
        "depthwise3x3_stride2": (nn.Conv2d(96, 96, 3, 2, 1, groups=96, bias=False), (2, 96, 16, 16)),
        "pointwise": (nn.Conv2d(16, 96, 1, bias=False), (2, 16, 16, 16)),
        "pointwise_64to64": (nn.Conv2d(64, 64, 1, bias=False), (1, 64, 8, 8)),
        "pointwise_stride2": (nn.Conv2d(32, 64, 1, 2, bias=False), (2, 32, 16, 16)),
        "pointwise_f16": (nn.Conv2d(16, 96, 1, bias=False), (2, 16, 16, 16), torch.float16),
        "einsum_nkm_fk": (Einsum(96, 16), (2, 16, 256)),
        "mm_96x16x512": (MatmulLeft(96, 16), (16, 512)),
        "stem3x3_stride2": (nn.Conv2d(3, 16, 3, 2, 1, bias=False), (2, 3, 32, 32)),
        "batchnorm": (bn, (2, 96, 16, 16)),
        "relu6": (nn.ReLU6(), (2, 96, 16, 16)),
        "mean_hw": (MeanHW(), (2, 32, 4, 4)),
        "linear": (nn.Linear(32, 10), (2, 32)),
    }


class Einsum(nn.Module):
    """IREE's own form of a 1x1 convolution, written by a user: out[n,f,m] = sum_k x[n,k,m] w[f,k]."""

    def __init__(self, f, k):
        super().__init__()
        self.w = nn.Parameter(torch.randn(f, k) / k ** 0.5)

    def forward(self, x):
        return torch.einsum("nkm,fk->nfm", x, self.w)


class MatmulLeft(nn.Module):
    """braze's form of it: the weight on the left of an ordinary matmul."""

    def __init__(self, f, k):
        super().__init__()
        self.w = nn.Parameter(torch.randn(f, k) / k ** 0.5)

    def forward(self, x):
        return self.w @ x


class MeanHW(nn.Module):
    def forward(self, x):
        return x.mean((2, 3))


def build(directory: Path) -> int:
    import braze

    directory.mkdir(parents=True, exist_ok=True)
    meta = {}
    for name, (model, shape, *dtype) in cases().items():
        dtype = dtype[0] if dtype else torch.bfloat16
        model = model.eval()
        x = torch.randn(shape)
        with torch.no_grad():
            ref = model.double()(x.to(dtype).double())
            model = model.float().to(dtype)
            eager = model(x.to(dtype))
        torch.save({"x": x.to(dtype), "ref": ref, "eager": eager}, directory / f"{name}.pt")
        for variant, options in (("unfused", {"fusion": False}), ("braze", {})):
            braze.compile(model, x.to(dtype), device="cuda", target="sm_90", **options).save(
                directory / f"{name}.{variant}.braze", overwrite=True)
        meta[name] = list(shape)
        print("built", name, flush=True)
    (directory / "cases.json").write_text(json.dumps(meta))
    return 0


def run(directory: Path) -> int:
    import braze
    from braze.accuracy import max_error as err

    for name in json.loads((directory / "cases.json").read_text()):
        data = torch.load(directory / f"{name}.pt")
        row = [f"{name:22s} eager {err(data['eager'], data['ref']):.1e}"]
        for variant in ("unfused", "braze"):
            for runtime in ("iree", "launch"):
                path = directory / f"{name}.{variant}.braze"
                if runtime == "launch" and braze.load(path, runtime="iree").report.launch_plan.startswith("none"):
                    row.append(f"{variant}/{runtime} (no plan)")
                    continue
                module = braze.load(path, runtime=runtime)
                row.append(f"{variant}/{runtime} {err(module(data['x'].cuda()), data['ref']):.1e}")
        print("  ".join(row), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(build(Path(sys.argv[2])) if sys.argv[1] == "build" else run(Path(sys.argv[2])))
