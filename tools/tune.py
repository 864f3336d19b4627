"""Autotune braze's elementwise kernel configurations on a GPU, compile here, measure there.

    python -m braze.tools.tune build DIR --target sm_90 [--workloads elementwise_chain,...]
        (here, with the compiler) compiles each workload once per candidate configuration
        (fusion-configure-kernels{config=WG:THREAD:THREADS}) and writes DIR/manifest.json.
    python -m braze.tools.tune run DIR
        (on the GPU host) times every candidate with CUDA events, checks it against eager
        PyTorch, and writes DIR/winners.json.
    python -m braze.tools.tune import DIR/winners.json
        (here) stores each winner in the tuning cache (braze.tuning), keyed by kernel
        signature and target, so every later compile uses it.

A candidate forces one configuration on every standalone elementwise kernel of its workload,
so tune workloads with one such kernel each (the elementwise chains).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

CANDIDATES = [
    (threads * thread, thread, threads)
    for thread in (1, 2, 4, 8)
    for threads in (64, 128, 256, 512)
]
"""(workgroup elements, elements per thread, threads per workgroup) tried by default."""


def _kernel_signatures(model, args, target: str) -> list[str]:
    from braze import frontend
    from braze.passes import registry
    from braze.passes.configure_kernels import configured_signatures

    imported = frontend.import_model(model, tuple(args))
    with imported.context:
        registry.run_pipeline(imported.module, f"fusion-default-pipeline,fusion-configure-kernels{{target={target}}}")
        return configured_signatures(imported.module.operation)


def build(directory: Path, target: str, workloads: list[str]) -> int:
    import braze
    from braze.passes.configure_kernels import choose_config
    from braze.tools.bench_workloads import WORKLOADS

    directory.mkdir(parents=True, exist_ok=True)
    manifest = {"target": target, "workloads": []}
    for name in workloads:
        model, args = WORKLOADS[name].build("cuda")
        signatures = _kernel_signatures(model, args, target)
        if len(signatures) != 1:
            print(f"skip {name}: {len(signatures)} standalone elementwise kernels (tuning needs exactly 1)")
            continue
        n = int(signatures[0].split("_")[1])
        entry = {"workload": name, "signature": signatures[0], "candidates": []}
        for wg, thread, threads in CANDIDATES:
            if n % wg:
                continue
            short = f"{wg}:{thread}:{threads}"
            pipeline = f"fusion-default-pipeline,fusion-configure-kernels{{target={target} config={short}}}"
            compiled = braze.compile(model, *args, device="cuda", target=target, pipeline=pipeline)
            path = f"{name}-{wg}-{thread}-{threads}.braze"
            compiled.save(directory / path, overwrite=True)
            entry["candidates"].append({"config": short, "artifact": path})
        compiled = braze.compile(model, *args, device="cuda", target=target, fusion=False)
        compiled.save(directory / f"{name}-iree-default.braze", overwrite=True)
        entry["iree_default"] = f"{name}-iree-default.braze"
        model_choice = choose_config(n, 4 if "f32" in signatures[0] else 2)
        entry["cost_model"] = model_choice.short() if model_choice else None
        manifest["workloads"].append(entry)
        print(f"{name}: {len(entry['candidates'])} candidates for {signatures[0]}", flush=True)
    (directory / "manifest.json").write_text(json.dumps(manifest, indent=2))
    return 0


def _time_ms(fn, reps: int = 50) -> float:
    import torch

    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    times.sort()
    return times[len(times) // 2]


def run(directory: Path) -> int:
    import torch

    import braze
    from braze.tools.bench_workloads import WORKLOADS

    manifest = json.loads((directory / "manifest.json").read_text())
    winners = {"target": manifest["target"], "kernels": {}, "measurements": {}}
    for entry in manifest["workloads"]:
        model, args = WORKLOADS[entry["workload"]].build("cuda")
        model = model.cuda()
        args = [a.cuda() for a in args]
        with torch.no_grad():
            expected = model(*args)
        rows = []
        for name, path in [("iree-default", entry["iree_default"])] + [(c["config"], c["artifact"]) for c in entry["candidates"]]:
            module = braze.load(directory / path, device="cuda")
            got = module(*args)
            err = ((got.float() - expected.float()).abs().max() / expected.float().abs().max()).item()
            ms = _time_ms(lambda: module(*args))
            rows.append((name, ms, err))
            print(f"{entry['workload']:28s} {name:14s} {ms * 1000:8.1f} us/call  rel err {err:.1e}", flush=True)
        ok = [r for r in rows if r[0] != "iree-default" and r[2] < 1e-2]
        best = min(ok, key=lambda r: r[1])
        winners["kernels"][entry["signature"]] = best[0]
        winners["measurements"][entry["workload"]] = {
            "signature": entry["signature"], "cost_model": entry.get("cost_model"),
            "us_per_call": {name: round(ms * 1000, 1) for name, ms, _ in rows}, "winner": best[0],
        }
    (directory / "winners.json").write_text(json.dumps(winners, indent=2))
    print(f"wrote {directory / 'winners.json'}")
    return 0


def import_winners(path: Path) -> int:
    from braze import tuning
    from braze.passes.configure_kernels import KernelConfig

    data = json.loads(path.read_text())
    for signature, short in data["kernels"].items():
        tuning.record(signature, data["target"], KernelConfig.parse_short(short).text())
        print(f"{data['target']} {signature}: {short}")
    print(f"stored in {tuning.cache_path()}")
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m braze.tools.tune", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build", help="compile candidate configurations (needs the compiler)")
    b.add_argument("dir", type=Path)
    b.add_argument("--target", default="sm_90")
    b.add_argument("--workloads", default="elementwise_chain,elementwise_chain_bf16")
    r = sub.add_parser("run", help="time the candidates on this machine's GPU")
    r.add_argument("dir", type=Path)
    i = sub.add_parser("import", help="store measured winners in the tuning cache")
    i.add_argument("winners", type=Path)
    args = p.parse_args(argv)
    t0 = time.perf_counter()
    if args.command == "build":
        code = build(args.dir, args.target, [w for w in args.workloads.split(",") if w])
    elif args.command == "run":
        code = run(args.dir)
    else:
        code = import_winners(args.winners)
    print(f"({time.perf_counter() - t0:.0f} s)", file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main())
