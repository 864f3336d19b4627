"""braze's CUDA launcher on a GPU host: numerics against iree.runtime and eager, ordering on
torch's streams without host synchronization, CUDA graph capture, and per-call time.

    python bench/launch_check.py build DIR [--workloads tiny,layers]     (here, with the compiler)
    python bench/launch_check.py run DIR [--json out.json]              (on the GPU host)

`run` prints one table per part and exits 1 if any numerics or ordering check fails:
- numerics: every zoo model and the chosen bench workloads, launched and through iree.runtime,
  against eager (the zoo's tolerance) and against each other;
- ordering: a producer that sleeps on the GPU (torch.cuda._sleep) writes the input, braze
  reads it, a consumer reads braze's output, with no host synchronization: on the default
  stream, on a side stream, braze's output freed and its memory reused at once, and (as the
  control that shows the check can fail) iree.runtime with its host wait removed;
- capture: a braze call captured in torch.cuda.graph, replayed on new inputs;
- timing: per-call time of eager, the launcher, iree.runtime, the launcher replayed from a
  CUDA graph, and eager's own graph replay, on a 1024-element chain and on multi-dispatch layers.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ORDERING_TRIALS = 10


def _chain_model():
    """sigmoid(relu(x*2+1))*x-0.5, the bench's chain."""
    import torch

    class ChainModel(torch.nn.Module):
        def forward(self, x):
            return torch.sigmoid(torch.relu(x * 2 + 1)) * x - 0.5

    return ChainModel().eval()


WORKLOAD_SETS = {
    "tiny": [],
    "layers": ["transformer_encoder_bf16", "bert_layer_bf16"],
    "layers_fp32": ["transformer_encoder", "bert_layer", "resnet18"],
}


def build(directory: Path, workloads: list[str]) -> int:
    import torch

    import braze
    from braze.testing.zoo import CASES, WORKLOADS, fresh_like

    directory.mkdir(parents=True, exist_ok=True)
    manifest = {"zoo": [], "chains": {}, "workloads": []}
    for case in CASES:
        model, args, kwargs = case.build()
        args2, kwargs2 = fresh_like((args, kwargs))
        with torch.no_grad():
            expected = model(*args2, **kwargs2)
        torch.save({"args": args2, "kwargs": kwargs2, "expected": expected}, directory / f"{case.name}.pt")
        compiled = braze.compile(model, *args, example_kwargs=kwargs, device="cuda", target="sm_90")
        compiled.save(directory / f"{case.name}.braze", overwrite=True)
        tf32 = any(k["generated"] and k["kernel"].startswith("conv") and " as tf32->" in k["kernel"]
                   for k in compiled.report.kernels)
        manifest["zoo"].append({"name": case.name, "rtol": case.rtol, "plan": compiled.report.launch_plan,
                                "tf32": tf32})
        if tf32:  # float32 convolutions in TF32, as cuDNN by default: also as accurate as float32
            exact = braze.compile(model, *args, example_kwargs=kwargs, device="cuda", target="sm_90",
                                  precision="highest")
            exact.save(directory / f"{case.name}-highest.braze", overwrite=True)
            manifest["zoo"].append({"name": case.name + "-highest", "data": case.name, "rtol": case.rtol,
                                    "plan": exact.report.launch_plan, "tf32": False})
        print(f"{case.name}: {compiled.report.launch_plan}", flush=True)
    for name, n in (("chain1024", 1024), ("chain4m", 1 << 22)):
        compiled = braze.compile(_chain_model(), torch.randn(n), device="cuda", target="sm_90")
        compiled.save(directory / f"{name}.braze", overwrite=True)
        manifest["chains"][name] = n
    for name in workloads:
        model, args = WORKLOADS[name].build("cuda")
        compiled = braze.compile(model, *args, device="cuda", target="sm_90")
        compiled.save(directory / f"bench-{name}.braze", overwrite=True)  # zoo models share names
        manifest["workloads"].append({"name": name, "dispatches": compiled.report.dispatch_count,
                                      "plan": compiled.report.launch_plan})
        print(f"{name}: {compiled.report.launch_plan}", flush=True)
    (directory / "manifest.json").write_text(json.dumps(manifest, indent=1))
    return 0


def _numerics(directory: Path, manifest: dict, rows: list) -> int:
    import torch
    from torch.utils._pytree import tree_leaves, tree_map

    import braze
    from braze.testing.randomgraphs import TF32_ERROR
    from braze.accuracy import max_error

    failures = 0
    for entry in manifest["zoo"]:
        data = torch.load(directory / f"{entry.get('data', entry['name'])}.pt", weights_only=False)
        to_cuda = lambda t: t.cuda() if isinstance(t, torch.Tensor) else t  # noqa: E731
        args, kwargs = tree_map(to_cuda, (data["args"], data["kwargs"]))
        try:
            launched = braze.load(directory / f"{entry['name']}.braze", runtime="launch")
            ireed = braze.load(directory / f"{entry['name']}.braze", runtime="iree")
            got = launched(*args, **kwargs)
            torch.cuda.synchronize()
            ref = ireed(*args, **kwargs)
            error = max_error(got, data["expected"], floor=0.0)
            same = all(torch.equal(a, b) for a, b in zip(tree_leaves(got), tree_leaves(ref)))
            # TF32 products (10-bit mantissas, as cuDNN's by default) against a float32 reference
            rtol = max(entry["rtol"], TF32_ERROR) if entry.get("tf32") else entry["rtol"]
            ok = error <= rtol
            note = "bit-identical to iree.runtime" if same else "differs from iree.runtime"
            if entry.get("tf32"):
                note += f"; TF32 convolutions (torch's cuDNN default): rtol {rtol:g}"
        except Exception as e:  # every failure is a row
            ok, error, note = False, float("nan"), f"{type(e).__name__}: {str(e).splitlines()[0][:100]}"
        failures += not ok
        rows.append((entry["name"], "pass" if ok else "FAIL", f"{error:.1e}", note))
    return failures


def _ordering(directory: Path, rows: list) -> int:
    """Producer -> braze -> consumer on one stream with no host synchronization."""
    import torch

    import braze
    from braze.runtime import program as iree_runtime

    n = 1 << 22
    module = braze.load(directory / "chain4m.braze", runtime="launch")
    plain = braze.load(directory / "chain4m.braze", runtime="iree")
    model = _chain_model()
    failures = 0

    def trial(fn, stream=None, reuse=False) -> bool:
        # New values every trial: a read of stale memory (the last trial's x) must not pass.
        data = torch.randn(n, device="cuda")
        expected = model(data)
        torch.cuda.synchronize()
        x = torch.empty(n, device="cuda")
        torch.cuda._sleep(20_000_000)  # ~10 ms of GPU time before the producer writes x
        x.copy_(data)
        y = fn(x)
        if reuse:
            z = y.clone()
            del y
            junk = torch.empty(n, device="cuda")  # may take y's memory at once
            junk.fill_(7.0)
            y = z
        out = y * 1.0  # the consumer, on the same stream
        torch.cuda.synchronize()
        return torch.allclose(out, expected, atol=1e-5)

    graphed = braze.load(directory / "chain4m.braze", runtime="launch")
    graphed.launcher.graphs = True  # the plan as one CUDA graph, its pointers rewritten per call (plans of 4+ steps)
    cases = [
        ("launcher, default stream", module, None, False),
        ("launcher, side stream", module, torch.cuda.Stream(), False),
        ("launcher, output freed and reused", module, None, True),
        ("launcher's graph replay, default stream", graphed, None, False),
        ("launcher's graph replay, side stream", graphed, torch.cuda.Stream(), False),
        ("launcher's graph replay, output freed and reused", graphed, None, True),
        ("iree.runtime (host wait)", plain, None, False),
    ]
    for label, fn, stream, reuse in cases:
        good = 0
        for _ in range(ORDERING_TRIALS):
            if stream is None:
                good += trial(fn, reuse=reuse)
            else:
                with torch.cuda.stream(stream):
                    good += trial(fn, stream, reuse)
        ok = good == ORDERING_TRIALS
        failures += not ok
        rows.append((label, "pass" if ok else "FAIL", f"{good}/{ORDERING_TRIALS} right", ""))
    # Two calls in flight on two streams launch the same executable graph, the second with its
    # nodes rewritten for its own buffers while the first is still queued behind a sleep: the
    # rewrite must not reach the queued launch (the driver API says it does not).
    a, b = torch.cuda.Stream(), torch.cuda.Stream()

    def two_streams(race: bool) -> bool:
        d1, d2 = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
        e1, e2 = model(d1), model(d2)
        torch.cuda.synchronize()
        with torch.cuda.stream(a):
            torch.cuda._sleep(20_000_000)
            y1 = graphed(d1) * 1.0
        with torch.cuda.stream(b):
            if race:  # the control: stream b changes what the queued first call reads
                d1.copy_(d2)
            y2 = graphed(d2) * 1.0
        torch.cuda.synchronize()
        return torch.allclose(y1, e1, atol=1e-5) and torch.allclose(y2, e2, atol=1e-5)

    good = sum(two_streams(False) for _ in range(ORDERING_TRIALS))
    ok = good == ORDERING_TRIALS
    failures += not ok
    rows.append(("launcher's graph, two streams at once", "pass" if ok else "FAIL",
                 f"{good}/{ORDERING_TRIALS} right", "one executable graph, rewritten"))
    wrong = sum(not two_streams(True) for _ in range(ORDERING_TRIALS))
    rows.append(("control: second stream writes the first call's input", "detected" if wrong else "NOT DETECTED",
                 f"{wrong}/{ORDERING_TRIALS} wrong", "must be wrong to show the check can fail"))
    # Controls that must fail: the check detects a missing order.
    original = iree_runtime.Program.invoke

    def no_wait(self, values, names, storage=None):
        saved = torch.cuda.current_stream

        class _NoSync:
            def synchronize(self):
                pass

        torch.cuda.current_stream = lambda *a, **k: _NoSync()
        try:
            return original(self, values, names, storage)
        finally:
            torch.cuda.current_stream = saved

    iree_runtime.Program.invoke = no_wait
    wrong = sum(not trial(plain) for _ in range(ORDERING_TRIALS))
    iree_runtime.Program.invoke = original
    rows.append(("control: iree.runtime without its host wait", "detected" if wrong else "NOT DETECTED",
                 f"{wrong}/{ORDERING_TRIALS} wrong", "must be wrong to show the check can fail"))
    other = torch.cuda.Stream()
    saved = torch._C._cuda_getCurrentRawStream
    torch._C._cuda_getCurrentRawStream = lambda index: other.cuda_stream
    wrong = sum(not trial(module) for _ in range(ORDERING_TRIALS))
    torch._C._cuda_getCurrentRawStream = saved
    rows.append(("control: launcher on another stream", "detected" if wrong else "NOT DETECTED",
                 f"{wrong}/{ORDERING_TRIALS} wrong", "must be wrong to show the check can fail"))
    return failures


def _capture(directory: Path, rows: list) -> int:
    import torch

    import braze

    module = braze.load(directory / "chain4m.braze", runtime="launch")
    model = _chain_model()
    static = torch.randn(1 << 22, device="cuda")
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(2):
            module(static)  # warm up outside the capture
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = module(static)
    good = 0
    for _ in range(ORDERING_TRIALS):
        fresh = torch.randn(1 << 22, device="cuda")
        static.copy_(fresh)
        graph.replay()
        torch.cuda.synchronize()
        good += torch.allclose(out, model(fresh), atol=1e-5)
    rows.append(("captured in torch.cuda.graph, replayed", "pass" if good == ORDERING_TRIALS else "FAIL",
                 f"{good}/{ORDERING_TRIALS} right", ""))
    return good != ORDERING_TRIALS


def _timing(directory: Path, manifest: dict, rows: list, results: dict) -> None:
    import torch

    import braze
    from braze.tools.timing import interleaved_ms, profiled_kernel_ms
    from braze.testing.zoo import WORKLOADS

    def graph_of(fn, *args):
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                fn(*args)
        torch.cuda.current_stream().wait_stream(side)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            fn(*args)
        return g.replay

    model = _chain_model()
    x = torch.randn(1024, device="cuda")
    launched = braze.load(directory / "chain1024.braze", runtime="launch")
    ireed = braze.load(directory / "chain1024.braze", runtime="iree")
    with torch.no_grad():
        fns = {"eager": lambda: model(x), "braze launch": lambda: launched(x), "braze iree.runtime": lambda: ireed(x),
               "braze launch in a CUDA graph (replay)": graph_of(launched, x),
               "eager in a CUDA graph (replay)": graph_of(model, x)}
        times = interleaved_ms(fns, rounds=15, pace="eager")
    results["chain1024_us"] = {k: round(v * 1000, 2) for k, v in times.items()}
    for k, v in times.items():
        rows.append(("1024-element chain", k, f"{v * 1000:.1f} us", f"{times[k] / times['eager']:.2f}x eager"))
    for entry in manifest["workloads"]:
        model, args = WORKLOADS[entry["name"]].build("cuda")
        model = model.cuda()
        args = [a.cuda() for a in args]
        launched = braze.load(directory / f"bench-{entry['name']}.braze", runtime="launch")
        ireed = braze.load(directory / f"bench-{entry['name']}.braze", runtime="iree")
        with torch.no_grad():
            fns = {"eager": lambda: model(*args), "braze launch": lambda: launched(*args),
                   "braze iree.runtime": lambda: ireed(*args),
                   "braze launch in a CUDA graph (replay)": graph_of(launched, *args)}
            times = interleaved_ms(fns, rounds=15, pace="eager")
        before = dict(launched.launcher.stats)
        kernels = profiled_kernel_ms(lambda: launched(*args))
        stats = {k: launched.launcher.stats[k] - before.get(k, 0) for k in before}
        results[entry["name"] + "_launcher_stats"] = dict(launched.launcher.stats)
        results[entry["name"] + "_ms"] = {k: round(v, 4) for k, v in times.items()}
        results[entry["name"] + "_ms"]["sum of braze's kernels"] = round(kernels, 4)
        for k, v in times.items():
            rows.append((entry["name"], k, f"{v:.3f} ms", f"{times['eager'] / v:.2f}x of eager's speed"))
        rows.append((entry["name"], "sum of braze's kernel times (profiler)", f"{kernels:.3f} ms",
                     f"launch call = {times['braze launch'] / kernels:.2f}x the kernels"))
        total = launched.launcher.stats
        rows.append((entry["name"], "graph nodes rewritten (buffers moved)",
                     f"{total['nodes_rewritten']} in {total['graph_launches']} launches",
                     f"{stats['nodes_rewritten']} in the profiled {stats['graph_launches']}"))


def _table(title: str, header: tuple, rows: list) -> None:
    print(f"\n{title}")
    widths = [max(len(str(r[i])) for r in rows + [header]) for i in range(len(header))]
    print("  ".join(str(h).ljust(w) for h, w in zip(header, widths)))
    for r in rows:
        print("  ".join(str(v).ljust(w) for v, w in zip(r, widths)))


def run(directory: Path, json_path: str | None) -> int:
    manifest = json.loads((directory / "manifest.json").read_text())
    results: dict = {"date": time.strftime("%Y-%m-%d %H:%M")}
    failures = 0
    rows: list = []
    failures += _numerics(directory, manifest, rows)
    _table("numerics: launcher against eager and iree.runtime", ("model", "result", "rel err", "note"), rows)
    results["numerics"] = rows
    rows = []
    failures += _ordering(directory, rows)
    failures += _capture(directory, rows)
    _table("ordering and capture, no host synchronization", ("case", "result", "trials", "note"), rows)
    results["ordering"] = rows
    rows = []
    _timing(directory, manifest, rows, results)
    _table("per call (median of interleaved rounds)", ("work", "contender", "time", "ratio"), rows)
    if json_path:
        Path(json_path).write_text(json.dumps(results, indent=1))
    return 1 if failures else 0


def main(argv: list[str] | None = None) -> int:
    import warnings

    warnings.simplefilter("ignore")
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build")
    b.add_argument("dir", type=Path)
    b.add_argument("--workloads", default="tiny", help="comma-separated: " + ", ".join(WORKLOAD_SETS))
    r = sub.add_parser("run")
    r.add_argument("dir", type=Path)
    r.add_argument("--json")
    args = p.parse_args(argv)
    if args.command == "build":
        names = [w for s in args.workloads.split(",") for w in WORKLOAD_SETS[s]]
        return build(args.dir, names)
    return run(args.dir, args.json)


if __name__ == "__main__":
    sys.exit(main())
