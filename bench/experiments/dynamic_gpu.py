"""Dynamic shapes on a GPU (issue 18): a BERT layer (768, seq 128) built once with a dynamic
batch and once static per measured size, built here (no GPU), run on the GPU host.

    python bench/experiments/dynamic_gpu.py build DIR [--device cuda|vulkan] [--target sm_90]
    python bench/experiments/dynamic_gpu.py run DIR        (on the GPU host: needs torch + iree-base-runtime)

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
SIZES = (1, 8, 32, 64)


def model():
    from braze.zoo import BertLayer

    torch.manual_seed(0)
    return BertLayer().eval()


def build(out: Path, device: str, target: str):
    import braze

    out.mkdir(parents=True, exist_ok=True)
    m = model()
    batch = torch.export.Dim("batch", min=1, max=64)
    dyn = braze.compile(m, torch.randn(8, 128, 768), device=device, target=target, cache=False,
                        dynamic_shapes=({0: batch},), specialize="none")
    dyn.dynamic.save(out / "dynamic.braze", overwrite=True)
    for n in SIZES:
        braze.compile(m, torch.randn(n, 128, 768), device=device, target=target, cache=False).save(
            out / f"static-{n}.braze", overwrite=True)
    (out / "meta.json").write_text(json.dumps({"device": device, "target": target, "sizes": SIZES}))
    print(f"built {out}: dynamic ({dyn.dynamic.report.dispatch_count} dispatches) and static {SIZES}")


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
    dev = "cuda"
    m = model().to(dev)
    ref = model().double().to(dev)
    dyn = braze.load(out / "dynamic.braze")
    print(f"{meta['device']} {meta['target']}; dynamic runtime {dyn.runtime_for(torch.randn(1, 128, 768, device=dev))}")
    print(f"{'batch':>5s} {'dynamic ms':>11s} {'static ms':>10s} {'eager ms':>9s} {'dyn/static':>10s} "
          f"{'err dyn':>8s} {'err static':>10s} {'err eager':>9s}")
    with torch.no_grad():
        for n in meta["sizes"]:
            static = braze.load(out / f"static-{n}.braze")
            x = torch.randn(n, 128, 768, device=dev)
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


if __name__ == "__main__":
    if sys.argv[1] == "build":
        args = sys.argv[3:]
        device = args[args.index("--device") + 1] if "--device" in args else "cuda"
        target = args[args.index("--target") + 1] if "--target" in args else ("sm_90" if device == "cuda" else "ampere")
        build(Path(sys.argv[2]), device, target)
    else:
        run(Path(sys.argv[2]))
