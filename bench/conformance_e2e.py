"""Run torch-mlir's e2e conformance suite (~1,800 small modules) through braze.compile on this
machine's CPU, and count what passes (issue 39's goal: at least 1,760).

    git -C TORCH_MLIR archive HEAD projects/pt1/python/torch_mlir_e2e_test | tar -x -C /tmp/e2e
    python bench/conformance_e2e.py --suite /tmp/e2e/projects/pt1/python --jobs 2 -o results.jsonl
    python bench/conformance_e2e.py --summary results.jsonl

Each test's module is called as its own test function calls it (the first call's inputs), in
eager for the golden result and then compiled by braze (`--unfused`: fusion=False) and called
on the same inputs; it passes as torch-mlir's own harness passes a result: the same structure,
dtypes and shapes, and torch.allclose(rtol=1e-3, atol=1e-7, equal_nan=True). Tests run in worker
processes (a crash or a hang costs its test, not the run: a worker that dies or stalls past
--timeout is replaced). Outcomes: pass, mismatch, braze:<ErrorClass> (a BrazeError: braze
refused it with its own error), raw:<Exception> (anything else: a defect of braze's),
crash, timeout, eager-fails (the module fails in eager PyTorch here; not counted).

`--raw` runs the raw toolchain instead, for a side-by-side count (issue 39: no module the raw
toolchain runs may fail in braze): torch-mlir's `fx.export_and_import` to linalg-on-tensors, IREE's
compiler for llvm-cpu (host CPU, its default flags: float64 demoted to float32) and iree.runtime,
with no braze code in between; its results are cast to the golden dtypes (the demotion's float32
passes for float64 where the values agree). Outcomes then read raw-error:<Exception>.

On a GPU (issue 39's CUDA count), compile here and run there: `--device cuda --target sm_90
--save DIR` compiles each module (braze, or the raw toolchain with --raw, its IREE target cuda)
and writes DIR/NAME.braze or DIR/NAME.vmfb with DIR/NAME.pt (the call's arguments and eager's
golden result, computed here on the CPU) and DIR/compile.jsonl (each test's compile outcome);
on the GPU host, `--load DIR -o results.jsonl` runs each saved module on the GPU (iree.runtime and
braze's runtime only: no IREE compiler there), compares it with the golden result as above, and
counts the compile failures with the run outcomes. Where NAME.pt was left behind (too large to
carry), `--suite` there makes the arguments and the golden result again. `--precision highest` (braze's
float32-exact matmuls and convolutions) leaves TF32 out of the comparison.

Needs the suite's sources (torch-mlir's repository), not a torch-mlir build: the modules of the
`multiprocess` package and `torch_mlir._version` it imports are stood in for, and torchvision
where it is not installed (its vision-model tests then fail in eager and are not counted).
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys
import time


def _stand_ins() -> None:
    import multiprocessing
    import types

    import torch
    from packaging import version

    sys.modules.setdefault("multiprocess", multiprocessing)
    fake = types.ModuleType("torch_mlir._version")
    fake.version = version
    fake.torch_version_for_comparison = lambda: version.parse(torch.__version__.split("+")[0])
    sys.modules["torch_mlir._version"] = fake
    try:
        import torchvision  # noqa: F401
    except ImportError:  # its few vision-model tests then fail in eager (not counted)
        vision = types.ModuleType("torchvision")
        vision.__path__ = []
        for part in ("models", "ops", "transforms"):
            setattr(vision, part, types.ModuleType(f"torchvision.{part}"))
            sys.modules[f"torchvision.{part}"] = getattr(vision, part)
        sys.modules["torchvision"] = vision


def _tests(suite: str):
    sys.path.insert(0, suite)
    _stand_ins()
    from torch_mlir_e2e_test.registry import GLOBAL_TEST_REGISTRY
    from torch_mlir_e2e_test.test_suite import register_all_tests

    register_all_tests()
    return GLOBAL_TEST_REGISTRY


def _same(got, golden) -> str:
    """'' where `got` passes as torch-mlir's harness passes a result, else why not."""
    import torch

    if isinstance(golden, (tuple, list)):
        if not isinstance(got, (tuple, list)) or len(got) != len(golden):
            return f"structure: {type(got).__name__} vs {type(golden).__name__} of {len(golden)}"
        for g, e in zip(got, golden):
            why = _same(g, e)
            if why:
                return why
        return ""
    if isinstance(golden, torch.Tensor):
        if not isinstance(got, torch.Tensor):
            return f"a {type(got).__name__} for a tensor"
        if got.dtype != golden.dtype or got.shape != golden.shape:
            return f"{got.dtype}{list(got.shape)} for {golden.dtype}{list(golden.shape)}"
        if golden.dtype.is_floating_point or golden.dtype.is_complex:
            ok = torch.allclose(got.cpu(), golden, rtol=1e-3, atol=1e-7, equal_nan=True)
        else:
            ok = torch.equal(got.cpu(), golden)
        if ok:
            return ""
        if golden.numel() and not golden.dtype.is_complex:
            return f"values (max |diff| {float((got.cpu().double() - golden.double()).abs().max()):.3g})"
        return "values"
    if golden is None:
        return "" if got is None else f"{got!r} for None"
    if isinstance(golden, (int, float, bool)):
        try:
            return "" if abs(float(got) - float(golden)) <= 1e-7 + 1e-3 * abs(float(golden)) else f"{got} for {golden}"
        except (TypeError, ValueError):
            return f"{got!r} for {golden!r}"
    return f"an unexpected golden value {type(golden).__name__}"


def _raw_vmfb(module, args, device: str, target: str | None) -> bytes:
    """torch-mlir's importer + IREE's compiler (its default flags), nothing of braze's."""
    from iree import compiler as ireec
    from torch_mlir import fx

    mlir = fx.export_and_import(module, *args, output_type="linalg-on-tensors", func_name="main")
    if device == "cuda":
        return ireec.compile_str(str(mlir), target_backends=["cuda"], extra_args=[f"--iree-cuda-target={target}"])
    return ireec.compile_str(str(mlir), target_backends=["llvm-cpu"], extra_args=["--iree-llvmcpu-target-cpu=host"])


def _raw_call(vmfb: bytes, device: str):
    """A raw IREE module's `main` through iree.runtime, torch tensors in and out (on the host)."""
    import numpy as np
    import torch
    from iree import runtime as ireert

    config = ireert.Config("cuda" if device == "cuda" else "local-task")
    context = ireert.SystemContext(config=config)
    context.add_vm_module(ireert.VmModule.copy_buffer(context.instance, vmfb))
    main = context.modules.module["main"]

    def call(*call_args):
        out = main(*[a.cpu().numpy() if isinstance(a, torch.Tensor) else a for a in call_args])
        back = lambda o: torch.from_numpy(np.array(o.to_host() if hasattr(o, "to_host") else o))  # noqa: E731
        return tuple(back(o) for o in out) if isinstance(out, (list, tuple)) else back(out)
    return call


def _to(value, device: str):
    """Tensors (in tuples and lists too) moved to `device`; anything else as it is."""
    import torch

    if isinstance(value, torch.Tensor):
        return value.to(device)
    if isinstance(value, (tuple, list)):
        return type(value)(_to(v, device) for v in value)
    return value


def _like(got, golden):
    """`got` cast to the golden dtypes where the structures and shapes agree (--raw)."""
    import torch

    if isinstance(golden, (tuple, list)) and isinstance(got, (tuple, list)) and len(got) == len(golden):
        return type(golden)(_like(g, e) for g, e in zip(got, golden))
    if isinstance(golden, torch.Tensor) and isinstance(got, torch.Tensor) and got.shape == golden.shape:
        return got.to(golden.dtype)
    return got


def _error(e: Exception, mode: str) -> dict:
    import braze

    if mode == "raw":
        return {"outcome": f"raw-error:{type(e).__name__}", "why": " ".join(str(e).split())[:400]}
    if not isinstance(e, braze.BrazeError):
        return {"outcome": f"raw:{type(e).__name__}", "why": " ".join(str(e).split())[:400]}
    return {"outcome": f"braze:{type(e).__name__}", "why": str(e).splitlines()[0][:400] if str(e) else ""}


def _golden(test):
    """(arguments, eager's result) of the suite's test, its module called as its test function
    calls it (the first call's inputs); or the outcome dict where that cannot be had."""
    import copy

    import torch

    class Recorder:
        def __init__(self, module):
            self.module, self.calls = module, []

        def __getattr__(self, name):
            method = getattr(self.module, name)

            def call(*args, **kwargs):
                self.calls.append((name, copy.deepcopy(args), copy.deepcopy(kwargs)))
                return method(*args, **kwargs)
            return call

    from torch_mlir_e2e_test.framework import TestUtils

    try:
        module = test.program_factory()
        recorder = Recorder(module)
        test.program_invoker(recorder, TestUtils())
        name, args, kwargs = recorder.calls[0]
        if name != "forward" or kwargs:
            return {"outcome": "skipped", "why": f"calls {name}() with keyword arguments" if kwargs else f"calls {name}()"}
        module = test.program_factory()
        torch.manual_seed(0)
        with torch.no_grad():
            golden = module.forward(*copy.deepcopy(args))
    except Exception as e:  # noqa: BLE001 - the suite's own module failing in eager here
        return {"outcome": "eager-fails", "why": f"{type(e).__name__}: {str(e)[:200]}"}
    return args, golden


def _call(compiled, args, golden, mode: str, device: str):
    """The compiled module's result on `args` (moved to `device`), back on the host; cast to the
    golden dtypes for the raw toolchain (see --raw)."""
    import copy

    import torch

    torch.manual_seed(0)
    got = compiled(*_to(copy.deepcopy(args), device))
    if device == "cuda":  # a kernel's fault is this test's, not the next one's (CUDA reports it late)
        torch.cuda.synchronize()
    got = _to(got, "cpu")
    return _like(got, golden) if mode == "raw" else got


def _verdict(got, golden) -> dict:
    why = _same(got, golden)
    return {"outcome": "mismatch" if why else "pass", "why": why}


def _run_one(test, mode: str, device: str = "cpu", target: str | None = None, precision: str | None = None,
             save: str | None = None) -> dict:
    import copy

    import torch

    import braze

    made = _golden(test)
    if isinstance(made, dict):
        return made
    args, golden = made
    try:
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if mode == "raw":
                vmfb = _raw_vmfb(test.program_factory(), copy.deepcopy(args), device, target)
                if save:
                    with open(os.path.join(save, f"{test.unique_name}.vmfb"), "wb") as f:
                        f.write(vmfb)
                else:
                    compiled = _raw_call(vmfb, device)
            else:
                compiled = braze.compile(test.program_factory(), *copy.deepcopy(args), fusion=mode == "fused",
                                         cache=False, device=device, target=target, precision=precision)
                if save:
                    compiled.save(os.path.join(save, f"{test.unique_name}.braze"), overwrite=True)
            if save:
                torch.save({"args": args, "golden": golden, "mode": mode},
                           os.path.join(save, f"{test.unique_name}.pt"))
                return {"outcome": "saved", "why": ""}
            got = _call(compiled, args, golden, mode, device)
    except Exception as e:  # noqa: BLE001 - the raw toolchain's errors are its own
        return _error(e, mode)
    return _verdict(got, golden)


def _run_saved(folder: str, name: str, device: str, test=None) -> dict:
    """A module saved by --save, called on `device` (the GPU host's half of a split run). Where
    its arguments and golden result stayed behind (too large to carry), the suite's `test`
    makes them again: the suite's TestUtils seeds torch's CPU generator, and eager's result
    comes from this host's CPU."""
    import torch

    import braze

    mode = "raw" if os.path.exists(os.path.join(folder, f"{name}.vmfb")) else "fused"
    if os.path.exists(os.path.join(folder, f"{name}.pt")):
        saved = torch.load(os.path.join(folder, f"{name}.pt"), weights_only=False)
        args, golden = saved["args"], saved["golden"]
    elif test is None:
        return {"outcome": "not-carried", "why": "its arguments stayed behind and the suite is not here (--suite)"}
    else:
        made = _golden(test)
        if isinstance(made, dict):
            return made
        args, golden = made
    try:
        if mode == "raw":
            with open(os.path.join(folder, f"{name}.vmfb"), "rb") as f:
                compiled = _raw_call(f.read(), device)
        else:
            compiled = braze.load(os.path.join(folder, f"{name}.braze"), device=device)
        got = _call(compiled, args, golden, mode, device)
    except Exception as e:  # noqa: BLE001 - as in _run_one
        return _error(e, mode)
    return _verdict(got, golden)


STICKY = ("ILLEGAL_ADDRESS", "illegal memory access", "ILLEGAL_INSTRUCTION", "LAUNCH_FAILED", "misaligned address")
"""CUDA errors that leave the process's context unusable: every later call in it fails too (the
first CUDA run lost 10 modules to a DeviceError after one illegal address in their worker)."""


def _worker(suite: str, names: list[str], mode: str, out: str, options: dict) -> None:
    by_name = {t.unique_name: t for t in _tests(suite)} if suite else {}
    with open(out, "a") as f:
        for name in names:
            f.write(json.dumps({"test": name, "event": "start"}) + "\n")
            f.flush()
            t0 = time.perf_counter()
            if options.get("load"):
                result = _run_saved(options["load"], name, options["device"], by_name.get(name))
            else:
                result = _run_one(by_name[name], mode, options["device"], options.get("target"),
                                  options.get("precision"), options.get("save"))
            result.update(test=name, event="done", seconds=round(time.perf_counter() - t0, 2))
            f.write(json.dumps(result) + "\n")
            f.flush()
            if options.get("device") == "cuda" and any(sticky in result.get("why", "") for sticky in STICKY):
                return  # the process's CUDA context is lost: the driver starts a fresh worker for the rest


def _drive(suite: str, names: list[str], mode: str, out: str, timeout: float, options: dict) -> None:
    """One worker over `names`, replaced after a crash or a stall (that test recorded as such)."""
    scratch = out + f".{os.getpid()}.{abs(hash(names[0])) if names else 0}.part"
    todo = list(names)
    while todo:
        open(scratch, "w").close()
        cmd = [sys.executable, __file__, "--worker", "--suite", suite or "", "--part", scratch, "--mode", mode,
               "--options", json.dumps(options)]
        proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, text=True)
        proc.stdin.write("\n".join(todo))
        proc.stdin.close()
        last_size, last_change = 0, time.monotonic()
        while proc.poll() is None:
            time.sleep(1)
            size = os.path.getsize(scratch)
            if size != last_size:
                last_size, last_change = size, time.monotonic()
            elif time.monotonic() - last_change > timeout:
                proc.kill()
                proc.wait()
                break
        events = [json.loads(line) for line in open(scratch) if line.strip()]
        done = [e for e in events if e["event"] == "done"]
        with open(out, "a") as f:
            for e in done:
                f.write(json.dumps(e) + "\n")
        finished = {e["test"] for e in done}
        started = [e["test"] for e in events if e["event"] == "start" and e["test"] not in finished]
        if started:
            outcome = "timeout" if proc.returncode is not None and proc.returncode < 0 and \
                time.monotonic() - last_change > timeout else "crash"
            with open(out, "a") as f:
                f.write(json.dumps({"test": started[0], "event": "done", "outcome": outcome,
                                    "why": f"worker exit status {proc.returncode}"}) + "\n")
            finished.add(started[0])
        todo = [n for n in todo if n not in finished]
        if not started and todo and proc.returncode not in (0, None):
            break  # a worker that fails before any test: do not loop
    os.remove(scratch)


def against(path: str, other: str) -> str:
    """The tests `other` (a --raw results file) passes and `path` does not, with path's outcome."""
    mine = {r["test"]: r for r in (json.loads(line) for line in open(path) if line.strip())}
    theirs = {r["test"]: r for r in (json.loads(line) for line in open(other) if line.strip())}
    lost = sorted(t for t, r in theirs.items() if r["outcome"] == "pass" and mine.get(t, {}).get("outcome") != "pass")
    gained = sum(1 for t, r in mine.items() if r["outcome"] == "pass" and theirs.get(t, {}).get("outcome") != "pass")
    lines = [f"{other} passes {sum(r['outcome'] == 'pass' for r in theirs.values())}, {path} "
             f"{sum(r['outcome'] == 'pass' for r in mine.values())}: {len(lost)} passed by the first only, "
             f"{gained} by the second only"]
    for t in lost:
        r = mine.get(t, {"outcome": "missing", "why": ""})
        lines.append(f"  {r['outcome']:28s} {t}: {r.get('why', '')[:240]}")
    return "\n".join(lines)


def summary(path: str) -> str:
    rows = [json.loads(line) for line in open(path) if line.strip()]
    counts = collections.Counter(r["outcome"] for r in rows)
    ran = sum(n for k, n in counts.items() if k not in ("eager-fails", "skipped"))
    lines = [f"{path}: {len(rows)} tests, {counts['pass']} pass of {ran} that run in eager here"]
    for k, n in counts.most_common():
        lines.append(f"  {n:5d}  {k}")
    for r in sorted(rows, key=lambda r: (r["outcome"], r["test"])):
        if r["outcome"] not in ("pass", "eager-fails", "skipped"):
            lines.append(f"  {r['outcome']:28s} {r['test']}: {r.get('why', '')[:240]}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--suite", help="torch-mlir's projects/pt1/python (holding torch_mlir_e2e_test)")
    parser.add_argument("--filter", default="", help="only tests whose name contains this")
    parser.add_argument("--only", help="a file of test names, one a line: run just those")
    parser.add_argument("--unfused", action="store_true", help="braze.compile(fusion=False)")
    parser.add_argument("--raw", action="store_true", help="the raw torch-mlir + IREE toolchain, no braze (see above)")
    parser.add_argument("--mode", help=argparse.SUPPRESS)
    parser.add_argument("--jobs", type=int, default=1, help="worker processes at once")
    parser.add_argument("--timeout", type=float, default=300, help="seconds a test may run")
    parser.add_argument("-o", "--out", help="JSON lines, one a test (appended)")
    parser.add_argument("--summary", help="print the summary of a results file and exit")
    parser.add_argument("--against", help="with --summary: also list the tests this (--raw) results file "
                                          "passes and the summary's does not")
    parser.add_argument("--device", default="cpu", choices=("cpu", "cuda"), help="where the modules run")
    parser.add_argument("--target", help="the GPU to compile for without one here (sm_90)")
    parser.add_argument("--precision", help="braze.compile's precision ('highest': float32-exact, no TF32)")
    parser.add_argument("--save", help="compile only, into this folder (run it with --load where the device is)")
    parser.add_argument("--load", help="run the modules a --save run compiled into this folder")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--options", help=argparse.SUPPRESS)
    parser.add_argument("--part", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.summary:
        print(summary(args.summary))
        if args.against:
            print(against(args.summary, args.against))
        return
    if args.worker:
        _worker(args.suite, [n for n in sys.stdin.read().split("\n") if n],
                args.mode or ("unfused" if args.unfused else "fused"), args.part, json.loads(args.options))
        return
    mode = "raw" if args.raw else "unfused" if args.unfused else "fused"
    options = {"device": args.device, "target": args.target, "precision": args.precision,
               "save": args.save and os.path.abspath(args.save), "load": args.load and os.path.abspath(args.load)}
    if args.save:
        os.makedirs(args.save, exist_ok=True)
        args.out = args.out or os.path.join(args.save, "compile.jsonl")
    if not (args.suite or args.load) or not args.out:
        parser.error("--suite (or --load) and -o are required")
    if args.load:
        compiled = [json.loads(line) for line in open(os.path.join(args.load, "compile.jsonl")) if line.strip()]
        done = {json.loads(line)["test"] for line in open(args.out) if line.strip()} if os.path.exists(args.out) else set()
        with open(args.out, "a") as f:  # the compile side's failures count as they are
            for r in compiled:
                if r["outcome"] != "saved" and r["test"] not in done:
                    f.write(json.dumps(r) + "\n")
        names = [r["test"] for r in compiled if r["outcome"] == "saved"]
    else:
        names = [t.unique_name for t in _tests(args.suite) if args.filter in t.unique_name]
    if args.only:
        wanted = {line.strip() for line in open(args.only) if line.strip()}
        names = [n for n in names if n in wanted]
    if os.path.exists(args.out):
        done = {json.loads(line)["test"] for line in open(args.out) if line.strip()}
        names = [n for n in names if n not in done]
    print(f"{len(names)} tests to run", flush=True)
    import threading

    shares = [names[i::args.jobs] for i in range(args.jobs)]
    threads = [threading.Thread(target=_drive, args=(args.suite, share, mode, args.out, args.timeout, options))
               for share in shares if share]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print(summary(args.out))


if __name__ == "__main__":
    main()
