"""Autotune braze's kernel configurations on a GPU: compile here, measure there.

    braze tune build DIR --target sm_90 [--workloads elementwise_chain,...]
                                                        [--matmuls bert_layer,transformer_encoder,...]
        (here, with the compiler) compiles candidates and writes DIR/manifest.json:
        elementwise: each workload once per configuration (fusion-configure-kernels{config=...});
        matmuls: every (batch) matmul signature found in the --matmuls workloads, as a standalone
        `a @ b` of that shape and dtype, once per MatmulConfig candidate
        (fusion-configure-kernels{matmul-config=...}) and once with IREE's default tiles.
                                                        [--kernels gelu_mlp_bf16,bert_layer,...]
        kernels: every generated (Triton) kernel of the --kernels workloads, the whole workload
        compiled once per candidate tile of that kernel (fusion-generate-kernels{tiles=...}: the
        kernel's epilogue and neighbours as in the model), and once with IREE's own kernels.
    braze tune run DIR
        (on the GPU host) times every candidate with CUDA events, checks it against eager
        PyTorch, and writes DIR/winners.json (with torch's time for each matmul beside it).
    braze tune import DIR/winners.json
        (here) stores each winner in the tuning cache (braze.passes.gpu.tuning), keyed by kernel
        signature and target, so every later compile uses it.

(`python -m braze.tools.tune ...` is the same command, for a GPU host without the `braze` script.)

An elementwise candidate forces one configuration on every standalone elementwise kernel of
its workload, so tune workloads with one such kernel each (the elementwise chains).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from braze.accuracy import max_error

from .bench import _positive

CANDIDATES = [
    (threads * thread, thread, threads)
    for thread in (1, 2, 4, 8)
    for threads in (64, 128, 256, 512)
]
"""(workgroup elements, elements per thread, threads per workgroup) tried by default."""


def _read_json(path: Path, made_by: str):
    """The JSON at `path`; UsageError naming the file and the command that makes it otherwise."""
    from braze.errors import UsageError

    try:
        return json.loads(path.read_text())
    except OSError as e:
        raise UsageError(f"cannot read '{path}': {e.strerror or e}; {made_by}") from None
    except ValueError as e:
        raise UsageError(f"'{path}' is not JSON ({e}); {made_by}") from None


def _known_workloads(names: list[str]) -> None:
    from braze.errors import UsageError
    from braze.testing.zoo import WORKLOADS

    unknown = [n for n in names if n not in WORKLOADS]
    if unknown:
        raise UsageError(f"unknown workload(s) {', '.join(unknown)}; known: {', '.join(WORKLOADS)}")


def _signatures(model, args, target: str, collect) -> list[str]:
    """`collect(module_op)` on the model as braze configures it for the target."""
    from braze.compiler import frontend
    from braze.passes import runner

    imported = frontend.import_model(model, tuple(args))
    with imported.context:
        runner.run_pipeline(imported.module, f"fusion-default-pipeline,fusion-configure-kernels{{target={target}}}")
        return collect(imported.module.operation)


def _kernel_signatures(model, args, target: str) -> list[str]:
    from braze.passes.gpu.matchers import configured_signatures

    return _signatures(model, args, target, configured_signatures)


class MatMul:
    """Builds the standalone model for a matmul signature ('matmul_MxNxK_dtype',
    'batch_matmul_BxMxNxK_dtype', 'matmul_tb_...'): inputs a (M x K) and b (K x N), batched when
    B is given; with tb, b is given as N x K and transposed inside the model (a Linear's weight)."""

    def __init__(self, signature: str):
        from braze.passes.gpu.configs import MatmulSignature

        sig = MatmulSignature.parse(signature)
        self.signature = signature
        self.batched, self.transposed, self.dtype = sig.batched, sig.transposed_b, sig.element
        self.batch, self.m, self.n, self.k = sig.batch, sig.m, sig.n, sig.k
        m, n, k = sig.m, sig.n, sig.k
        lead = (sig.batch,) if self.batched else ()
        self.shapes = [lead + (m, k), lead + ((n, k) if self.transposed else (k, n))]

    def build(self, device: str = "cpu"):
        import torch

        transposed = self.transposed

        class Model(torch.nn.Module):
            def forward(self, a, b):
                if transposed:
                    b = b.transpose(-1, -2)
                return torch.bmm(a, b) if a.dim() == 3 else a @ b

        gen = torch.Generator().manual_seed(0)
        dtype = {"f32": torch.float32, "bf16": torch.bfloat16}[self.dtype]
        args = [torch.randn(s, generator=gen).to(dtype).to(device) for s in self.shapes]
        return Model().eval(), args


def _matmul_signatures(model, args, target: str) -> list[str]:
    """Every matmul braze could tile, configured or not (IREE's default is a candidate too)."""
    from braze.passes.gpu.matchers import configured_matmul_signatures

    return _signatures(model, args, target, lambda op: configured_matmul_signatures(op, configured_only=False))


def build_matmuls(directory: Path, target: str, workloads: list[str], manifest: dict) -> None:
    import braze
    from braze.passes.gpu.cost_model import MATMUL_CANDIDATES, choose_matmul_config
    from braze.testing.zoo import WORKLOADS

    signatures: list[str] = []
    for name in workloads:
        model, args = WORKLOADS[name].build("cuda")
        signatures += [s for s in _matmul_signatures(model, args, target) if s not in signatures]
    for sig in signatures:
        mm = MatMul(sig)
        model, args = mm.build()
        batch, m, n, k = mm.batch, mm.m, mm.n, mm.k
        entry = {"kind": "matmul", "signature": sig, "candidates": []}
        for config in MATMUL_CANDIDATES[mm.dtype]:
            if not config.divides(m, n, k):
                continue
            short = config.short()
            pipeline = f"fusion-default-pipeline,fusion-configure-kernels{{target={target} matmul-config={short}}}"
            path = f"{sig}-{short.replace(':', '-')}.braze"
            braze.compile(model, *args, device="cuda", target=target, pipeline=pipeline).save(
                directory / path, overwrite=True)
            entry["candidates"].append({"config": short, "artifact": path})
        pipeline = f"fusion-default-pipeline,fusion-configure-kernels{{target={target} matmuls=false}}"
        braze.compile(model, *args, device="cuda", target=target, pipeline=pipeline).save(
            directory / f"{sig}-iree-default.braze", overwrite=True)
        entry["iree_default"] = f"{sig}-iree-default.braze"
        choice = choose_matmul_config(batch, m, n, k, mm.dtype, target, mm.transposed)
        entry["cost_model"] = choice.short() if choice else None
        manifest["workloads"].append(entry)
        print(f"{sig}: {len(entry['candidates'])} candidates (cost model: {entry['cost_model']})", flush=True)


def _generated_specs(model, args, target: str) -> list:
    """The specs of the generated kernels braze.compile makes for the model (unique, in order)."""
    from braze._mlir import ir
    from braze.compiler import lower
    from braze.irutil import all_ops
    from braze.kernels.spec import ATTR, read_spec

    lowered = lower(model, *args, device="cuda", target=target)
    with lowered.context:
        specs = [read_spec(ir.StringAttr(f.attributes[ATTR]).value)
                 for f in all_ops(lowered.module.operation, "func.func") if ATTR in f.attributes]
    unique = {}
    for spec in specs:
        unique.setdefault(spec.tuning_signature(), spec)
    return list(unique.values())


def build_kernels(directory: Path, target: str, workloads: list[str], manifest: dict) -> None:
    import dataclasses

    import braze
    from braze.errors import KernelResourceError
    from braze.kernels.build import template
    from braze.kernels.spec import tile_text
    from braze.passes import pipelines
    from braze.targets import cuda_sm_count
    from braze.testing.zoo import WORKLOADS

    sms = cuda_sm_count(target)
    for name in workloads:
        model, args = WORKLOADS[name].build("cuda")
        base = pipelines.for_device("cuda", target)  # no tuning cache: candidates against the cost model
        if base.kernels != "on":
            from braze.errors import UsageError

            raise UsageError("tuning generated kernels needs Triton here (pip install 'braze[kernels]')")
        iree = f"{name}-iree-default.braze"
        braze.compile(model, *args, device="cuda", target=target, cache=False,
                      pipeline=dataclasses.replace(base, kernels="off").pipeline_text()).save(
            directory / iree, overwrite=True)
        for spec in _generated_specs(model, args, target):
            sig = spec.tuning_signature()
            tpl = template(spec)  # gemm, attention or rows: each has its candidates
            tiles = tpl.candidates(spec, sms)
            entry = {"kind": "kernel", "workload": name, "signature": sig, "computes": spec.describe(),
                     "candidates": [], "iree_default": iree, "cost_model": tile_text(tiles[0]),
                     "tolerance": 1e-2 if getattr(spec, "a", getattr(spec, "dtype", "")) == "f32" else 3e-2}
            for tile in tiles:
                pipeline = dataclasses.replace(base, kernel_tiles=f"{sig}={tile_text(tile)}").pipeline_text()
                path = f"{name}-{sig}-{tile_text(tile)}.braze"
                try:
                    compiled = braze.compile(model, *args, device="cuda", target=target, cache=False,
                                             pipeline=pipeline)
                except KernelResourceError as e:
                    print(f"skip {name} {sig} tile {tile_text(tile)}: {e}", flush=True)
                    continue
                compiled.save(directory / path, overwrite=True)
                entry["candidates"].append({"config": tile_text(tile), "artifact": path})
            manifest["workloads"].append(entry)
            print(f"{name} {sig}: {len(entry['candidates'])} tiles for {spec.describe()}", flush=True)


def build(directory: Path, target: str, workloads: list[str], matmul_workloads: list[str] | None = None,
          kernel_workloads: list[str] | None = None) -> int:
    import braze
    from braze.passes.gpu.configs import ElementwiseSignature
    from braze.passes.gpu.cost_model import choose_config
    from braze.testing.zoo import WORKLOADS

    _known_workloads(workloads + list(matmul_workloads or []) + list(kernel_workloads or []))
    directory.mkdir(parents=True, exist_ok=True)
    manifest = {"target": target, "workloads": []}
    if matmul_workloads:
        build_matmuls(directory, target, matmul_workloads, manifest)
    if kernel_workloads:
        build_kernels(directory, target, kernel_workloads, manifest)
    for name in workloads:
        model, args = WORKLOADS[name].build("cuda")
        signatures = _kernel_signatures(model, args, target)
        if len(signatures) != 1:
            print(f"skip {name}: {len(signatures)} standalone elementwise kernels (tuning needs exactly 1)")
            continue
        sig = ElementwiseSignature.parse(signatures[0])
        n = sig.elements
        entry = {"kind": "elementwise", "workload": name, "signature": signatures[0], "candidates": []}
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
        model_choice = choose_config(n, 4 if "f32" in sig.types else 2)
        entry["cost_model"] = model_choice.short() if model_choice else None
        manifest["workloads"].append(entry)
        print(f"{name}: {len(entry['candidates'])} candidates for {signatures[0]}", flush=True)
    (directory / "manifest.json").write_text(json.dumps(manifest, indent=2))
    return 0


def run(directory: Path, reps: int = 50, markers: bool = False) -> int:
    """Time every candidate per call; with markers, also write DIR/segments.json for `kernels`.

    markers: a one-element torch fill kernel precedes each candidate's calls, so ncu's kernel
    list can be cut into one segment per candidate (see `kernels`).
    """
    import torch

    import braze
    from braze.tools.timing import median_ms
    from braze.testing.zoo import WORKLOADS

    manifest = _read_json(directory / "manifest.json", "make DIR with `braze tune build DIR`")
    winners = {"target": manifest["target"], "kernels": {}, "measurements": {}}
    segments = []
    marker = torch.empty(1, device="cuda") if markers else None  # empty: no kernel of its own

    def segment(signature: str, name: str, calls: int) -> None:
        if marker is not None:
            marker.fill_(float(len(segments)))
            segments.append({"signature": signature, "config": name, "calls": calls})
    for entry in manifest["workloads"]:
        matmul = entry.get("kind") == "matmul"
        kernel = entry.get("kind") == "kernel"  # a generated kernel, timed inside its whole workload
        label = entry["signature"] if matmul else f"{entry['workload']} {entry['signature']}" if kernel else entry["workload"]
        source = MatMul(entry["signature"]) if matmul else WORKLOADS[entry["workload"]]
        model, args = source.build("cuda")
        model = model.cuda()
        args = [a.cuda() for a in args]
        with torch.no_grad():
            segment(entry["signature"], "reference", 1)
            expected = model(*args)
            if matmul or kernel:
                segment(entry["signature"], "torch", 3 + reps)
            torch_ms = median_ms(lambda: model(*args), reps) if matmul or kernel else None
        tolerance = entry.get("tolerance") or (2e-2 if "bf16" in entry["signature"] else (1e-4 if matmul else 1e-2))
        rows = []
        for name, path in [("iree-default", entry["iree_default"])] + [(c["config"], c["artifact"]) for c in entry["candidates"]]:
            module = braze.load(directory / path, device="cuda")
            segment(entry["signature"], name, 4 + reps)
            got = module(*args)
            err = max_error(got.float(), expected.float(), floor=0.0)
            ms = median_ms(lambda: module(*args), reps)
            rows.append((name, ms, err))
            flag = "" if err < tolerance else "  WRONG: excluded"
            print(f"{label:36s} {name:26s} {ms * 1000:8.1f} us/call  rel err {err:.1e}{flag}", flush=True)
        ok = [r for r in rows if r[0] != "iree-default" and r[2] < tolerance]
        if not ok:
            print(f"{label}: no candidate within {tolerance:g} of eager; nothing recorded")
            continue
        best = min(ok, key=lambda r: r[1])
        winners["kernels"][entry["signature"]] = best[0]
        winners["measurements"][label] = {
            "signature": entry["signature"], "cost_model": entry.get("cost_model"),
            "us_per_call": {name: round(ms * 1000, 1) for name, ms, _ in rows}, "winner": best[0],
        }
        if torch_ms is not None:
            winners["measurements"][label]["torch_us_per_call"] = round(torch_ms * 1000, 1)
            print(f"{label:36s} {'torch (cuBLAS)' if matmul else 'torch eager':26s} {torch_ms * 1000:8.1f} us/call",
                  flush=True)
    (directory / "winners.json").write_text(json.dumps(winners, indent=2))
    print(f"wrote {directory / 'winners.json'}")
    if markers:
        torch.cuda.synchronize()
        (directory / "segments.json").write_text(json.dumps(segments, indent=1))
    return 0


def kernels(directory: Path, csv_path: Path) -> int:
    """Pick winners by kernel time: ncu's CSV of a `run --markers`, cut at the marker fills.

        ncu --clock-control none --metrics gpu__time_duration.sum --csv \\
            braze tune run DIR --reps 5 --markers > k.csv
        braze tune kernels DIR k.csv      # rewrites DIR/winners.json
    """
    from braze.tools.timing import ncu_kernels

    cut: list[list[float]] = []
    from braze.errors import UsageError

    try:
        launches = ncu_kernels(csv_path)
    except OSError as e:
        raise UsageError(f"cannot read '{csv_path}': {e.strerror or e}; give ncu's --csv output of "
                         "`braze tune run DIR --markers`") from None
    except ValueError as e:
        raise UsageError(f"'{csv_path}' is not ncu's --csv output with Kernel Name and Metric Value "
                         f"columns ({e})") from None
    for name, us in launches:
        if "FillFunctor" in name:
            cut.append([])
        elif cut:
            cut[-1].append(us)
    segments = _read_json(directory / "segments.json", "make it with `braze tune run DIR --markers`")
    if len(cut) != len(segments):
        print(f"{csv_path}: {len(cut)} marker segments, {len(segments)} expected: not the CSV of this run",
              file=sys.stderr)
        return 1
    per_call: dict[str, dict[str, float]] = {}
    for seg, times in zip(segments, cut):
        if seg["config"] != "reference":
            per_call.setdefault(seg["signature"], {})[seg["config"]] = sum(times) / seg["calls"]
    winners = _read_json(directory / "winners.json", "make it with `braze tune run DIR`")
    for signature, times in per_call.items():
        label = next((k for k, m in winners["measurements"].items() if m["signature"] == signature), None)
        if label is None:  # every candidate was wrong: nothing to pick from
            continue
        measured = winners["measurements"][label]
        measured["kernel_us"] = {k: round(v, 1) for k, v in times.items()}
        allowed = [k for k in times if k not in ("iree-default", "torch") and k in measured["us_per_call"]]
        best = min(allowed, key=times.get)
        winners["kernels"][signature] = measured["winner"] = best
        ref = times.get("torch")
        share = f", {ref / times[best]:.0%} of torch's" if ref else ""
        print(f"{signature:36s} winner {best:26s} {times[best]:8.1f} us of kernels (IREE default "
              f"{times.get('iree-default', float('nan')):.1f}, cost model {measured['cost_model']}: "
              f"{times.get(measured['cost_model'] or '', float('nan')):.1f}{share})")
    (directory / "winners.json").write_text(json.dumps(winners, indent=2))
    print(f"wrote {directory / 'winners.json'}")
    return 0


def import_winners(path: Path) -> int:
    from braze.passes.gpu import tuning
    from braze.errors import UsageError
    from braze.kernels.spec import is_tuning_signature, parse_tile, tile_text
    from braze.passes.gpu.configs import KernelConfig, MatmulConfig, MatmulSignature

    class Tile:
        """A generated kernel's tile, stored as its text (fusion-generate-kernels reads it)."""

        def __init__(self, short: str):
            self.tile = parse_tile(short)

        def text(self) -> str:
            return tile_text(self.tile)

        short = text

    def config(signature: str, short: str):
        if is_tuning_signature(signature):
            return Tile(short)
        return (MatmulConfig if MatmulSignature.matches(signature) else KernelConfig).parse_short(short)

    try:
        data = json.loads(path.read_text())
        kernels, target = data["kernels"], data["target"]
        entries = [(signature, config(signature, short)) for signature, short in kernels.items()]
    except OSError as e:
        raise UsageError(f"cannot read '{path}': {e.strerror or e}") from None
    except (ValueError, KeyError, TypeError, AttributeError) as e:
        raise UsageError(f"'{path}' is not a winners file written by `braze tune run` ({type(e).__name__}: {e})") from None
    cache = tuning.TuningCache(tuning.default_path())
    for signature, config in entries:
        cache.record(signature, target, config.text())
        print(f"{target} {signature}: {config.short()}")
    print(f"stored in {cache.path}")
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="braze tune", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build", help="compile candidate configurations (needs the compiler)")
    b.add_argument("dir", type=Path)
    b.add_argument("--target", default="sm_90")
    b.add_argument("--workloads", default="elementwise_chain,elementwise_chain_bf16",
                   help="elementwise workloads to tune ('' for none)")
    b.add_argument("--matmuls", default="",
                   help="workloads whose (batch) matmul signatures to tune, e.g. bert_layer,bert_layer_bf16")
    b.add_argument("--kernels", default="",
                   help="workloads whose generated (Triton) kernels' tiles to tune, e.g. gelu_mlp_bf16,bert_layer")
    r = sub.add_parser("run", help="time the candidates on this machine's GPU")
    r.add_argument("dir", type=Path)
    r.add_argument("--reps", type=_positive, default=50, help="timed calls per candidate")
    r.add_argument("--markers", action="store_true", help="mark candidates for ncu (see `kernels`)")
    k = sub.add_parser("kernels", help="choose winners by kernel time from ncu's CSV of `run --markers`")
    k.add_argument("dir", type=Path)
    k.add_argument("csv", type=Path)
    i = sub.add_parser("import", help="store measured winners in the tuning cache")
    i.add_argument("winners", type=Path)
    args = p.parse_args(argv)
    from braze.errors import BrazeError, UsageError

    try:
        return _run_command(args)
    except UsageError as e:
        print(f"braze tune: error: {e}", file=sys.stderr)
        return 2
    except BrazeError as e:
        print(f"braze tune: error: {e}", file=sys.stderr)
        return 1


def _run_command(args) -> int:
    t0 = time.perf_counter()
    if args.command == "build":
        code = build(args.dir, args.target, [w for w in args.workloads.split(",") if w],
                     [w for w in args.matmuls.split(",") if w], [w for w in args.kernels.split(",") if w])
    elif args.command == "run":
        code = run(args.dir, args.reps, args.markers)
    elif args.command == "kernels":
        code = kernels(args.dir, args.csv)
    else:
        code = import_winners(args.winners)
    print(f"({time.perf_counter() - t0:.0f} s)", file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main())
