"""Dynamic shapes on a GPU (issue 18): a BERT layer (768, seq 128) built once with a dynamic
batch and once static per measured size, built here (no GPU), run on the GPU host.

    python bench/experiments/dynamic_gpu.py build DIR [--target sm_90] [--dtype bfloat16] [--sizes 1,8,64]
    python bench/experiments/dynamic_gpu.py run DIR        (on the GPU host: needs torch + iree-base-runtime)
    python bench/experiments/dynamic_gpu.py profile DIR N  (there: each build's kernels and copies at batch N)

run prints, per batch size, the dynamic and static builds' time per call (CUDA events around N
calls, median of 5 interleaved rounds), eager's, their ratio, and the errors against eager in
float64 (the model's weights come from torch.manual_seed(0), so both hosts build the same ones).
"""

import json
import statistics
import sys
import warnings
from pathlib import Path

import torch

warnings.filterwarnings("ignore")
def model(dtype: str = "float32"):
    from braze.testing.zoo import BertLayer

    torch.manual_seed(0)
    return BertLayer().eval().to(getattr(torch, dtype))


def build(out: Path, target: str, dtype: str, sizes: list[int]):
    import braze

    out.mkdir(parents=True, exist_ok=True)
    m = model(dtype)
    x = lambda n: torch.randn(n, 128, 768, dtype=getattr(torch, dtype))  # noqa: E731
    batch = torch.export.Dim("batch", min=1, max=64)
    dyn = braze.compile(m, x(8), device="cuda", target=target, cache=False, dynamic_shapes=({0: batch},),
                        specialize="none")
    dyn.dynamic.save(out / "dynamic.braze", overwrite=True)
    for n in sizes:
        braze.compile(m, x(n), device="cuda", target=target, cache=False).save(out / f"static-{n}.braze",
                                                                                overwrite=True)
    (out / "meta.json").write_text(json.dumps({"target": target, "dtype": dtype, "sizes": sizes}))
    print(f"built {out}: dynamic ({dyn.dynamic.report.dispatch_count} dispatches) and static {sizes}")


def per_call_ms(fn, reps: int) -> float:
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(reps):
        fn()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / reps


def run(out: Path):
    import braze

    meta = json.loads((out / "meta.json").read_text())
    dev, dtype = "cuda", getattr(torch, meta["dtype"])
    m = model(meta["dtype"]).to(dev)
    ref = model(meta["dtype"]).double().to(dev)
    dyn = braze.load(out / "dynamic.braze")
    probe = torch.randn(1, 128, 768, device=dev, dtype=dtype)
    first = braze.load(out / f"static-{meta['sizes'][0]}.braze")
    print(f"cuda {meta['target']} {meta['dtype']}: the dynamic build runs on {dyn.runtime_for(probe)}, "
          f"the static ones on {first.runtime_for(probe)}")
    print(f"{'batch':>5s} {'dynamic ms':>11s} {'static ms':>10s} {'eager ms':>9s} {'dyn/static':>10s} "
          f"{'err dyn':>8s} {'err static':>10s} {'err eager':>9s}")
    with torch.no_grad():
        for n in meta["sizes"]:
            static = braze.load(out / f"static-{n}.braze")
            x = torch.randn(n, 128, 768, device=dev, dtype=dtype)
            want = ref(x.double())
            err = {k: float((f(x).double() - want).abs().max() / want.abs().max())
                   for k, f in (("dyn", dyn), ("static", static), ("eager", m))}
            fns = {"dynamic": lambda: dyn(x), "static": lambda: static(x), "eager": lambda: m(x)}
            for f in fns.values():
                f()
            torch.cuda.synchronize()
            rounds = {k: [] for k in fns}
            for _ in range(5):
                for k, f in fns.items():
                    rounds[k].append(per_call_ms(f, 20))
            med = {k: statistics.median(v) for k, v in rounds.items()}
            print(f"{n:5d} {med['dynamic']:11.3f} {med['static']:10.3f} {med['eager']:9.3f} "
                  f"{med['dynamic'] / med['static']:10.2f} {err['dyn']:8.1e} {err['static']:10.1e} {err['eager']:9.1e}",
                  flush=True)


def profile(out: Path, n: int):
    """Per call, each build's GPU work at batch n by kind (torch.profiler over 10 calls)."""
    import braze
    from torch.profiler import ProfilerActivity, profile as torch_profile

    meta = json.loads((out / "meta.json").read_text())
    dtype = getattr(torch, meta["dtype"])
    x = torch.randn(n, 128, 768, device="cuda", dtype=dtype)
    for name in ("dynamic", f"static-{n}"):
        if not (out / f"{name}.braze").exists():
            continue
        module = braze.load(out / f"{name}.braze")
        with torch.no_grad():
            for _ in range(3):
                module(x)
            torch.cuda.synchronize()
            with torch_profile(activities=[ProfilerActivity.CUDA, ProfilerActivity.CPU]) as prof:
                for _ in range(10):
                    module(x)
                torch.cuda.synchronize()
        rows = sorted((e for e in prof.key_averages() if e.device_time_total), key=lambda e: -e.device_time_total)
        total = sum(e.device_time_total for e in rows) / 10
        print(f"{name} at batch {n}: GPU {total:.1f} us per call; top entries (us per call, count per call):")
        for e in rows[:10]:
            print(f"  {e.device_time_total / 10:8.1f} {e.count / 10:5.1f}  {e.key[:110]}")


if __name__ == "__main__":
    if sys.argv[1] == "profile":
        profile(Path(sys.argv[2]), int(sys.argv[3]))
        sys.exit(0)
    if sys.argv[1] == "build":
        args = sys.argv[3:]
        option = lambda name, default: args[args.index(name) + 1] if name in args else default  # noqa: E731
        build(Path(sys.argv[2]), option("--target", "sm_90"), option("--dtype", "float32"),
              [int(n) for n in option("--sizes", "1,8,64").split(",")])
    else:
        run(Path(sys.argv[2]))
