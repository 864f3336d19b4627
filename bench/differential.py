"""The differential suite: seeded random graphs (braze.testing.randomgraphs), the zoo and the fixed
coverage cases (braze.testing.coverage: float64, zero-element inputs and results, depthwise and grouped
convolutions in float32, float16 and bfloat16), each compiled with braze's passes and without,
compared with eager PyTorch in float64.

    python bench/differential.py here [--seeds 0:300] [--cuda-pipeline]      (CPU, in process)
    python bench/differential.py build DIR --device cuda --target sm_90 [--seeds 0:300]
        (here, with the compiler) compile every graph and zoo case for a GPU, save the artifacts
        and the eager results (float32 and float64, computed here on the CPU) in DIR
    python bench/differential.py run DIR          (on the GPU host: iree-base-runtime and torch)

A result passes when its dtypes are eager's and its error against float64 eager is within
`randomgraphs.tolerance` (ten times float32 eager's own error, plus the rounding of 16-bit
casts; a coverage case: ten times eager's own error in its dtype). A failure of IREE itself
that a case marks `known` for the device (braze.testing.zoo.Case.known) is counted apart, and fails
when it passes. Prints one line per failure and the counts per variant; exits 1 if anything
failed. `--cuda-pipeline` also compiles each graph for the CPU with the CUDA pipeline's passes
(fusion-cuda-pipeline), so the CUDA rewrites' arithmetic is checked where there is no GPU.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from pathlib import Path

VARIANTS = {"braze": {}, "unfused": {"fusion": False}}
CUDA_ON_CPU = {"cuda-passes-on-cpu": {"pipeline": "fusion-cuda-pipeline{target=sm_90}"}}


def _seeds(text: str) -> range:
    lo, _, hi = text.partition(":")
    return range(int(lo), int(hi))


def _references(model, args):
    """(float32 eager, float64 eager) outputs of a model on its inputs."""
    import copy

    import torch

    with torch.no_grad():
        e32 = model(*args)
        wide = copy.deepcopy(model).double()
        e64 = wide(*[a.double() if a.dtype.is_floating_point else a for a in args])
    return e32, e64


def _cases(seeds: range):
    """(name, model, inputs, tolerance function, known failures by device) for each random
    graph, zoo case and coverage case."""
    from braze.testing import coverage
    from braze.testing.randomgraphs import random_graph, tolerance
    from braze.testing.zoo import CASES, fresh_like

    for seed in seeds:
        model, args = random_graph(seed)
        yield f"graph{seed}", model, args, (lambda base, m=model: tolerance(m, base)), {}
    for case in CASES:
        model, args, kwargs = case.build()
        if kwargs or any(not hasattr(a, "dtype") for a in args):
            continue  # nested or keyword inputs: test_zoo covers them
        args = fresh_like(tuple(args))
        yield (f"zoo:{case.name}", model, tuple(args), (lambda base, rtol=case.rtol: max(rtol, 10 * base + 1e-5)),
               case.known)
    for case in coverage.CASES:
        model, args = case.build()
        yield f"coverage:{case.name}", model, args, case.tolerance, case.known


def _dtypes(outputs) -> list[str]:
    outputs = outputs if isinstance(outputs, tuple) else (outputs,)
    return [str(o.dtype).removeprefix("torch.") for o in outputs]


def _verdict(got, e64, dtypes: list[str] | None, limit: float) -> tuple[bool, str]:
    """(passed, why not): eager's dtypes (float64 kept, not demoted; None: a manifest from
    before dtypes were kept), error within limit."""
    from braze.accuracy import max_error

    if dtypes is not None and _dtypes(got) != dtypes:
        return False, f"dtypes {_dtypes(got)}, eager's {dtypes}"
    error = max_error(got, e64)
    return error <= limit, f"error {error:.2e} > {limit:.2e}"


def _known(result: tuple[bool, str], known) -> tuple[str, str]:
    """'pass', 'FAIL' or 'known' (IREE's own failure, marked for this device) and a note."""
    ok, note = result
    if known:
        return ("known", f"IREE ({known[0]}): {known[1]}") if not ok else \
            ("FAIL", "passes, but is marked known-failing: remove the mark")
    return ("pass" if ok else "FAIL"), note


def here(seeds: range, cuda_pipeline: bool) -> int:
    import braze
    from braze.accuracy import max_error

    variants = dict(VARIANTS, **(CUDA_ON_CPU if cuda_pipeline else {}))
    counts = {v: {"pass": 0, "FAIL": 0, "known": 0} for v in variants}
    t0 = time.perf_counter()
    for name, model, args, allowed, known in _cases(seeds):
        e32, e64 = _references(model, args)
        limit = allowed(max_error(e32, e64))
        for variant, options in variants.items():
            try:
                got = braze.compile(model, *args, **options)(*args)
                result = _verdict(got, e64, _dtypes(e32), limit)
            except braze.BrazeError as e:
                result = False, f"{type(e).__name__}: {str(e).splitlines()[0][:160]}"
            _count(counts[variant], name, variant, *_known(result, known.get("cpu")))
    _summary(counts, "cpu", time.perf_counter() - t0)
    return 1 if any(c["FAIL"] for c in counts.values()) else 0


def _count(counts: dict, name: str, variant: str, result: str, note: str) -> None:
    counts[result] += 1
    if result != "pass":
        print(f"{result.upper()} {name} {variant}: {note}", flush=True)


def _summary(counts: dict, device: str, seconds: float) -> None:
    print(f"\ndifferential suite on {device} ({seconds:.0f} s):")
    for variant, c in counts.items():
        print(f"  {variant:20s} {c['pass']:4d} passed {c['FAIL']:4d} failed {c['known']:4d} known failures of IREE")


def build(directory: Path, device: str, target: str, seeds: range) -> int:
    import torch

    import braze
    from braze.accuracy import max_error
    from braze.testing.randomgraphs import TF32_ERROR

    directory.mkdir(parents=True, exist_ok=True)
    manifest = []
    for name, model, args, allowed, known in _cases(seeds):
        e32, e64 = _references(model, args)
        limit = allowed(max_error(e32, e64))
        torch.save({"args": args, "expected64": e64}, directory / f"{name}.pt")
        entry = {"name": name, "data": f"{name}.pt", "limit": limit, "dtypes": _dtypes(e32),
                 "known": known.get(device), "artifacts": {}, "limits": {}, "known_by_variant": {}}
        for variant, options in VARIANTS.items():
            path = f"{name}.{variant}.braze"
            entry["known_by_variant"][variant] = known.get(f"{device}/{variant}") or known.get(device)
            try:
                module = braze.compile(model, *args, device=device, target=target, **options)
                module.save(directory / path, overwrite=True)
                entry["artifacts"][variant] = path
                # float32 contractions in TF32 (braze's CUDA default for convolutions, as cuDNN's)
                tf32 = any(" as tf32" in k.get("kernel", "") for k in module.report.kernels if k.get("generated"))
                entry["limits"][variant] = max(limit, TF32_ERROR) if tf32 else limit
            except braze.BrazeError as e:
                entry["artifacts"][variant] = None
                entry.setdefault("compile_errors", {})[variant] = f"{type(e).__name__}: {str(e).splitlines()[0][:160]}"
        manifest.append(entry)
        print(f"built {name}", flush=True)
    (directory / "manifest.json").write_text(json.dumps({"device": device, "target": target, "cases": manifest},
                                                        indent=1))
    return 0


def run(directory: Path) -> int:
    import torch

    import braze

    meta = json.loads((directory / "manifest.json").read_text())
    device = meta["device"]
    counts = {f"{v}/{kind}": {"pass": 0, "FAIL": 0, "known": 0} for v in VARIANTS for kind in ("torch", "numpy")}
    t0 = time.perf_counter()
    for entry in meta["cases"]:
        data = torch.load(directory / entry["data"], weights_only=False)
        args, e64 = data["args"], data["expected64"]
        for variant in VARIANTS:
            path = entry["artifacts"].get(variant)
            for kind in ("torch", "numpy"):
                key = f"{variant}/{kind}"
                try:
                    if path is None:
                        raise RuntimeError(entry["compile_errors"][variant])
                    module = braze.load(directory / path, device=device)
                    if kind == "torch":
                        inputs = [a.cuda() if device == "cuda" else a for a in args]
                        got = module(*inputs)
                    else:
                        out = module(*[_numpy(a) for a in args])
                        specs = module.signature.outputs
                        got = (tuple(_torch(o, sp.dtype) for o, sp in zip(out, specs)) if isinstance(out, tuple)
                               else _torch(out, specs[0].dtype))
                    result = _verdict(got, e64, entry.get("dtypes"), entry.get("limits", {}).get(variant, entry["limit"]))
                except Exception as e:  # report every failure, keep going
                    result = False, f"{type(e).__name__}: {str(e).splitlines()[0][:160]}"
                known = entry.get("known_by_variant", {}).get(variant, entry.get("known"))
                _count(counts[key], entry["name"], key, *_known(result, known))
    _summary(counts, f"{device} ({meta['target']})", time.perf_counter() - t0)
    return 1 if any(c["FAIL"] for c in counts.values()) else 0


def _numpy(t):
    """braze's numpy form of a tensor: bfloat16 as its uint16 bits."""
    import torch

    return t.view(torch.int16).numpy().view("uint16") if t.dtype == torch.bfloat16 else t.numpy()


def _torch(a, dtype: str):
    import torch

    t = torch.from_numpy(a)
    return t.view(torch.bfloat16) if dtype == "bfloat16" else t


def main(argv: list[str] | None = None) -> int:
    warnings.simplefilter("ignore")
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)
    h = sub.add_parser("here", help="run on the CPU in this process")
    h.add_argument("--seeds", default="0:300")
    h.add_argument("--cuda-pipeline", action="store_true")
    b = sub.add_parser("build", help="compile for a GPU host")
    b.add_argument("dir", type=Path)
    b.add_argument("--device", default="cuda")
    b.add_argument("--target", default="sm_90")
    b.add_argument("--seeds", default="0:300")
    r = sub.add_parser("run", help="run artifacts made by build")
    r.add_argument("dir", type=Path)
    args = p.parse_args(argv)
    if args.command == "here":
        return here(_seeds(args.seeds), args.cuda_pipeline)
    if args.command == "build":
        return build(args.dir, args.device, args.target, _seeds(args.seeds))
    return run(args.dir)


if __name__ == "__main__":
    sys.exit(main())
