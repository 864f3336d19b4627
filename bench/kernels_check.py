"""Generated GEMM kernels on a GPU host: correctness and speed against IREE's own matmul and torch.

    python bench/kernels_check.py build DIR [--only a,b]
        (here, with the compiler and Triton) compiles each case twice for sm_90, with braze's
        generated kernels (the default) and without (fusion-cuda-pipeline{kernels=off}: IREE's
        own matmul), and saves the artifacts, the inputs and the float64 reference in DIR.
    python bench/kernels_check.py run DIR
        (on the GPU host: iree-base-runtime, torch) runs both artifacts and the same model in
        torch eager (cuBLAS, then torch's own epilogue kernels) and prints, per case, the error of
        each against float64 (the first ROWS rows) and the time per call (CUDA events, median of 5 runs of N calls), and
        the ratios. Exits 1 if a generated kernel's error exceeds 4x eager's own plus one ulp (10x for float32,
computed as 3xTF32 against cuBLAS's float32).

Cases are Linear layers (y = act(x W^T + b)) at the shapes of the bench's layers, a plain
GEMM, and ragged shapes that no tile divides.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

CASES = {
    # name: (dtype, M, K, N, bias, activation)
    "gemm_4096x4096x1024": ("bfloat16", 4096, 1024, 4096, False, None),
    "gemm_4096x4096x1024_f16": ("float16", 4096, 1024, 4096, False, None),
    "ffn_up_1024x3072x768_gelu": ("bfloat16", 1024, 768, 3072, True, "gelu"),
    "ffn_down_1024x768x3072": ("bfloat16", 1024, 3072, 768, True, None),
    "qkv_1024x2304x768": ("bfloat16", 1024, 768, 2304, True, None),
    "mlp_up_256x4096x1024_gelu": ("bfloat16", 256, 1024, 4096, True, "gelu"),
    "ragged_77x131x200_relu": ("bfloat16", 77, 200, 131, True, "relu"),
    "ragged_77x131x200_f16": ("float16", 77, 200, 131, True, "gelu"),
    "gemm_4096x4096x1024_f32": ("float32", 4096, 1024, 4096, False, None),
    "ffn_up_1024x3072x768_gelu_f32": ("float32", 1024, 768, 3072, True, "gelu"),
    "ffn_down_1024x768x3072_f32": ("float32", 1024, 3072, 768, True, None),
    "ragged_77x131x200_f32": ("float32", 77, 200, 131, True, "relu"),
}


ROWS = 128
"""Rows of each result checked against float64 (the reference travels to the GPU host)."""


def _model(name: str):
    import torch

    dtype, m, k, n, bias, act = CASES[name]

    class Layer(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = torch.nn.Linear(k, n, bias=bias)

        def forward(self, x):
            y = self.linear(x)
            if act == "gelu":
                y = torch.nn.functional.gelu(y)
            elif act == "relu":
                y = torch.relu(y)
            return y

    torch.manual_seed(sum(map(ord, name)))
    model = Layer().eval()
    with torch.no_grad():  # rows repeat with a prime period: the artifacts compress for the trip
        for p in model.parameters():
            p.copy_(_periodic(p, 61))
    model = model.to(getattr(torch, dtype))
    x = _periodic(torch.randn(m, k), 53).to(getattr(torch, dtype))
    return model, x


def _periodic(t, period: int):
    """`t` with its first `period` rows repeated (a prime: no tile size divides it)."""
    if t.dim() == 1 or t.shape[0] <= period:
        return t.clone()
    reps = -(-t.shape[0] // period)
    return t[:period].repeat(reps, *([1] * (t.dim() - 1)))[: t.shape[0]].clone()


def build(out: Path, only: list[str] | None) -> int:
    import torch

    import braze

    out.mkdir(parents=True, exist_ok=True)
    for name in CASES:
        if only and name not in only:
            continue
        model, x = _model(name)
        with torch.no_grad():
            wide = _double(model)(x.double())
        torch.save({"x": x, "reference": wide[:ROWS].clone()}, out / f"{name}.pt")
        for variant, pipeline in (("kernels", None), ("iree", "fusion-cuda-pipeline{target=sm_90 kernels=off}")):
            t0 = time.perf_counter()
            compiled = braze.compile(model, x, device="cuda", target="sm_90", pipeline=pipeline)
            made = sum(k["generated"] for k in compiled.report.kernels)
            compiled.save(out / f"{name}.{variant}.braze", overwrite=True)
            print(f"{name:28s} {variant:8s} {time.perf_counter() - t0:5.1f} s  dispatches "
                  f"{compiled.report.dispatch_count}  generated {made}", flush=True)
    return 0


def _double(model):
    import copy

    return copy.deepcopy(model).double()


def _time(fn, calls: int) -> float:
    import torch

    for _ in range(5):
        fn()
    torch.cuda.synchronize()
    runs = []
    for _ in range(5):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(calls):
            fn()
        end.record()
        end.synchronize()
        runs.append(start.elapsed_time(end) * 1000 / calls)
    return sorted(runs)[len(runs) // 2]


def run(folder: Path) -> int:
    import torch

    import braze

    rows, bad = [], 0
    print(f"{'case':28s} {'err kernels':>11s} {'err iree':>9s} {'err eager':>9s} {'us kernels':>10s} "
          f"{'us iree':>9s} {'us eager':>9s} {'eager/kern':>10s} {'iree/kern':>9s}")
    for name in CASES:
        data_path = folder / f"{name}.pt"
        if not data_path.exists():
            continue
        data = torch.load(data_path)
        x, ref = data["x"].cuda(), data["reference"]
        model, _ = _model(name)
        model = model.cuda()
        mods = {v: braze.load(folder / f"{name}.{v}.braze", device="cuda") for v in ("kernels", "iree")}
        with torch.no_grad():
            eager_out = model(x)
        errs = {v: (m(x)[:ROWS].double().cpu() - ref).abs().max().item() for v, m in mods.items()}
        errs["eager"] = (eager_out[:ROWS].double().cpu() - ref).abs().max().item()
        step = {torch.bfloat16: 2 ** -7, torch.float16: 2 ** -10, torch.float32: 2 ** -23}[x.dtype]
        # float32 as 3xTF32 drops the smallest of the cross products: a few float32 roundings more
        ok = errs["kernels"] <= (10 if x.dtype == torch.float32 else 4) * errs["eager"] + step * ref.abs().max().item()
        bad += not ok
        flops = 2 * x.shape[0] * model.linear.in_features * model.linear.out_features
        calls = max(10, min(2000, int(2e13 / flops)))
        times = {v: _time(lambda m=m: m(x), calls) for v, m in mods.items()}
        with torch.no_grad():
            times["eager"] = _time(lambda: model(x), calls)
        row = {"case": name, "errors": errs, "us": times, "ok": ok,
               "tflops_kernels": flops / times["kernels"] / 1e6}
        rows.append(row)
        print(f"{name:28s} {errs['kernels']:11.2e} {errs['iree']:9.2e} {errs['eager']:9.2e} "
              f"{times['kernels']:10.1f} {times['iree']:9.1f} {times['eager']:9.1f} "
              f"{times['eager'] / times['kernels']:10.2f} {times['iree'] / times['kernels']:9.2f}"
              f"{'' if ok else '  FAIL'}", flush=True)
    print(json.dumps(rows))
    return 1 if bad else 0


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
