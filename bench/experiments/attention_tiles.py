"""Tiles for braze's flash-attention kernel, measured: each case of bench/kernels_check.py's
ATTENTION_CASES compiled once per candidate tile, timed on the GPU host against torch's SDPA.

    python bench/experiments/attention_tiles.py build DIR      (here: compiler, Triton)
    python bench/experiments/attention_tiles.py run DIR        (GPU host: per-call times, CUDA events)
    ncu --clock-control none --csv --metrics gpu__time_duration.sum \\
        python bench/experiments/attention_tiles.py profile DIR > ncu.csv
    python bench/experiments/attention_tiles.py table DIR ncu.csv   (kernel times per case and tile)

The tile a build uses is forced by replacing braze.kernels.attention.choose_tile for the
compile; everything else is braze.compile as a user runs it.
"""

from __future__ import annotations

import argparse
import csv
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import kernels_check  # noqa: E402

TILES_16 = [(128, 64, 4, 3), (128, 64, 8, 3), (128, 128, 8, 3), (128, 128, 8, 2), (64, 64, 4, 3),
            (64, 128, 4, 3), (128, 32, 4, 3), (64, 32, 4, 4)]
TILES_32 = [(64, 64, 4, 2), (64, 32, 4, 2), (128, 64, 8, 2), (128, 32, 8, 2), (64, 64, 4, 3), (128, 64, 4, 2),
            (64, 32, 4, 3)]


def _tiles(name: str) -> list[tuple]:
    return TILES_32 if kernels_check.ATTENTION_CASES[name][0] == "float32" else TILES_16


def _tag(tile) -> str:
    return "x".join(map(str, tile))


def build(folder: Path) -> int:
    import braze
    from braze.kernels import attention
    from braze.kernels import build as kbuild

    folder.mkdir(parents=True, exist_ok=True)
    manifest = {}
    chosen = {}
    real_build = kbuild.build

    def recording_build(spec, arch="sm_90"):
        built = real_build(spec, arch)
        chosen["name"] = built.name
        return built

    kbuild.build = recording_build
    for name in kernels_check.ATTENTION_CASES:
        model, args = kernels_check._attention_model(name)
        for tile in _tiles(name):
            attention.choose_tile = lambda spec, sms, tile=tile: tile
            compiled = braze.compile(model, *args, device="cuda", target="sm_90", cache=False)
            file = f"{name}.{_tag(tile)}.braze"
            compiled.save(folder / file, overwrite=True)
            manifest[file] = {"case": name, "tile": list(tile), "kernel": chosen["name"]}
            print(f"{file}: {chosen['name']}", flush=True)
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=1))
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
        model, made = kernels_check._attention_model(name)
        args = tuple(a.cuda() for a in made)
        with torch.no_grad():
            ref = model(*(a[:1].double() for a in args)).cpu()
            eager = kernels_check._time(lambda: model(*args), 200)
        rows = []
        for file, entry in entries:
            mod = braze.load(folder / file, device="cuda")
            err = (mod(*args)[:1].double().cpu() - ref).abs().max().item()
            rows.append((kernels_check._time(lambda: mod(*args), 200), entry["tile"], err))
        rows.sort()
        print(f"{name}: eager {eager:.1f} us; " + "; ".join(f"{_tag(t)} {us:.1f} ({err:.1e})" for us, t, err in rows),
              flush=True)
    return 0


def profile(folder: Path) -> int:
    import torch

    import braze

    _, by_case = _cases(folder)
    with torch.no_grad():
        for name, entries in by_case.items():
            model, made = kernels_check._attention_model(name)
            args = tuple(a.cuda() for a in made)
            fns = [braze.load(folder / file, device="cuda") for file, _ in entries] + [model]
            for fn in fns:
                fn(*args)
                torch.cuda.synchronize()
                for _ in range(3):
                    fn(*args)
                torch.cuda.synchronize()
    return 0


def table(folder: Path, csv_path: Path) -> int:
    """Median kernel time per braze kernel (named by case and tile) and, per case, torch's
    kernels launched after it (SDPA's, summed per call)."""
    manifest, by_case = _cases(folder)
    names = {e["kernel"]: (e["case"], _tag(e["tile"])) for e in manifest.values()}
    with open(csv_path, newline="") as f:
        lines = [line for line in f if line.startswith('"')]
    launches = []
    for row in csv.DictReader(lines):
        if row.get("Metric Name") != "gpu__time_duration.sum":
            continue
        value = float(row["Metric Value"].replace(",", ""))
        unit = row.get("Metric Unit", "nsecond")
        us = value / 1000 if unit.startswith("n") else value * 1000 if unit.startswith("m") else value
        launches.append((row["Kernel Name"].split("(")[0], us))
    ours: dict = {}
    theirs: dict = {}
    case = None
    for kernel, us in launches:
        if kernel in names:
            case, tag = names[kernel]
            ours.setdefault((case, tag), []).append(us)
        elif case is not None:
            theirs.setdefault(case, []).append((kernel, us))
    for name in by_case:
        torch_us = theirs.get(name, [])
        per_call = sum(us for _, us in torch_us) / 4 if torch_us else float("nan")  # 1 warm-up + 3 calls
        kinds = sorted({k[:60] for k, _ in torch_us})
        best = sorted((statistics.median(v), tag) for (c, tag), v in ours.items() if c == name)
        print(f"{name}: torch {per_call:.2f} us ({', '.join(kinds)})")
        for us, tag in best:
            print(f"    {tag:14s} {us:8.2f} us  {per_call / us:5.2f}x torch's")
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("cmd", choices=("build", "run", "profile", "table"))
    p.add_argument("dir", type=Path)
    p.add_argument("csv", nargs="?", type=Path)
    args = p.parse_args(argv)
    if args.cmd == "table":
        return table(args.dir, args.csv)
    return {"build": build, "run": run, "profile": profile}[args.cmd](args.dir)


if __name__ == "__main__":
    sys.exit(main())
