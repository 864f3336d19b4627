"""Tiles for braze's generated kernels, measured: each case compiled once per candidate tile and
timed on the GPU host against torch (SDPA's kernels for attention, cuBLAS and torch's epilogue
kernels for a Linear).

    python bench/experiments/kernel_tiles.py build DIR [--only a,b]   (here: compiler, Triton)
    python bench/experiments/kernel_tiles.py run DIR        (GPU host: per-call times, CUDA events)
    ncu --clock-control none --csv --metrics gpu__time_duration.sum \\
        python bench/experiments/kernel_tiles.py profile DIR > ncu.csv
    python bench/experiments/kernel_tiles.py table DIR ncu.csv   (kernel times per case and tile)

Cases: bench/kernels_check.py's ATTENTION_CASES and CONV_CASES (Conv2d + BatchNorm + ReLU, its
weights in the artifact), and Linear layers at the bench's shapes
(LINEAR_CASES) whose weight and bias are inputs, so that the artifacts hold no weights (the
kernel is the same: the weight is read K-major either way); the GPU host makes the seeded
inputs. `_tf32` cases compile with precision="high" and run eager with TF32 allowed (cuBLAS's
TF32 GEMM). The tile a build uses is forced by replacing the cost model's choice
(braze.kernels.attention.choose_tile, braze.kernels.gemm.choose_tile) for the compile;
everything else is braze.compile as a user runs it.
"""

from __future__ import annotations

import argparse
import copy
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import kernels_check  # noqa: E402
import ncu_table  # noqa: E402

TILES_16 = [(128, 64, 4, 3), (128, 64, 8, 3), (128, 128, 8, 3), (128, 128, 8, 2), (64, 64, 4, 3),
            (64, 128, 4, 3), (128, 32, 4, 3), (64, 32, 4, 4)]
TILES_32 = [(64, 64, 4, 2), (64, 32, 4, 2), (128, 64, 8, 2), (128, 32, 8, 2), (64, 64, 4, 3), (128, 64, 4, 2),
            (64, 32, 4, 3)]
GEMM_16 = [(128, 256, 64, 8, 3), (128, 128, 64, 8, 4), (128, 128, 64, 4, 4), (128, 64, 64, 4, 4),
           (64, 128, 64, 4, 4), (64, 64, 64, 4, 4), (64, 256, 64, 8, 3), (128, 64, 32, 4, 5)]
GEMV_16 = [(16, 16, 256, 4, 4), (16, 16, 256, 2, 4), (16, 16, 512, 4, 3), (16, 16, 128, 4, 6),
           (16, 32, 256, 4, 3), (16, 32, 256, 2, 4), (16, 32, 128, 4, 4), (16, 64, 128, 4, 4),
           (16, 64, 256, 4, 3), (16, 128, 128, 4, 3), (16, 16, 256, 4, 4, 2), (16, 32, 256, 4, 3, 2),
           (16, 32, 128, 4, 4, 4), (16, 64, 128, 4, 4, 4)]
"""Tiles for M <= 16 (a decode step's GEMMs): 16 rows, narrow and deep, split K where the
columns alone leave SMs idle."""
GEMM_32 = [(128, 128, 32, 8, 3), (128, 64, 32, 4, 3), (64, 128, 32, 4, 3), (64, 64, 32, 4, 3),
           (128, 64, 32, 8, 3), (64, 64, 32, 4, 4), (128, 128, 32, 8, 2), (64, 32, 32, 4, 4)]

LINEAR_CASES = {
    # name: (dtype, M, K, N, activation, precision): y = act(x w^T + b)
    "mlp_up_256x4096x1024_gelu_f32": ("float32", 256, 1024, 4096, "gelu", None),
    "mlp_down_256x1024x4096_f32": ("float32", 256, 4096, 1024, None, None),
    "qkv_1024x2304x768_f32": ("float32", 1024, 768, 2304, None, None),
    "proj_1024x768x768_f32": ("float32", 1024, 768, 768, None, None),
    "ffn_up_1024x3072x768_gelu_f32": ("float32", 1024, 768, 3072, "gelu", None),
    "ffn_down_1024x768x3072_f32": ("float32", 1024, 3072, 768, None, None),
    "gemm_4096x4096x1024_tf32": ("float32", 4096, 1024, 4096, None, "high"),
    "ffn_up_1024x3072x768_gelu_tf32": ("float32", 1024, 768, 3072, "gelu", "high"),
    "mlp_up_256x4096x1024_gelu_bf16": ("bfloat16", 256, 1024, 4096, "gelu", None),
    "mlp_down_256x1024x4096_bf16": ("bfloat16", 256, 4096, 1024, None, None),
    "proj_1024x768x768_bf16": ("bfloat16", 1024, 768, 768, None, None),
    "ffn_up_1024x3072x768_gelu_bf16": ("bfloat16", 1024, 768, 3072, "gelu", None),
    "ffn_down_1024x768x3072_bf16": ("bfloat16", 1024, 3072, 768, None, None),
    "gemm_4096x4096x1024_bf16": ("bfloat16", 4096, 1024, 4096, None, None),
    # ragged and long K: split-K's uneven last part and edge tiles
    "ragged_77x131x1000_gelu_bf16": ("bfloat16", 77, 1000, 131, "gelu", None),
    "ragged_77x131x1000_gelu_f32": ("float32", 77, 1000, 131, "gelu", None),
    # a decode step's GEMMs at batch 1 and 8 (Qwen2-1.5B and -0.5B classes: q/k/v joined, o,
    # gate/up joined, down): weight-streaming, M far below any tile's rows
    "dec15_qkv_1x2048x1536_bf16": ("bfloat16", 1, 1536, 2048, None, None),
    "dec15_o_1x1536x1536_bf16": ("bfloat16", 1, 1536, 1536, "nobias", None),
    "dec15_gateup_1x17920x1536_bf16": ("bfloat16", 1, 1536, 17920, "nobias", None),
    "dec15_down_1x1536x8960_bf16": ("bfloat16", 1, 8960, 1536, "nobias", None),
    "dec05_qkv_1x1152x896_bf16": ("bfloat16", 1, 896, 1152, None, None),
    "dec05_o_1x896x896_bf16": ("bfloat16", 1, 896, 896, "nobias", None),
    "dec05_down_1x896x4864_bf16": ("bfloat16", 1, 4864, 896, "nobias", None),
    "dec15_qkv_8x2048x1536_bf16": ("bfloat16", 8, 1536, 2048, None, None),
    "dec15_down_8x1536x8960_bf16": ("bfloat16", 8, 8960, 1536, "nobias", None),
}


DEPTHWISE = [(512, 4, 16, 4, 1), (256, 8, 16, 4, 1), (64, 32, 16, 4, 1), (128, 16, 16, 4, 1),
             (1024, 2, 16, 4, 1), (512, 4, 16, 8, 1), (256, 4, 16, 4, 1), (256, 16, 16, 8, 1)]
"""Depthwise tiles (pixels, channels, -, warps, stages); the first run's were (128, 16, 16, 4, 1),
(256, 16, 16, 4, 1), (64, 32, 16, 4, 1), (128, 32, 16, 4, 1), (256, 8, 16, 4, 1),
(512, 4, 16, 4, 1), (128, 16, 16, 2, 1), (256, 16, 16, 8, 1) with every tap unrolled."""


GROUPED = [(128, 16, 64, 4, 3), (64, 16, 64, 4, 3), (128, 32, 64, 4, 3), (256, 16, 64, 8, 3), (64, 64, 64, 4, 3)]
"""Grouped convolutions (ResNeXt's 32 groups of 4-8 channels): narrow tiles."""


def _tiles(name: str) -> list[tuple]:
    case = kernels_check.CONV_CASES.get(name, ())
    if len(case) == 10 and case[9] == case[2] == case[5]:  # groups = channels: depthwise
        return DEPTHWISE
    if len(case) == 10:
        return GROUPED
    if name in kernels_check.CONV_CASES:
        return GEMM_32 if kernels_check.CONV_CASES[name][0] == "float32" else GEMM_16
    if name in LINEAR_CASES and LINEAR_CASES[name][1] <= 16:
        return GEMV_16
    if name in LINEAR_CASES:
        return GEMM_32 if LINEAR_CASES[name][0] == "float32" else GEMM_16
    return TILES_32 if kernels_check.ATTENTION_CASES[name][0] == "float32" else TILES_16


def _linear_model(name: str):
    import torch

    dtype, m, k, n, act, _ = LINEAR_CASES[name]

    class Linear(torch.nn.Module):
        def forward(self, x, w, b):
            y = torch.nn.functional.linear(x, w, None if act == "nobias" else b)
            return torch.nn.functional.gelu(y) if act == "gelu" else y

    gen = torch.Generator().manual_seed(sum(map(ord, name)))
    args = (torch.randn(m, k, generator=gen), torch.randn(n, k, generator=gen) / k ** 0.5,
            torch.randn(n, generator=gen))
    return Linear().eval(), tuple(a.to(getattr(torch, dtype)) for a in args)


def _model(name: str):
    if name in kernels_check.CONV_CASES:
        model, x = kernels_check._conv_model(name)
        return model, (x,)
    return _linear_model(name) if name in LINEAR_CASES else kernels_check._attention_model(name)


def _tf32(name: str) -> bool:
    return name in LINEAR_CASES and LINEAR_CASES[name][5] == "high"


ALL = list(LINEAR_CASES) + list(kernels_check.ATTENTION_CASES) + list(kernels_check.CONV_CASES)


def _tag(tile) -> str:
    return "x".join(map(str, tile))


def build(folder: Path, only: list[str], tiles: list[tuple] | None = None) -> int:
    import braze
    from braze.errors import KernelResourceError
    from braze.kernels import attention, gemm
    from braze.kernels import build as kbuild

    folder.mkdir(parents=True, exist_ok=True)
    manifest = {}
    chosen = {}
    real_build = kbuild.build

    def recording_build(spec, arch="sm_90"):
        built = real_build(spec, arch)
        chosen["name"] = built.name
        chosen["tile"] = tuple(spec.tile)
        return built

    model_tile = gemm.choose_tile

    kbuild.build = recording_build
    for name in ALL:
        if only and name not in only:
            continue
        model, args = _model(name)
        candidates = list(tiles or _tiles(name))
        if not tiles and name in LINEAR_CASES and LINEAR_CASES[name][1] <= 16:
            candidates.insert(0, None)  # first the cost model's own tile, as a user gets it
        for tile in candidates:
            attention.choose_tile = gemm.choose_tile = (
                model_tile if tile is None else lambda spec, sms, tile=tile: tile)
            try:
                compiled = braze.compile(model, *args, device="cuda", target="sm_90", cache=False,
                                         precision="high" if _tf32(name) else None)
            except KernelResourceError as e:
                print(f"skip {name} {_tag(tile)}: {e}", flush=True)
                continue
            if len(compiled.report.kernels) != 1 or not compiled.report.kernels[0]["generated"]:
                raise SystemExit(f"{name}: expected one generated kernel, got {compiled.report.kernels}")
            tile = tile or chosen["tile"]
            file = f"{name}.{_tag(tile)}.braze"
            compiled.save(folder / file, overwrite=True)
            manifest[file] = {"case": name, "tile": list(tile), "kernel": chosen["name"]}
            print(f"{file}: {chosen['name']}", flush=True)
    old = folder / "manifest.json"
    if old.exists():  # a second build into the folder adds to it
        manifest = {**json.loads(old.read_text()), **manifest}
    old.write_text(json.dumps(manifest, indent=1))
    return 0


def _cases(folder: Path):
    manifest = json.loads((folder / "manifest.json").read_text())
    by_case: dict = {}
    for file, entry in manifest.items():
        by_case.setdefault(entry["case"], []).append((file, entry))
    return manifest, by_case


def run(folder: Path) -> int:
    import torch

    import braze

    _, by_case = _cases(folder)
    for name, entries in by_case.items():
        model, made = _model(name)
        model = model.cuda()  # a convolution's weights; the other cases take theirs as inputs
        args = tuple(a.cuda() for a in made)
        with torch.no_grad():
            rows_ = None if name.startswith("ragged") else 1  # every row of a ragged case: its edge tiles
            first = [a[:rows_] for a in args] if name not in LINEAR_CASES else [args[0][:rows_], *args[1:]]
            ref = copy.deepcopy(model).double()(*(a.double() for a in first)).cpu()
            torch.backends.cuda.matmul.allow_tf32 = _tf32(name)
            eager = kernels_check._time(lambda: model(*args), 200)
            eager_err = (model(*args)[:rows_].double().cpu() - ref).abs().max().item()
            torch.backends.cuda.matmul.allow_tf32 = False
        rows = []
        for file, entry in entries:
            mod = braze.load(folder / file, device="cuda")
            us = kernels_check._time(lambda: mod(*args), 200)
            err = (mod(*args)[:rows_].double().cpu() - ref).abs().max().item()  # after 200 calls: state resets
            rows.append((us, entry["tile"], err))
        rows.sort()
        print(f"{name}: eager {eager:.1f} us ({eager_err:.1e}); "
              + "; ".join(f"{_tag(t)} {us:.1f} ({err:.1e})" for us, t, err in rows), flush=True)
    return 0


def profile(folder: Path) -> int:
    import torch

    import braze

    _, by_case = _cases(folder)
    with torch.no_grad():
        for name, entries in by_case.items():
            model, made = _model(name)
            model = model.cuda()
            args = tuple(a.cuda() for a in made)
            fns = [braze.load(folder / file, device="cuda") for file, _ in entries] + [model]
            torch.backends.cuda.matmul.allow_tf32 = _tf32(name)
            for fn in fns:
                fn(*args)
                torch.cuda.synchronize()
                for _ in range(3):
                    fn(*args)
                torch.cuda.synchronize()
            torch.backends.cuda.matmul.allow_tf32 = False
    return 0


def table(folder: Path, csv_path: Path) -> int:
    """Median kernel time per braze kernel (named by case and tile) and, per case, torch's
    kernels launched after it (SDPA's, summed per call)."""
    manifest, by_case = _cases(folder)
    names = {e["kernel"]: (e["case"], _tag(e["tile"])) for e in manifest.values()}
    ours: dict = {}
    theirs: dict = {}
    case = None
    iree: dict = {}  # IREE's own dispatches in a braze module (main_dispatch_*), per (case, tile)
    last = None
    for kernel, us in ncu_table.launches(str(csv_path)):
        if kernel in names:
            case, tag = last = names[kernel]
            ours.setdefault((case, tag), []).append(us)
        elif kernel.startswith("main_dispatch") and last is not None:
            iree.setdefault(last, []).append(us)
        elif case is not None:
            last = None
            theirs.setdefault(case, []).append((kernel, us))
    for name in by_case:
        torch_us = theirs.get(name, [])
        per_call = sum(us for _, us in torch_us) / 4 if torch_us else float("nan")  # 1 warm-up + 3 calls
        kinds: dict = {}
        for k, us in torch_us:
            kinds[k[:60]] = kinds.get(k[:60], 0.0) + us / 4
        best = sorted((statistics.median(v), tag) for (c, tag), v in ours.items() if c == name)
        print(f"{name}: torch {per_call:.2f} us per call ({'; '.join(f'{k} {us:.2f}' for k, us in kinds.items())})")
        for us, tag in best:
            extra = sum(iree.get((name, tag), [])) / 4  # 1 warm-up + 3 calls, as torch's
            also = f"  (+ IREE's dispatches {extra:.2f} us per call: {per_call / (us + extra):.2f}x)" if extra else ""
            print(f"    {tag:14s} {us:8.2f} us  {per_call / us:5.2f}x torch's{also}")
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("cmd", choices=("build", "run", "profile", "table"))
    p.add_argument("dir", type=Path)
    p.add_argument("csv", nargs="?", type=Path)
    p.add_argument("--only", default="")
    p.add_argument("--tiles", default="", help="build these tiles (BMxBNx...) instead of the candidates")
    args = p.parse_args(argv)
    if args.cmd == "table":
        return table(args.dir, args.csv)
    if args.cmd == "build":
        tiles = [tuple(int(x) for x in t.split("x")) for t in args.tiles.split(",") if t]
        return build(args.dir, [s for s in args.only.split(",") if s], tiles or None)
    return {"run": run, "profile": profile}[args.cmd](args.dir)


if __name__ == "__main__":
    sys.exit(main())
