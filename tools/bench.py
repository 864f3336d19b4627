"""braze bench: latency, kernels and compile time of braze beside torch eager and torch.compile.

    braze bench [--device cpu] [--quick] [--workloads a,b] [--reps N]
                [--json out.json] [--chart out.png] [--out-dir bench/results]
        compile and measure here: torch eager, torch.compile (Inductor; on CUDA also its
        reduce-overhead and max-autotune modes: --torch-compile-modes), the raw toolchain
        (braze.compile(fusion=False) on iree.runtime) and braze (fusion=True, its default
        runtime: the launcher on CUDA), interleaved rep by rep; on CUDA each contender's
        device memory per call and held between calls; geomeans at the end.
        --workloads generate_qwen2-0.5b_p128_b1 (or 'generate'): text generation instead, tokens/s
        and the decode step against the bandwidth roofline (tools/bench_generate.py).
    braze bench build --device cuda --target sm_90 DIR [--workloads ...] [--group-mib 40]
        (needs the compiler) compile both IREE contenders for another machine; write the
        artifacts in size-capped groups DIR/group-N/, each with a manifest.json.
    braze bench run DIR [--json out.json] [--reps N]
        (needs only iree-base-runtime, numpy, torch) rebuild each model and its inputs from
        the seed, check their checksums, measure eager and torch.compile there and the two
        IREE contenders from the artifacts. DIR is a group or the folder holding groups.
    braze bench chart RESULTS.json -o chart.png     speedup-over-eager bar chart (matplotlib)
    braze bench table RESULTS.json                  the markdown table
    braze bench merge A.json B.json ... -o all.json  one result from several runs (groups)

Also `python -m braze.tools.bench ...`. bench/NOTES.md explains the method.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shutil
import statistics
import sys
import time
import warnings
from pathlib import Path

from braze.accuracy import max_error
from braze.errors import BrazeError, UsageError

from . import timing
from .bench_common import TORCH_COMPILE_MODES
from .bench_common import error_text as _error_text
from .bench_common import progress as _progress
from .bench_common import reset_torch as _reset_torch

SCHEMA = "braze-bench/1"
CONTENDERS = ("eager", "inductor", "inductor-ro", "inductor-max", "iree", "braze")
"""Column order everywhere. inductor* = torch.compile in its default, reduce-overhead (CUDA
graphs) and max-autotune modes; iree = the raw toolchain (braze.compile(fusion=False) run by
iree.runtime); braze = fusion=True with its default runtime (the CUDA launcher on CUDA)."""
LABELS = {"eager": "torch eager", "inductor": "torch.compile", "inductor-ro": "torch.compile reduce-overhead",
          "inductor-max": "torch.compile max-autotune", "iree": "IREE (no braze fusion)", "braze": "braze"}
METRICS = (
    "status", "error", "compile_seconds", "compile_stages", "latency_ms", "reps", "kernels",
    "kernels_method", "max_abs_err", "max_rel_err", "bandwidth_gbs", "bandwidth_fraction",
    "speedup_vs_eager", "runtime", "peak_call_mib", "held_mib", "memory_method",
)
"""Keys every contender's entry in the JSON has (None where they do not apply)."""
LATENCY_KEYS = ("min", "p10", "median", "p90", "max")
DEFAULT_GROUP_MIB = 40.0


# -- timing ------------------------------------------------------------------------------


def copy_bandwidth(device: str, mib: int = 256, reps: int = 10) -> float:
    """GB/s of a device-to-device copy (read + write counted), measured now: after one untimed
    copy, the median of reps + 1 copies timed by CUDA events (on CPU, of reps by wall clock)."""
    import torch

    n = mib * 1024 * 1024 // 4
    if device == "cuda":
        src = torch.empty(n * 4, dtype=torch.float32, device="cuda")  # 1 GiB: past the L2
    else:
        src = torch.randn(n)
    dst = torch.empty_like(src)  # preallocated: a clone would time page faults, not memory
    nbytes = src.numel() * 4
    ms = timing.median_ms(lambda: dst.copy_(src), reps=reps + 1 if device == "cuda" else reps, device=device,
                          warmup=1)
    return 2 * nbytes / (ms / 1000.0) / 1e9


def _percentile(sorted_values: list[float], q: float) -> float:
    if len(sorted_values) == 1:
        return sorted_values[0]
    pos = q * (len(sorted_values) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def summarize(seconds: list[float]) -> dict:
    s = sorted(seconds)
    q = {"min": s[0], "p10": _percentile(s, 0.1), "median": statistics.median(s),
         "p90": _percentile(s, 0.9), "max": s[-1]}
    return {k: round(v * 1000.0, 5) for k, v in q.items()}


# -- kernels per call --------------------------------------------------------------------


def torch_kernels(fn, args, device: str, extra: int | None = None) -> tuple[int | None, str]:
    """Kernels one call launches (CUDA), or top-level aten ops it runs (CPU), by torch.profiler."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device == "cuda" else [])
    try:
        with _quiet_stderr(), torch.no_grad(), profile(activities=activities) as prof:
            fn(*args)
            if device == "cuda":
                torch.cuda.synchronize()
        events = prof.events()
    except Exception as e:  # the profiler is optional evidence, not the benchmark
        return None, f"profiler failed: {type(e).__name__}: {e}"
    if device == "cuda":
        n = sum(1 for e in events if e.device_type == torch.autograd.DeviceType.CUDA
                and not e.name.startswith(("Memcpy", "Memset")))
        return n, "CUDA kernels in torch.profiler (memcpy/memset excluded)"
    n = sum(1 for e in events if e.name.startswith("aten::") and not _has_aten_ancestor(e))
    if extra is None:
        return n, "top-level aten ops in torch.profiler"
    return n + extra, "top-level aten ops in torch.profiler + Inductor's generated C++ kernels"


def _has_aten_ancestor(event) -> bool:
    """Compiled regions wrap their ops in non-aten events; count an op unless an aten op called it."""
    parent = event.cpu_parent
    while parent is not None:
        if parent.name.startswith("aten::"):
            return True
        parent = parent.cpu_parent
    return False


class _quiet_stderr:
    """Silence file descriptor 2: the profiler's C++ side logs start/stop lines there."""

    def __enter__(self):
        sys.stderr.flush()
        self._saved = os.dup(2)
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 2)
        os.close(devnull)

    def __exit__(self, *exc):
        os.dup2(self._saved, 2)
        os.close(self._saved)
        return False


# -- contenders --------------------------------------------------------------------------


def _blank(name: str) -> dict:
    entry = {k: None for k in METRICS}
    entry.update(name=name, status="ok")
    return entry


def _flat(out) -> list:
    import torch

    return [t for t in torch.utils._pytree.tree_leaves(out) if isinstance(t, torch.Tensor)]


def default_modes(device: str) -> list[str]:
    """torch.compile modes measured by default: all three on CUDA (reduce-overhead is the anchor
    users pick for launch-bound models), the default mode elsewhere."""
    return list(TORCH_COMPILE_MODES) if device == "cuda" else ["default"]


def _modes(text: str | None, device: str) -> list[str]:
    if not text:
        return default_modes(device)
    if text.strip() == "none":
        return []  # eager, IREE and braze only
    modes = _names(text) or []
    bad = [m for m in modes if m not in TORCH_COMPILE_MODES]
    if bad:
        raise UsageError(f"--torch-compile-modes: unknown mode(s) {', '.join(bad)}; "
                         f"choose from {', '.join(TORCH_COMPILE_MODES)}")
    return modes


def make_inductors(model, args, device: str, modes: list[str]) -> list[dict]:
    """One torch.compile contender per mode, compiled one after another on fresh dynamo state
    (compiled functions of different modes coexist: dynamo guards on the backend)."""
    _reset_torch()
    return [make_inductor(model, args, device, mode) for mode in modes]


def make_inductor(model, args, device: str, mode: str = "default") -> dict:
    """torch.compile(model, mode=mode) with Inductor; the first call compiles. With CUDA graphs
    (reduce-overhead, max-autotune) the graph is recorded in the calls that follow (warm-up)."""
    import torch

    entry = _blank(TORCH_COMPILE_MODES[mode])
    try:
        import torch._dynamo
        from torch._inductor import metrics

        import torch._functorch.config as functorch_config
        import torch._inductor.config as inductor_config

        # Cold compiles, as braze's are: warm caches would hide most of the time (and the
        # generated-kernel count, which is only counted when code is generated). On the CPU,
        # compile in-process: a pool of compile workers starting up in the background steals
        # the cores the measurement that follows runs on.
        settings = [(inductor_config, "fx_graph_cache", False), (functorch_config, "enable_autograd_cache", False)]
        if device == "cpu":
            settings.append((inductor_config, "compile_threads", 1))
        for module, key, value in settings:
            if hasattr(module, key):  # torch versions differ (2.11 on the GPU host, 2.13 here)
                setattr(module, key, value)
        metrics.reset()
        held = _Held(device)
        compiled = torch.compile(model) if mode == "default" else torch.compile(model, mode=mode)
        t0 = time.perf_counter()
        with torch.no_grad():
            compiled(*args)
        if device == "cuda":
            torch.cuda.synchronize()
        entry["compile_seconds"] = round(time.perf_counter() - t0, 3)
        entry["_generated_kernels"] = int(metrics.generated_kernel_count)
        entry["_fn"] = compiled
        entry["_torch"] = True
        entry["runtime"] = "torch"
        entry["held_mib"] = held.after(compiled, args)
    except Exception as e:
        entry.update(status="error", error=_error_text(e))
    return entry


def make_eager(model) -> dict:
    entry = _blank("eager")
    entry.update(_fn=model, _torch=True, compile_seconds=0.0, runtime="torch")
    return entry


class _Held:
    """Device memory a contender holds between calls (weights it copied, CUDA graph pools,
    static buffers): torch's allocator's bytes in use after it was made and called a few times
    (CUDA graphs are recorded on the calls after the first), outputs dropped, against those
    before. On CUDA only; measured as each contender is made, so it counts only its own."""

    def __init__(self, device: str):
        self.cuda = device == "cuda"
        try:
            self.before = _torch_held() if self.cuda else 0
        except Exception:
            self.cuda = False

    def after(self, fn, args, calls: int = 2) -> float | None:
        if not self.cuda:
            return None
        import torch

        with torch.no_grad():
            for _ in range(calls):
                fn(*args)
        try:
            return round(max(0, _torch_held() - self.before) / 2**20, 3)
        except Exception:  # evidence beside the benchmark: a failure here is no figure, not an error
            return None


def _held_or_none(held: _Held, compiled, args) -> float | None:
    """Held memory of a braze module on torch's allocator (its launcher's weights); None for
    iree.runtime (IREE's own allocator statistics give that figure) or when the call fails
    (measure() records the failure)."""
    try:
        return held.after(compiled, args) if compiled.runtime_for(*args) == "launch" else None
    except Exception:
        return None


def _torch_held() -> int:
    """Bytes torch's allocator holds for live tensors in its shared pool, plus every segment of
    the private pools CUDA graphs allocate from (a graph's intermediates stay there between
    replays, though no tensor is live: memory_allocated() does not count them)."""
    import torch

    _torch_allocated()
    held = 0
    for segment in torch.cuda.memory_snapshot():
        private = tuple(segment.get("segment_pool_id") or (0, 0)) != (0, 0)
        held += segment["total_size"] if private else segment["allocated_size"]
    return held


def _torch_allocated() -> int:
    import gc

    import torch

    gc.collect()
    torch.cuda.synchronize()
    return torch.cuda.memory_allocated()


def from_compiled(name: str, compiled, compile_seconds: float | None = None) -> dict:
    """An IREE contender from a braze.CompiledModule (compiled here or loaded from an artifact)."""
    entry = _blank(name)
    report = compiled.report
    stages = {k: round(v, 3) for k, v in report.stage_seconds.items()}
    entry.update(
        _fn=compiled, _torch=False, compile_stages=stages,
        compile_seconds=round(compile_seconds if compile_seconds is not None else report.compile_seconds, 3),
        kernels=report.dispatch_count, kernels_method="IREE stream dispatch count (report.dispatch_count)",
    )
    return entry


def runtime_of(name: str) -> str | None:
    """The runtime each IREE contender is run with: the raw toolchain is iree.runtime; braze
    takes its default (the CUDA launcher where the module has a plan and torch has the GPU)."""
    return "iree" if name == "iree" else None


def compile_iree(name: str, model, args, device: str, target: str | None) -> tuple[dict, object]:
    import braze

    try:
        t0 = time.perf_counter()
        compiled = braze.compile(model, *args, device=device, target=target, fusion=(name == "braze"),
                                 runtime=runtime_of(name), cache=False)  # the bench times cold compiles
        wall = time.perf_counter() - t0
        return from_compiled(name, compiled, wall), compiled
    except Exception as e:
        entry = _blank(name)
        entry.update(status="error", error=_error_text(e))
        return entry, None


# -- measuring one workload --------------------------------------------------------------


def measure(workload, device: str, args, contenders: list[dict], reps: int | None, budget_s: float,
            copy_gbs: float | None, min_reps: int) -> dict:
    """Check numerics, count kernels, time all ready contenders round robin; fill their entries."""
    import torch

    timer = timing.Timer(device)
    by_name = {c["name"]: c for c in contenders}
    eager = by_name["eager"]
    with torch.no_grad():
        reference = [t.float() for t in _flat(eager["_fn"](*args))]
    ready = []
    for c in contenders:
        if c["status"] != "ok":
            continue
        if not c["_torch"]:
            c["runtime"] = c["_fn"].runtime_for(*args)
            c["_torch"] = c["runtime"] == "launch"  # on torch's stream: timed as torch's calls are
        try:
            with torch.no_grad():
                out = [t.float() for t in _flat(c["_fn"](*args))]
            if len(out) != len(reference):
                raise RuntimeError(f"{len(out)} outputs, eager has {len(reference)}")
            # braze.accuracy's metric: a NaN or inf eager does not have is an infinite error
            c["max_rel_err"] = max_error(out, reference, floor=0.0)
            c["max_abs_err"] = max(float((o.to(r.device) - r).abs().max()) for o, r in zip(out, reference)) \
                if c["max_rel_err"] < float("inf") else float("inf")
            if c["_torch"]:
                c["kernels"], c["kernels_method"] = torch_kernels(
                    c["_fn"], args, device, extra=c.get("_generated_kernels"))
            ready.append(c)
        except Exception as e:
            c.update(status="error", error="run failed: " + _error_text(e))

    def call(c) -> float:
        with torch.no_grad():
            return timer.event_call(c["_fn"], args) if c["_torch"] else timer.sync_call(c["_fn"], args)

    for _ in range(3):  # warm-up: caches, allocator pools, lazy initialization, graph recording
        for c in ready:
            call(c)
    if device == "cuda":
        for c in ready:
            _memory(c, args)
    if reps is None:
        round_s = sum(call(c) for c in ready) or 1e-6
        reps = int(max(min_reps, min(1000, budget_s / round_s)))
    samples = {c["name"]: [] for c in ready}
    for _ in range(reps):
        for c in ready:
            samples[c["name"]].append(call(c))
    for c in ready:
        c["latency_ms"] = summarize(samples[c["name"]])
        c["reps"] = reps
    nbytes = None
    if workload.memory_bound:
        model = eager["_fn"]
        with torch.no_grad():
            outs = _flat(model(*args))
        from braze.testing.zoo import min_bytes

        nbytes = min_bytes(args, outs, model)
        for c in ready:
            gbs = nbytes / (c["latency_ms"]["median"] / 1000.0) / 1e9
            c["bandwidth_gbs"] = round(gbs, 2)
            c["bandwidth_fraction"] = round(gbs / copy_gbs, 4) if copy_gbs else None
    base = eager.get("latency_ms")
    for c in contenders:
        if base and c.get("latency_ms"):
            c["speedup_vs_eager"] = round(base["median"] / c["latency_ms"]["median"], 4)
    return {
        "name": workload.name,
        "description": workload.description,
        "dtype": workload.dtype,
        "shapes": workload.describe_shapes(device),
        "memory_bound": workload.memory_bound,
        "min_bytes": nbytes,
        "contenders": {c["name"]: {k: c.get(k) for k in ("name",) + METRICS} for c in contenders},
    }


def _memory(c: dict, args) -> None:
    """Peak device memory of one call above what was in use before it (outputs and
    intermediates), and memory held between calls. torch's allocator statistics for contenders
    on torch's stream; for iree.runtime, IREE's allocator statistics (it has no peak reset: the
    bytes it allocated during the call, an upper bound of the call's peak)."""
    import torch

    try:
        with torch.no_grad():
            if c["runtime"] == "iree":
                stats = c["_fn"].program.device.allocator
                if not stats.has_statistics:
                    c["memory_method"] = "none: this iree.runtime build keeps no allocator statistics"
                    return
                s0 = stats.statistics
                torch_before = _torch_allocated()
                torch.cuda.reset_peak_memory_stats()
                out = c["_fn"](*args)
                torch.cuda.synchronize()
                s1 = stats.statistics
                iree_bytes = s1["device_bytes_allocated"] - s0["device_bytes_allocated"]
                torch_bytes = torch.cuda.max_memory_allocated() - torch_before
                del out
                c["peak_call_mib"] = round((iree_bytes + max(0, torch_bytes)) / 2**20, 3)
                c["memory_method"] = ("IREE device bytes allocated during the call + torch's peak above "
                                      "its use before it")
                live = s1["device_bytes_allocated"] - s1["device_bytes_freed"]
                c["held_mib"] = round(live / 2**20, 3)  # all of this device's live IREE buffers
                return
            before = _torch_allocated()
            torch.cuda.reset_peak_memory_stats()
            out = c["_fn"](*args)
            torch.cuda.synchronize()
            peak = torch.cuda.max_memory_allocated() - before
            del out
            c["peak_call_mib"] = round(max(0, peak) / 2**20, 3)
            c["memory_method"] = "torch.cuda.max_memory_allocated during the call minus memory_allocated before it"
    except Exception as e:  # memory figures are evidence beside the benchmark, not the benchmark
        c["memory_method"] = f"failed: {_error_text(e)}"


# -- run context -------------------------------------------------------------------------


def machine_info(device: str) -> dict:
    info = {"hostname": platform.node(), "platform": platform.platform(), "cpu": _cpu_name(),
            "cpu_count": os.cpu_count(), "load_avg_at_start": [round(x, 2) for x in os.getloadavg()]}
    if device == "cuda":
        import torch

        info["gpu"] = torch.cuda.get_device_name(0)
        info["gpu_capability"] = "sm_%d%d" % torch.cuda.get_device_capability(0)
    return info


def _cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def versions() -> dict:
    import importlib.metadata as md

    found = {"python": platform.python_version()}
    for dist in ("braze", "torch", "torch-mlir", "iree-base-compiler", "iree-base-runtime", "triton", "numpy"):
        try:
            found[dist] = md.version(dist)
        except md.PackageNotFoundError:
            pass
    return found


def _header(device: str, target: str | None, settings: dict, copy_gbs: float | None) -> dict:
    return {
        "schema": SCHEMA,
        "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "device": device,
        "target": target,
        "machine": machine_info(device),
        "versions": versions(),
        "git_commit": _git_commit(),
        "copy_bandwidth_gbs": round(copy_gbs, 2) if copy_gbs else None,
        "settings": settings,
        "workloads": [],
    }


def _git_commit() -> str | None:
    """The braze checkout's commit (with '+dirty' when it has local changes), if it is one."""
    import subprocess

    root = Path(__file__).resolve().parent.parent
    try:
        head = subprocess.run(["git", "-C", str(root), "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return (head + ("+dirty" if dirty else "")) or None


def _torch_device(device: str) -> str:
    return "cuda" if device == "cuda" else "cpu"


def _default_budget(device: str, quick: bool) -> tuple[float, int]:
    if device == "cpu":
        return (1.0, 5) if quick else (4.0, 10)
    return (1.0, 20) if quick else (2.0, 50)


# -- `braze bench` (compile and measure here) --------------------------------------------


def bench_here(args) -> int:
    from braze.testing.zoo import select

    device = args.device
    names, generations = _split_generation(args.workloads, device)
    workloads = select(names, device, args.quick, args.batch_scale) if names or not generations else []
    if device == "cpu":
        set_threads(args.threads)
    budget, min_reps = _default_budget(device, args.quick)
    copy_gbs = copy_bandwidth(_torch_device(device))
    result = _header(device, args.target, {"reps": args.reps, "budget_s": budget, "quick": args.quick,
                                           "threads": args.threads, "mode": "local",
                                           "cpu_driver": _cpu_driver(device, args.threads),
                                           "torch_compile_modes": _modes(args.torch_compile_modes, device)},
                     copy_gbs)
    modes = _modes(args.torch_compile_modes, device)
    steps = len(workloads) * (len(modes) + 3)
    step = 0
    for w in workloads:
        model, cpu_args = w.build(device)
        tdev = _torch_device(device)
        model_dev = model.to(tdev)
        dev_args = [a.to(tdev) for a in cpu_args]
        contenders = [make_eager(model_dev)]
        _reset_torch()
        for mode in modes:
            step += 1
            _progress(f"[{step}/{steps}] compiling {w.name} (torch.compile {mode})...")
            entry = make_inductor(model_dev, dev_args, tdev, mode)
            if entry["status"] != "ok":
                _progress(f"    torch.compile {mode} failed: {entry['error'][:200]}")
            contenders.append(entry)
        for name in ("iree", "braze"):
            step += 1
            _progress(f"[{step}/{steps}] compiling {w.name} ({name})...")
            held = _Held(device)
            entry, compiled = compile_iree(name, model.to("cpu"), cpu_args, device, args.target)
            model_dev = model.to(tdev)
            if compiled is not None:
                entry["held_mib"] = _held_or_none(held, compiled, dev_args)
            if entry["status"] != "ok":
                _progress(f"    {name} failed: {entry['error'][:200]}")
            contenders.append(entry)
        step += 1
        _progress(f"[{step}/{steps}] measuring {w.name} ({w.describe_shapes(device)})...")
        contenders[0]["_fn"] = model_dev
        row = measure(w, device, dev_args, contenders, args.reps, budget, copy_gbs, min_reps)
        result["workloads"].append(row)
        del contenders
        _reset_torch()
    if generations:
        from . import bench_generate

        result["generate"] = bench_generate.bench_here(generations, device, args.target, copy_gbs, modes)
    return _finish(result, args)


def _split_generation(text: str | None, device: str):
    """(--workloads names for the zoo, or None for its default suite; the generation workloads)."""
    from braze.testing import generation

    names = _names(text)
    if not names:
        return None, []
    others = [n for n in names if not generation.is_generation(n)]
    return others, generation.parse([n for n in names if generation.is_generation(n)], device)


def _names(text: str | None) -> list[str] | None:
    return [n.strip() for n in text.split(",") if n.strip()] if text else None


# -- build / run (compile here, measure on the GPU host) ---------------------------------


def bench_build(args) -> int:
    import torch

    from braze.testing.zoo import checksum, select

    device = args.device
    out = Path(args.dir)
    names, generations = _split_generation(args.workloads, device)
    if generations:
        from . import bench_generate

        bench_generate.build(generations, out, device, args.target)
        if not names:
            return 0
    staging = out / "_staging"
    staging.mkdir(parents=True, exist_ok=True)
    workloads = select(names, device, args.quick, args.batch_scale)
    built = ("braze",) if args.skip_iree else ("iree", "braze")
    entries = []
    steps = len(workloads) * len(built)
    step = 0
    for w in workloads:
        model, cpu_args = w.build(device)
        with torch.no_grad():
            reference = _flat(model(*cpu_args))
        entry = {
            "workload": w.name, "size_device": device, "shapes": w.describe_shapes(device),
            "weights_checksum": checksum(list(model.parameters()) + list(model.buffers())),
            "inputs_checksum": checksum(cpu_args),
            "reference_checksum": checksum(reference),
            "artifacts": {},
        }
        for name in built:
            step += 1
            _progress(f"[{step}/{steps}] compiling {w.name} ({name}) for {device} {args.target or ''}...")
            result, compiled = compile_iree(name, model, cpu_args, device, args.target)
            art = {k: result[k] for k in ("status", "error", "compile_seconds", "compile_stages", "kernels")}
            if compiled is not None:
                fname = f"{w.name}-{name}.braze"
                compiled.save(staging / fname, overwrite=True)
                art["file"] = fname
                art["bytes"] = (staging / fname).stat().st_size
            else:
                _progress(f"    {name} failed: {result['error'][:200]}")
            entry["artifacts"][name] = art
        entries.append(entry)
    groups = plan_groups(entries, args.group_mib * 1024 * 1024)
    for old in out.glob("group-*"):
        if old.is_dir():
            shutil.rmtree(old)
    header = {"schema": SCHEMA + "-manifest", "device": device, "target": args.target,
              "built": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
              "versions": versions(), "machine": machine_info("cpu")}
    for i, group in enumerate(groups, 1):
        gdir = out / f"group-{i}"
        gdir.mkdir()
        for entry in group:
            for art in entry["artifacts"].values():
                if art.get("file"):
                    os.replace(staging / art["file"], gdir / art["file"])
        manifest = dict(header, group=i, groups=len(groups), workloads=group)
        (gdir / "manifest.json").write_text(json.dumps(manifest, indent=2))
        size = sum(f.stat().st_size for f in gdir.iterdir())
        names = ", ".join(f"{e['workload']}({'+'.join(e['artifacts'])})" for e in group)
        print(f"{gdir}: {size / 2**20:.1f} MiB: {names}")
        if size > args.group_mib * 1024 * 1024:
            print(f"  warning: one artifact alone is over --group-mib {args.group_mib:g}", file=sys.stderr)
    shutil.rmtree(staging, ignore_errors=True)
    return 0


def plan_groups(entries: list[dict], limit: float) -> list[list[dict]]:
    """Pack workloads into groups of at most `limit` bytes (first fit, largest first).

    A workload whose two artifacts together exceed the limit is split into one entry per
    artifact, so each group stays small enough to copy to the GPU host on its own.
    """
    units = []
    for e in entries:
        size = sum(a.get("bytes", 0) for a in e["artifacts"].values())
        if size <= limit or len(e["artifacts"]) == 1:
            units.append((size, e))
            continue
        for name, art in e["artifacts"].items():
            units.append((art.get("bytes", 0), dict(e, artifacts={name: art})))
    units.sort(key=lambda u: -u[0])
    groups: list[tuple[float, list[dict]]] = []
    for size, e in units:
        for i, (used, members) in enumerate(groups):
            if used + size <= limit:
                members.append(e)
                groups[i] = (used + size, members)
                break
        else:
            groups.append((size, [e]))
    return [members for _, members in groups]


def _manifests(directory: Path, missing_ok: bool = False) -> list[Path]:
    if (directory / "manifest.json").exists():
        return [directory / "manifest.json"]
    found = sorted(directory.glob("group-*/manifest.json"), key=lambda p: int(p.parent.name.split("-")[1]))
    if not found and not missing_ok:
        from braze.errors import ArtifactError

        raise ArtifactError(f"{directory} has no manifest.json and no group-*/manifest.json; "
                            "make it with `braze bench build DIR`")
    return found


def bench_run(args) -> int:
    import torch

    import braze
    from braze.testing.zoo import checksum, workload

    from . import bench_generate

    directory = Path(args.dir)
    generating = bench_generate.has_artifacts(directory)
    found = _manifests(directory, missing_ok=generating)
    manifests = [json.loads(p.read_text()) | {"_dir": p.parent} for p in found]
    if not manifests:  # generation only
        manifests = [json.loads((directory / "generate" / "manifest.json").read_text()) | {"workloads": []}]
    device = manifests[0]["device"]
    tdev = _torch_device(device)
    if device == "cpu":
        set_threads(args.threads)
    budget, min_reps = _default_budget(device, args.quick)
    modes = _modes(args.torch_compile_modes, device)
    copy_gbs = copy_bandwidth(tdev)
    result = _header(device, manifests[0].get("target"),
                     {"reps": args.reps, "budget_s": budget, "quick": args.quick, "mode": "artifacts",
                      "torch_compile_modes": modes,
                      "threads": args.threads, "cpu_driver": _cpu_driver(device, args.threads),
                      "built": manifests[0].get("built"), "build_versions": manifests[0].get("versions")},
                     copy_gbs)
    # One workload's artifacts may sit in two groups (the build splits big ones): measure
    # them together when both groups are here.
    jobs: dict[str, tuple[dict, dict[str, tuple[Path, dict]]]] = {}
    for m in manifests:
        for e in m["workloads"]:
            entry, arts = jobs.setdefault(e["workload"], (e, {}))
            for name, art in e["artifacts"].items():
                arts[name] = (m["_dir"], art)
    only = _names(args.workloads)
    if only:
        jobs = {k: v for k, v in jobs.items() if k in only}
    if generating:
        result["generate"] = bench_generate.run(directory, only, copy_gbs, modes)
    for k, (e, arts) in enumerate(jobs.values(), 1):
        w = workload(e["workload"])
        _progress(f"[{k}/{len(jobs)}] {w.name}: torch.compile, loading artifacts, measuring...")
        model, cpu_args = w.build(e["size_device"])
        notes = []
        if abs(checksum(list(model.parameters()) + list(model.buffers())) - e["weights_checksum"]) > 1e-3 * (
                1 + abs(e["weights_checksum"])):
            notes.append("weights differ from the build (seeded init changed?); errors vs eager are meaningless")
        if abs(checksum(cpu_args) - e["inputs_checksum"]) > 1e-3 * (1 + abs(e["inputs_checksum"])):
            notes.append("inputs differ from the build")
        model = model.to(tdev)
        dev_args = [a.to(tdev) for a in cpu_args]
        contenders = [make_eager(model)] + make_inductors(model, dev_args, tdev, modes)
        for name in ("iree", "braze"):
            if name not in arts:
                continue
            folder, art = arts[name]
            if art.get("file") is None:
                entry = _blank(name)
                entry.update(status="error", error="build failed: " + str(art.get("error")))
            else:
                try:
                    held = _Held(device)
                    loaded = braze.load(folder / art["file"], device=device, runtime=runtime_of(name))
                    entry = from_compiled(name, loaded, art.get("compile_seconds"))
                    entry["held_mib"] = _held_or_none(held, loaded, dev_args)
                except Exception as ex:
                    entry = _blank(name)
                    entry.update(status="error", error="load failed: " + _error_text(ex))
            contenders.append(entry)
        row = measure(w, device, dev_args, contenders, args.reps, budget, copy_gbs, min_reps)
        if notes:
            row["notes"] = notes
            _progress(f"    warning: {'; '.join(notes)}")
        result["workloads"].append(row)
        del contenders, model
        _reset_torch()
        if tdev == "cuda":
            torch.cuda.empty_cache()
    if args.json is None and args.out_dir is None:
        args.json = str(directory / f"results-{device}.json")
    return _finish(result, args)


# -- output: table, chart, files ---------------------------------------------------------


def _fmt(value, spec: str = ".3g") -> str:
    return "—" if value is None else format(value, spec)


def table(result: dict) -> str:
    """A markdown table: one row per workload and contender."""
    lines = [
        f"braze bench — {result['device']}"
        + (f" ({result['target']})" if result.get("target") else "")
        + f", {result['date']}",
        "",
        f"Machine: {_machine_line(result)}  ",
        "Versions: " + ", ".join(f"{k} {v}" for k, v in result.get("versions", {}).items())
        + (f", braze commit {result['git_commit']}" if result.get("git_commit") else "") + "  ",
        f"Copy bandwidth (device to device, measured in this run): {_fmt(result.get('copy_bandwidth_gbs'), '.1f')} GB/s",
        "",
    ]
    if result["workloads"] or not result.get("generate"):
        lines += [
            "| workload | shapes | contender | median ms | p10–p90 ms | reps | kernels | compile s | max rel err | GB/s (% of copy) | MiB per call (held) | speedup vs eager |",
            "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
    for w in result["workloads"]:
        for name in CONTENDERS:
            c = w["contenders"].get(name)
            if c is None:
                continue
            if c["status"] != "ok":
                lines.append(f"| {w['name']} | {w['shapes']} | {name} | error | | | | "
                             f"{_fmt(c.get('compile_seconds'), '.1f')} | | | | {_md_escape(c['error'])[:160]} |")
                continue
            lat = c["latency_ms"]
            bw = "—"
            if c.get("bandwidth_gbs") is not None:
                frac = c.get("bandwidth_fraction")
                bw = f"{c['bandwidth_gbs']:.1f}" + (f" ({frac * 100:.0f}%)" if frac is not None else "")
            lines.append(
                f"| {w['name']} | {w['shapes']} | {name} | {lat['median']:.3f} | {lat['p10']:.3f}–{lat['p90']:.3f} | "
                f"{c['reps']} | {_fmt(c.get('kernels'), 'd') if c.get('kernels') is not None else '—'} | "
                f"{_fmt(c.get('compile_seconds'), '.1f')} | {_fmt(c.get('max_rel_err'), '.1e')} | {bw} | "
                f"{_memory_text(c)} | {_fmt(c.get('speedup_vs_eager'), '.2f')}x |")
    if result["workloads"]:
        lines += ["", "Kernels: " + "; ".join(sorted(_kernel_methods(result))) + "."]
    methods = sorted({f"{n}: {c['memory_method']}" for w in result["workloads"]
                      for n, c in w["contenders"].items() if c.get("memory_method")})
    if methods:
        lines += ["", "Memory (device MiB one call needs above what was in use before it; held between calls): "
                  + "; ".join(methods) + "."]
    if result["workloads"]:
        lines += ["", *summary(result)]
    if result.get("generate"):
        from . import bench_generate

        lines += bench_generate.table(result["generate"])
    return "\n".join(lines)


def _memory_text(c: dict) -> str:
    if c.get("peak_call_mib") is None:
        return "—"
    held = c.get("held_mib")
    return f"{c['peak_call_mib']:.2f}" + (f" ({held:.1f})" if held is not None else "")


def geomean(values: list[float]) -> float | None:
    import math

    values = [v for v in values if v and v > 0]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def summary(result: dict) -> list[str]:
    """Geometric means over the workloads every contender of a comparison ran: each contender
    against eager, and braze against each of the others (ratio > 1: braze is faster)."""
    names = [n for n in CONTENDERS if any(n in w["contenders"] for w in result["workloads"])]

    def median(w, n):
        c = w["contenders"].get(n)
        return c["latency_ms"]["median"] if c and c.get("status") == "ok" and c.get("latency_ms") else None

    lines = ["| geomean over workloads | " + " | ".join(LABELS[n] for n in names) + " |",
             "|---|" + "---:|" * len(names)]
    for base in ["eager"] + ([] if "braze" not in names else ["braze"]):
        cells = []
        for n in names:
            pairs = [(median(w, base), median(w, n)) for w in result["workloads"]]
            pairs = [(b, x) for b, x in pairs if b and x]
            if base == "eager":
                g = geomean([b / x for b, x in pairs])  # speedup of n over eager
            else:
                g = geomean([x / b for b, x in pairs])  # braze's speedup over n
            wins = sum((b / x if base == "eager" else x / b) > 1 for b, x in pairs)
            cells.append(f"{g:.2f}x ({wins}/{len(pairs)})" if g else "—")
        title = "speedup over torch eager (faster on)" if base == "eager" else "braze's speedup over it (braze faster on)"
        lines.append(f"| {title} | " + " | ".join(cells) + " |")
    return lines


def _kernel_methods(result: dict) -> set[str]:
    found = set()
    for w in result["workloads"]:
        for name, c in w["contenders"].items():
            if c.get("kernels_method"):
                found.add(f"{name}: {c['kernels_method']}")
    return found


def _md_escape(text: str) -> str:
    return (text or "").replace("|", "\\|").replace("\n", " ")


def _machine_line(result: dict) -> str:
    m = result.get("machine", {})
    text = f"{m.get('cpu', '?')}, {m.get('cpu_count', '?')} cores"
    threads = result.get("settings", {}).get("threads")
    if threads:
        text += f", {threads} thread(s) for torch and IREE"
        if result.get("settings", {}).get("cpu_driver") == "local-sync":
            text += " (braze's and IREE's calls on the calling thread: IREE's local-sync driver)"
    if m.get("load_avg_at_start"):
        text += f", load average {m['load_avg_at_start'][0]} at start / {m.get('load_avg_at_end', ['?'])[0]} at end"
    if m.get("gpu"):
        text = f"{m['gpu']} ({m.get('gpu_capability')}), " + text
    return text


def chart(result: dict, path: str | Path) -> str | None:
    """Write a bar chart of speedup over eager; return a note instead when matplotlib is missing."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return (f"no chart: matplotlib is not installed here (pip install 'braze[bench]'); "
                f"make it elsewhere with `braze bench chart RESULTS.json -o {path}`")
    names = [w["name"] for w in result["workloads"]]
    others = [c for c in CONTENDERS if c != "eager"]
    fig, ax = plt.subplots(figsize=(max(6.0, 1.1 * len(names) + 2), 4.5))
    colors = {"inductor": "#4c72b0", "inductor-ro": "#64b5cd", "inductor-max": "#8172b3",
              "iree": "#999999", "braze": "#dd8452"}
    others = [n for n in others if any((w["contenders"].get(n) or {}).get("speedup_vs_eager")
                                       for w in result["workloads"])]
    width = 0.8 / max(1, len(others))
    for i, name in enumerate(others):
        xs, ys = [], []
        for j, w in enumerate(result["workloads"]):
            c = w["contenders"].get(name) or {}
            if c.get("speedup_vs_eager"):
                xs.append(j + (i - (len(others) - 1) / 2) * width)
                ys.append(c["speedup_vs_eager"])
        ax.bar(xs, ys, width, label=LABELS[name], color=colors[name])
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_yscale("log")
    ax.set_xticks(range(len(names)))
    ax.set_xticklabels(names, rotation=30, ha="right")
    ax.set_ylabel("speedup over torch eager (median latency, log)")
    title = f"braze bench, {result['device']}"
    m = result.get("machine", {})
    title += f" — {m.get('gpu') or m.get('cpu', '')}, {result['date'][:10]}"
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8)
    fig.tight_layout()
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return None


def _finish(result: dict, args) -> int:
    result["machine"]["load_avg_at_end"] = [round(x, 2) for x in os.getloadavg()]
    text = table(result)
    print(text)
    json_path, chart_path, md_path = args.json, args.chart, None
    if args.out_dir:
        stem = Path(args.out_dir) / f"{result['device']}-{result['date'][:10]}"
        json_path = json_path or f"{stem}.json"
        chart_path = chart_path or f"{stem}.png"
        md_path = f"{stem}.md"
    if json_path:
        Path(json_path).parent.mkdir(parents=True, exist_ok=True)
        Path(json_path).write_text(json.dumps(result, indent=2) + "\n")
        _progress(f"wrote {json_path}")
    if md_path:
        Path(md_path).write_text(text + "\n")
        _progress(f"wrote {md_path}")
    if chart_path:
        note = chart(result, chart_path)
        _progress(note or f"wrote {chart_path}")
    return 0


def merge(results: list[dict]) -> dict:
    """One result from several runs (e.g. one per artifact group): contenders of a workload met
    twice are joined; for the torch contenders the first run's measurement is kept."""
    out = dict(results[0], workloads=[])
    index: dict[str, dict] = {}
    for r in results:
        for w in r["workloads"]:
            if w["name"] not in index:
                index[w["name"]] = json.loads(json.dumps(w))
                out["workloads"].append(index[w["name"]])
                continue
            known = index[w["name"]]["contenders"]
            for name, c in w["contenders"].items():
                if name not in known or known[name]["status"] != "ok":
                    known[name] = c
    rows: dict[str, dict] = {}
    for r in results:  # generation rows: the first run's row of a workload is kept
        for row in r.get("generate", []):
            rows.setdefault(row["name"], row)
    if rows:
        out["generate"] = list(rows.values())
    out["settings"] = dict(out.get("settings", {}), merged_from=len(results))
    return out


# -- command line ------------------------------------------------------------------------


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="braze bench", description=__doc__.splitlines()[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="subcommands: build DIR, run DIR, chart JSON -o PNG, table JSON, "
                                       "merge JSON... -o JSON (see `braze bench SUBCOMMAND -h`)")
    p.add_argument("--device", default="cpu", choices=("cpu", "cuda", "vulkan"))
    p.add_argument("--target", default=None, help="compile target (e.g. sm_90, ampere); default: this machine")
    p.add_argument("--batch-scale", type=_scales, default=(1,), metavar="N,...",
                   help="measure each workload at these multiples of its batch (e.g. 1,8)")
    _common(p)
    return p


def _scales(text: str) -> tuple[int, ...]:
    try:
        scales = tuple(int(x) for x in text.split(","))
    except ValueError:
        scales = ()
    if not scales or min(scales) < 1:
        raise argparse.ArgumentTypeError(f"expected positive integers separated by commas (e.g. 1,8), got {text!r}")
    return scales


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--quick", action="store_true", help="a small subset with a short time budget")
    p.add_argument("--workloads", help="comma-separated names (default: the device's suite; 'transformers': "
                   "the production-size transformer layers; name@Nx: N times its batch; "
                   "generate_MODEL_pPROMPT_bBATCH or 'generate': text generation, tokens/s)")
    p.add_argument("--reps", type=_positive, default=None,
                   help="timed reps per contender (default: as many as fit a time budget, at least 5)")
    p.add_argument("--json", help="write the results here")
    p.add_argument("--chart", help="write a PNG chart of speedups here (needs matplotlib)")
    p.add_argument("--out-dir", help="write DEVICE-DATE.json/.md/.png here (e.g. bench/results)")
    p.add_argument("--threads", type=_positive, default=None,
                   help="CPU only: threads for torch and IREE's local-task executor (default: all cores)")
    p.add_argument("--torch-compile-modes", default=None,
                   help="comma-separated torch.compile modes to measure: " + ", ".join(TORCH_COMPILE_MODES)
                        + " (default: all three on CUDA, default elsewhere; none: no torch.compile)")


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expects a whole number of at least 1, got '{text}'")
    return value


def _results(path: str) -> dict:
    """A results JSON written by braze bench; UsageError naming the file when it is not one."""
    try:
        data = json.loads(Path(path).read_text())
    except OSError as e:
        raise UsageError(f"cannot read results file '{path}': {e.strerror or e}") from None
    except ValueError as e:
        raise UsageError(f"'{path}' is not JSON ({e}); give a results file written by braze bench --json") from None
    if not isinstance(data, dict) or data.get("schema") != SCHEMA or not isinstance(data.get("workloads"), list):
        raise UsageError(f"'{path}' is not a braze bench results file (schema {SCHEMA}); "
                         "give one written by braze bench --json")
    try:  # the table reads every field the other subcommands read: one check for all of them
        table(data)
    except (KeyError, TypeError, AttributeError, ValueError, IndexError) as e:
        raise UsageError(f"'{path}' is not a whole braze bench results file ({type(e).__name__}: {e}); "
                         "give one written by braze bench --json") from None
    return data


def _cpu_driver(device: str, threads: int | None) -> str | None:
    """The IREE driver braze's CPU programs run on with these threads (braze.set_cpu_threads)."""
    if device != "cpu":
        return None
    from braze.runtime.cpu import cpu_driver_for

    return cpu_driver_for(threads)


def set_threads(n: int | None) -> None:
    """Give torch and braze's CPU programs the same number of threads (before any IREE device
    opens): one thread runs braze's calls on the calling thread (braze.set_cpu_threads)."""
    if not n:
        return
    import torch

    import braze

    torch.set_num_threads(n)
    braze.set_cpu_threads(n)


def main(argv: list[str] | None = None) -> int:
    try:
        return _main(list(sys.argv[1:] if argv is None else argv))
    except UsageError as e:
        print(f"braze bench: error: {e}", file=sys.stderr)
        return 2
    except BrazeError as e:
        print(f"braze bench: error: {e}", file=sys.stderr)
        return 1


def _main(argv: list[str]) -> int:
    os.environ.setdefault("TORCHINDUCTOR_FX_GRAPH_CACHE", "0")
    os.environ.setdefault("TORCHINDUCTOR_AUTOGRAD_CACHE", "0")
    warnings.filterwarnings("ignore", category=FutureWarning)
    warnings.filterwarnings("ignore", category=DeprecationWarning)
    sub = argv[0] if argv else None
    if sub == "build":
        p = argparse.ArgumentParser(prog="braze bench build", description="compile artifacts for another machine")
        p.add_argument("dir")
        p.add_argument("--device", default="cuda", choices=("cpu", "cuda", "vulkan"))
        p.add_argument("--target", default=None, help="e.g. sm_90 for an H200, ampere for Vulkan")
        p.add_argument("--workloads")
        p.add_argument("--quick", action="store_true")
        p.add_argument("--group-mib", type=float, default=DEFAULT_GROUP_MIB,
                       help=f"most MiB of artifacts per group folder (default {DEFAULT_GROUP_MIB:g})")
        p.add_argument("--batch-scale", type=_scales, default=(1,), metavar="N,...",
                       help="build each workload at these multiples of its batch (e.g. 1,8: 'name@8x')")
        p.add_argument("--skip-iree", action="store_true",
                       help="build braze's artifact only, not raw IREE's (big workloads: half the transfer)")
        args = p.parse_args(argv[1:])
        if args.device != "cpu" and args.target is None:
            p.error("--target is needed to compile for another machine (e.g. --target sm_90)")
        return bench_build(args)
    if sub == "run":
        p = argparse.ArgumentParser(prog="braze bench run", description="measure artifacts made by `bench build`")
        p.add_argument("dir")
        _common(p)
        return bench_run(p.parse_args(argv[1:]))
    if sub == "chart":
        p = argparse.ArgumentParser(prog="braze bench chart")
        p.add_argument("results")
        p.add_argument("-o", "--output", required=True)
        a = p.parse_args(argv[1:])
        result = _results(a.results)
        try:
            note = chart(result, a.output)
        except OSError as e:
            raise BrazeError(f"cannot write chart '{a.output}': {e.strerror or e}") from None
        print(note or f"wrote {a.output}", file=sys.stderr)
        return 1 if note else 0
    if sub == "table":
        p = argparse.ArgumentParser(prog="braze bench table")
        p.add_argument("results")
        print(table(_results(p.parse_args(argv[1:]).results)))
        return 0
    if sub == "merge":
        p = argparse.ArgumentParser(prog="braze bench merge")
        p.add_argument("results", nargs="+")
        p.add_argument("-o", "--output", required=True)
        a = p.parse_args(argv[1:])
        merged = merge([_results(r) for r in a.results])
        from braze.fileutil import write_atomically

        try:  # OUT is replaced whole or left as it was
            write_atomically(a.output, (json.dumps(merged, indent=2) + "\n").encode(), overwrite=True,
                             regular_only=False)
        except OSError as e:
            raise BrazeError(f"cannot write '{a.output}': {e.strerror or e}") from None
        print(table(merged))
        return 0
    args = _parser().parse_args(argv)
    return bench_here(args)


if __name__ == "__main__":
    sys.exit(main())
