"""The zoo's numerics on a GPU host, from artifacts compiled elsewhere.

    python bench/gpu_check.py build DIR [--devices cuda,vulkan] [--cuda-target sm_90]
        (here, with the compiler) compiles every zoo model for each device, saves the
        artifacts, the example inputs and eager PyTorch's outputs (CPU, float64-checked) in DIR.
    python bench/gpu_check.py run DIR
        (on the GPU host: iree-base-runtime, numpy, torch) loads each artifact, runs it
        (CUDA torch tensors in and out for cuda), and prints a table:
        model, device, pass/FAIL/known (a failure of IREE itself, marked in braze.testing.zoo), max
        error, dispatch count; exits 1 on any FAIL (a known failure that passes is one).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path


def build(out: Path, devices: list[str], cuda_target: str, vulkan_target: str, only: list[str] | None) -> int:
    import torch

    import braze
    from braze.testing.zoo import CASES, fresh_like

    out.mkdir(parents=True, exist_ok=True)
    manifest = {"cases": []}
    cases = [c for c in CASES if not only or c.name in only]
    for case in cases:
        model, args, kwargs = case.build()
        args2, kwargs2 = fresh_like((args, kwargs))
        with torch.no_grad():
            expected = model(*args2, **kwargs2)
        torch.save({"args": args2, "kwargs": kwargs2, "expected": expected}, out / f"{case.name}.pt")
        for device in devices:
            target = cuda_target if device == "cuda" else vulkan_target
            t0 = time.perf_counter()
            name = f"{case.name}.{device}.braze"
            entry = {"name": case.name, "device": device, "target": target, "artifact": name,
                     "data": f"{case.name}.pt", "rtol": case.rtol, "known": case.known.get(device)}
            try:
                compiled = braze.compile(model, *args, example_kwargs=kwargs, device=device, target=target)
            except braze.BrazeError as e:  # a model that does not compile is a failed row, not the end
                entry.update(artifact=None, dispatch_count=None, error=f"{type(e).__name__}: {str(e).splitlines()[0]}")
                manifest["cases"].append(entry)
                print(f"FAILED {name}: {entry['error'][:200]}", flush=True)
                continue
            seconds = time.perf_counter() - t0
            compiled.save(out / name, overwrite=True)
            entry.update(dispatch_count=compiled.report.dispatch_count, compile_seconds=round(seconds, 2))
            manifest["cases"].append(entry)
            print(f"built {name}: {compiled.report.dispatch_count} dispatches, {seconds:.1f} s", flush=True)
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2))
    return 0


def run(directory: Path) -> int:
    import torch

    import braze
    from braze.accuracy import max_error

    manifest = json.loads((directory / "manifest.json").read_text())
    available = braze.available_devices()
    rows, failures = [], 0
    for entry in manifest["cases"]:
        device = entry["device"]
        if device not in available:
            rows.append((entry["name"], device, "SKIP", "-", entry["dispatch_count"], f"no {device} device"))
            continue
        data = torch.load(directory / entry["data"], weights_only=False)
        args, kwargs, expected = data["args"], data["kwargs"], data["expected"]
        note = ""
        try:
            if entry["artifact"] is None:
                raise RuntimeError("did not compile: " + entry["error"])
            module = braze.load(directory / entry["artifact"], device=device)
            if device == "cuda":
                from torch.utils._pytree import tree_map

                to_cuda = lambda t: t.cuda() if isinstance(t, torch.Tensor) else t  # noqa: E731
                args, kwargs = tree_map(to_cuda, (args, kwargs))
            got = module(*args, **kwargs)
            from torch.utils._pytree import tree_leaves

            devices = {t.device.type for t in tree_leaves(got)}
            note = f"outputs on {','.join(sorted(devices))}"
            err = max_error(got, expected, floor=0.0)
            ok = err <= entry["rtol"]
        except Exception as e:  # report every failure, keep going
            err, ok, note = float("nan"), False, f"{type(e).__name__}: {str(e).splitlines()[0][:80]}"
        known = entry.get("known")
        if known and not ok:
            result, note = "known", f"IREE ({known[0]}): {known[1]}"[:100]
        elif known:
            result, note = "FAIL", "passes, but is marked known-failing in braze.testing.zoo: remove the mark"
        else:
            result = "pass" if ok else "FAIL"
        failures += result == "FAIL"
        rows.append((entry["name"], device, result, f"{err:.2e}", entry["dispatch_count"], note))
    header = ("model", "device", "result", "max rel err", "dispatches", "note")
    widths = [max(len(str(r[i])) for r in rows + [header]) for i in range(len(header))]
    line = lambda r: "  ".join(str(v).ljust(w) for v, w in zip(r, widths))  # noqa: E731
    print(line(header))
    print("  ".join("-" * w for w in widths))
    for r in rows:
        print(line(r))
    known = sum(r[2] == "known" for r in rows)
    print(f"\n{len(rows) - failures - known} passed, {failures} failed, {known} known failures of IREE itself")
    return 1 if failures else 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python bench/gpu_check.py", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build", help="compile the zoo for GPUs and save artifacts (needs the compiler)")
    b.add_argument("dir", type=Path)
    b.add_argument("--devices", default="cuda,vulkan")
    b.add_argument("--cuda-target", default="sm_90")
    b.add_argument("--vulkan-target", default="ampere")
    b.add_argument("--only", default="", help="comma-separated zoo case names")
    r = sub.add_parser("run", help="run saved artifacts on this machine's GPU and print the table")
    r.add_argument("dir", type=Path)
    args = p.parse_args(argv)
    if args.command == "build":
        return build(args.dir, args.devices.split(","), args.cuda_target, args.vulkan_target,
                     [n for n in args.only.split(",") if n])
    return run(args.dir)


if __name__ == "__main__":
    sys.exit(main())
