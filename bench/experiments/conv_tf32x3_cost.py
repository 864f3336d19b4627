"""What float32-accurate convolutions (three TF32 products, tf32x3) cost against one TF32 product,
per shape, on the GPU host (issue 35: cuDNN runs some float32 convolutions in float32 even with
TF32 allowed, e.g. the 1x1 stride-2 64 -> 128 at 8x56x56, and braze's TF32 error there is 665x
cuDNN's).

    python bench/experiments/conv_tf32x3_cost.py build DIR [--only a,b]
        (here) compiles Conv2d + BatchNorm2d + ReLU at ResNet-18/50 shapes, batch 8 and 64, twice
        for sm_90: `conv-fp32=tf32` and `conv-fp32=tf32x3`, and saves the artifacts and the
        weights in DIR (the inputs are made on the GPU host: a batch-64 activation is 200 MB).
    python bench/experiments/conv_tf32x3_cost.py run DIR
        (on the GPU host) prints per shape: the arithmetic intensity of the convolution (flops
        over the bytes of its input, weight and output in float32), the precision braze chose in
        each build, the time per call of each build and of eager (cuDNN, TF32 allowed as torch's
        default), and each one's error against float64 on the first image.

The question: below which intensity do three TF32 products cost (nearly) nothing, because the
kernel waits on memory rather than on the tensor cores?
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from braze.accuracy import max_error
from braze.tools.timing import events_per_call_ms

SHAPES = {
    # name: (C, F, kernel, stride, padding, H): Conv2d(C, F) on N x C x H x H
    "r18_3x3_64": (64, 64, 3, 1, 1, 56),
    "r18_3x3s2_128": (128, 256, 3, 2, 1, 28),
    "r18_1x1s2_64": (64, 128, 1, 2, 0, 56),
    "r18_1x1s2_128": (128, 256, 1, 2, 0, 28),
    "r50_1x1_64_64": (64, 64, 1, 1, 0, 56),
    "r50_1x1_64_256": (64, 256, 1, 1, 0, 56),
    "r50_1x1_256_64": (256, 64, 1, 1, 0, 56),
    "r50_1x1_256_128": (256, 128, 1, 1, 0, 56),
    "r50_1x1_128_512": (128, 512, 1, 1, 0, 28),
    "r50_1x1_512_128": (512, 128, 1, 1, 0, 28),
    "r50_1x1s2_256_512": (256, 512, 1, 2, 0, 56),
    "r50_1x1_1024_256": (1024, 256, 1, 1, 0, 14),
    "r50_3x3_128": (128, 128, 3, 1, 1, 28),
    "c3x3_16_64": (16, 64, 3, 1, 1, 56),
    "c3x3_32_64": (32, 64, 3, 1, 1, 56),
}
BATCHES = (8, 64)
VARIANTS = ("tf32", "tf32x3")


def intensity(name: str, n: int) -> float:
    """Flops over the bytes of the input, weight and output (float32)."""
    c, f, k, s, p, h = SHAPES[name]
    o = (h + 2 * p - k) // s + 1
    flops = 2 * n * o * o * f * c * k * k
    return flops / (4 * (n * c * h * h + f * c * k * k + n * f * o * o))


def _model(name: str):
    import torch

    c, f, k, s, p, _ = SHAPES[name]
    torch.manual_seed(sum(map(ord, name)))
    model = torch.nn.Sequential(torch.nn.Conv2d(c, f, k, stride=s, padding=p, bias=False), torch.nn.BatchNorm2d(f),
                                torch.nn.ReLU()).eval()
    with torch.no_grad():
        model[1].running_mean.uniform_(-0.1, 0.1)
        model[1].running_var.uniform_(0.5, 1.5)
    return model


def _input(name: str, n: int, device: str):
    import torch

    c, _, _, _, _, h = SHAPES[name]
    gen = torch.Generator(device).manual_seed(n + sum(map(ord, name)))
    return torch.randn(n, c, h, h, generator=gen, device=device)


def build(out: Path, only: list[str]) -> int:
    import torch

    import braze

    out.mkdir(parents=True, exist_ok=True)
    for name in SHAPES:
        if only and name not in only:
            continue
        model = _model(name)
        torch.save(model.state_dict(), out / f"{name}.pt")
        for n in BATCHES:
            x = _input(name, n, "cpu")
            for v in VARIANTS:
                t0 = time.perf_counter()
                compiled = braze.compile(model, x, device="cuda", target="sm_90",
                                         pipeline=f"fusion-cuda-pipeline{{target=sm_90 conv-fp32={v}}}")
                kernels = [k["kernel"] for k in compiled.report.kernels if k["generated"]]
                compiled.save(out / f"{name}.{n}.{v}.braze", overwrite=True)
                (out / f"{name}.{n}.{v}.txt").write_text("\n".join(kernels))
                print(f"{name:20s} {n:3d} {v:7s} {time.perf_counter() - t0:5.1f} s  {kernels}", flush=True)
    return 0


def run(folder: Path) -> int:
    import torch

    import braze

    rows = []
    print(f"{'shape':20s} {'N':>3s} {'flop/B':>6s} {'us tf32':>8s} {'us x3':>8s} {'x3/tf32':>7s} {'us eager':>8s} "
          f"{'err tf32':>9s} {'err x3':>9s} {'err eager':>9s}")
    for name in SHAPES:
        if not (folder / f"{name}.pt").exists():
            continue
        model = _model(name)
        model.load_state_dict(torch.load(folder / f"{name}.pt"))
        model = model.cuda()
        wide = _model(name)
        wide.load_state_dict(torch.load(folder / f"{name}.pt"))
        wide = wide.double().cuda()
        for n in BATCHES:
            if not (folder / f"{name}.{n}.tf32.braze").exists():
                continue
            x = _input(name, n, "cuda")
            with torch.no_grad():
                ref = wide(x[:1].double())
                eager = model(x)
            scale = ref.abs().max().item()
            mods = {v: braze.load(folder / f"{name}.{n}.{v}.braze", device="cuda") for v in VARIANTS}
            errs = {v: max_error(m(x)[:1].double(), ref, floor=0.0) * scale for v, m in mods.items()}
            errs["eager"] = max_error(eager[:1].double(), ref, floor=0.0) * scale
            calls = 200 if n == 8 else 50
            us = {v: events_per_call_ms(lambda m=m: m(x), calls) * 1000 for v, m in mods.items()}
            with torch.no_grad():
                us["eager"] = events_per_call_ms(lambda: model(x), calls) * 1000
            ai = intensity(name, n)
            rows.append({"shape": name, "n": n, "intensity": ai, "us": us, "errors": errs,
                         "precision": {v: (folder / f"{name}.{n}.{v}.txt").read_text() for v in VARIANTS}})
            print(f"{name:20s} {n:3d} {ai:6.1f} {us['tf32']:8.1f} {us['tf32x3']:8.1f} {us['tf32x3'] / us['tf32']:7.2f} "
                  f"{us['eager']:8.1f} {errs['tf32']:9.2e} {errs['tf32x3']:9.2e} {errs['eager']:9.2e}", flush=True)
    print(json.dumps(rows))
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build")
    b.add_argument("dir", type=Path)
    b.add_argument("--only", default="")
    r = sub.add_parser("run")
    r.add_argument("dir", type=Path)
    args = p.parse_args(argv)
    if args.cmd == "build":
        return build(args.dir, [s for s in args.only.split(",") if s])
    return run(args.dir)


if __name__ == "__main__":
    sys.exit(main())
