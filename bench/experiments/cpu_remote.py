"""CPU variants compiled here for another host's CPU, timed there beside eager (issue 19).

The GPU host's CPU (an Intel Xeon with AVX-512 and AMX, 16 cores) has no IREE compiler, so:

    python bench/experiments/cpu_remote.py build DIR --target emeraldrapids \
        --workloads layernorm_gelu,attention --variants default,reassoc
    python bench/experiments/cpu_remote.py run DIR --threads 1      # there (iree-base-runtime, torch)

`build` compiles each workload with each variant (cpu_contractions.py's VARIANTS: braze.compile
with extra iree-compile flags or a pipeline) for `--target` and saves the artifacts with a
manifest (eager's output checksum here, to catch a model rebuilt differently there). `run`
rebuilds each model from the workload table (seeded), loads its artifacts and times eager and
each variant in 7 interleaved blocks of calls in one process (median), with torch's intra-op
threads and IREE's local-task workers both set to --threads; prints ms, speedup over eager and
the error against eager. `--wait batch,normal` loads each artifact once per way of waiting for
IREE's workers (BRAZE_CPU_WAIT, bench/NOTES.md §41) and times both.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
import warnings

warnings.filterwarnings("ignore")

REASSOC = "--iree-llvmcpu-reassociate-fp-reductions=true"
VARIANTS = {
    "default": {},
    "reassoc": {"iree_flags": [REASSOC]},
    "no-reassoc": {"pipeline": "fusion-cpu-pipeline{reassociate=off}"},
    "no-fusion": {"fusion": False},
    "no-fusion-reassoc": {"fusion": False, "iree_flags": [REASSOC]},
    "cpu-direct": {"pipeline": "fusion-cpu-pipeline{conv=direct}"},
    "cpu-im2col": {"pipeline": "fusion-cpu-pipeline{conv=im2col}"},
    # braze's AVX-512 rule (direct-pixels=784) with NCHW direct convolutions, as before §39
    "channels-last-off": {"pipeline": "fusion-cpu-pipeline{direct-pixels=784 channels-last=off}"},
}

TILE_VARIANTS = {
    # braze.compiler.cpu_tiles: how an f32 mmt4d dispatch is configured (bench/NOTES.md §48);
    # with these, `build` fixes the choice instead of letting the target CPU decide
    "tiles-iree": None,
    "tiles-micro-n1": {"codegen": False, "max_n1": 1},
    "tiles-micro-l2": {"codegen": False},
    "tiles-loops-n2": {"vector_n": 2, "max_n1": 2},
    "tiles-loops-l2": {"vector_n": 2},
    "tiles-loops1-n1": {"vector_n": 1, "max_n1": 1},
    "tiles-loops-16x32": "LOOPS_16X32",  # braze's Intel choice before §57
    "tiles-loops-rule": "LOOPS",  # since §57: 8-row tiles for untransposed products, else 16x32
}


def _compile(braze, model, inputs, target, variant):
    """braze.compile with a variant's options (VARIANTS), or with its mmt4d tiles fixed (TILE_VARIANTS)."""
    if variant not in TILE_VARIANTS:
        return braze.compile(model, *inputs, device="cpu", target=target, cache=False, **VARIANTS[variant])
    from braze.compiler import cpu_tiles

    spec = TILE_VARIANTS[variant]
    chosen = None if spec is None else getattr(cpu_tiles, spec) if isinstance(spec, str) else cpu_tiles.Mmt4dTiles(**spec)
    saved = cpu_tiles.tiles_for_cpu
    cpu_tiles.tiles_for_cpu = lambda cpu: chosen
    try:
        return braze.compile(model, *inputs, device="cpu", target=target, cache=False)
    finally:
        cpu_tiles.tiles_for_cpu = saved


def _checksum(out) -> float:
    import torch

    return float(sum(t.double().abs().sum() for t in (out if isinstance(out, (tuple, list)) else [out])
                     if isinstance(t, torch.Tensor)))


def build(args) -> None:
    import torch

    import braze
    from braze.testing.zoo import WORKLOADS

    os.makedirs(args.dir, exist_ok=True)
    manifest = {"target": args.target, "workloads": {}}
    for name in args.workloads.split(","):
        model, inputs = WORKLOADS[name].build("cpu")
        with torch.no_grad():
            entry = {"checksum": _checksum(model(*inputs)), "variants": {}}
        for v in args.variants.split(","):
            t = time.perf_counter()
            try:
                m = _compile(braze, model, inputs, args.target, v)
            except Exception as e:  # a variant IREE cannot compile is a result too
                print(f"{name} {v}: failed: {type(e).__name__}: {str(e).splitlines()[0][:160]}", flush=True)
                continue
            path = os.path.join(args.dir, f"{name}-{v}.braze")
            m.save(path, overwrite=True)
            entry["variants"][v] = {"file": os.path.basename(path), "dispatches": m.report.dispatch_count,
                                    "cpu_codegen": m.report.cpu_codegen, "compile_s": time.perf_counter() - t,
                                    "mmt4d": list(m.report.iree_workarounds)}
            print(f"{name} {v}: {m.report.dispatch_count} dispatches, {time.perf_counter() - t:.1f} s; "
                  f"{m.report.cpu_codegen}", flush=True)
        manifest["workloads"][name] = entry
    with open(os.path.join(args.dir, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)


def run(args) -> None:
    import torch

    torch.set_num_threads(args.threads)
    import braze

    braze.set_cpu_threads(args.threads)  # one thread: IREE's local-sync driver (bench/NOTES.md §41)
    from braze.testing.zoo import WORKLOADS

    with open(os.path.join(args.dir, "manifest.json")) as f:
        manifest = json.load(f)
    print(f"host: {_cpu_name()}, {os.cpu_count()} cores; threads {args.threads}; target {manifest['target']}; "
          f"torch {torch.__version__}; load average {os.getloadavg()[0]:.2f}", flush=True)
    for name, entry in manifest["workloads"].items():
        model, inputs = WORKLOADS[name].build("cpu")
        with torch.no_grad():
            ref = model(*inputs)
        note = "" if abs(_checksum(ref) - entry["checksum"]) <= 1e-6 * abs(entry["checksum"]) else \
            "  (the model rebuilt here differs from the one compiled: errors are not comparable)"
        mods, dispatches = {}, {}
        for v, e in entry["variants"].items():
            for wait in args.wait.split(","):
                os.environ["BRAZE_CPU_WAIT"] = wait  # read when the module loads, on its first call
                key = v if "," not in args.wait else f"{v}/{wait}"
                mods[key] = braze.load(os.path.join(args.dir, e["file"]))
                with torch.no_grad():
                    mods[key](*inputs)
                dispatches[key] = e["dispatches"]
        os.environ.pop("BRAZE_CPU_WAIT", None)
        fns = {"eager": lambda: model(*inputs), **{k: (lambda c=c: c(*inputs)) for k, c in mods.items()}}
        for mode in filter(None, args.torch_compile.split(",")):
            try:
                torch._dynamo.reset()
                opt = torch.compile(model, mode=None if mode == "default" else mode)
                with torch.no_grad():
                    opt(*inputs)
                    opt(*inputs)
                fns[f"torch.compile {mode}"] = lambda opt=opt: opt(*inputs)
            except Exception as e:  # no C++ compiler there, an Inductor failure: a result too
                print(f"{name:20s} torch.compile {mode}: failed: {type(e).__name__}: {str(e).splitlines()[0][:160]}")
        with torch.no_grad():
            for f in fns.values():
                f()
            t = time.perf_counter()
            fns["eager"]()
            reps = max(1, int(0.05 / max(time.perf_counter() - t, 1e-6)))
            times = {k: [] for k in fns}
            for _ in range(args.rounds):
                for k, f in fns.items():
                    t = time.perf_counter()
                    for _ in range(reps):
                        f()
                    times[k].append((time.perf_counter() - t) / reps * 1000)
        med = {k: statistics.median(v) for k, v in times.items()}
        spread = max(times["eager"]) / min(times["eager"])
        print(f"{name:20s} eager {med['eager']:8.3f} ms (slowest/fastest round {spread:.2f}){note}", flush=True)
        for k in fns:
            if k.startswith("torch.compile"):
                print(f"{name:20s} {k:26s} {med[k]:8.3f} ms  {med['eager'] / med[k]:5.2f}x eager", flush=True)
        best = min((med[k] for k in fns if k.startswith("torch.compile")), default=None)
        for k, c in mods.items():
            out = c(*inputs)
            vs = f"  {best / med[k]:5.2f}x best torch.compile" if best else ""
            err = float((out - ref).abs().max() / ref.abs().max())
            print(f"{name:20s} {k:18s} {med[k]:8.3f} ms  {med['eager'] / med[k]:5.2f}x eager  "
                  f"{dispatches[k]:3d} disp  rel err {err:.1e}  waits {c.program.wait_policy}{vs}", flush=True)


def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            return next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        return "?"


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build")
    b.add_argument("dir")
    b.add_argument("--target", required=True)
    b.add_argument("--workloads", required=True)
    b.add_argument("--variants", default="default,reassoc")
    r = sub.add_parser("run")
    r.add_argument("dir")
    r.add_argument("--threads", type=int, default=1)
    r.add_argument("--rounds", type=int, default=7)
    r.add_argument("--wait", default="batch",
                   help="how calls wait for IREE's workers (BRAZE_CPU_WAIT), comma-separated: batch,normal (auto: a per-program trial session 16 removed)")
    r.add_argument("--torch-compile", default="",
                   help="torch.compile modes timed beside eager, comma-separated (default,max-autotune)")
    a = p.parse_args(argv)
    (build if a.cmd == "build" else run)(a)


if __name__ == "__main__":
    sys.exit(main())
