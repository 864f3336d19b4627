"""braze.check: is braze right on this model, and if not, which rewrite breaks it?

    result = braze.check(model, x, device="cpu")          # or: braze check model.py:make --shape 8,3,32,32
    print(result)

runs the model three ways: eager PyTorch in its own dtype, braze without its passes
(fusion=False) and braze, and compares each with eager PyTorch in float64. When braze is wrong
and the unfused build is right, it bisects braze's rewrite decisions (every group formed,
convolution rewritten, matmul padded or split, tile attached, numbered in pipeline order:
`report.decisions`) with compile(decision_limit=N), as LLVM's -opt-bisect-limit, to the first
decision that breaks the model, and writes a reproducer: the imported IR and the braze-opt
commands that apply the pipeline with and without that decision.

`passes_of="cuda"` checks the CUDA pipeline's passes compiled for the CPU: their arithmetic is
checked where there is no GPU (what only the GPU's code generator gets wrong needs the GPU).
"""

from __future__ import annotations

import copy
import shlex
from dataclasses import dataclass, field

from braze.accuracy import max_error, reference as overflow_aware_reference
from braze.errors import ArtifactError, BrazeError, InputError


@dataclass
class CheckResult:
    model: str
    device: str
    pipeline: str
    errors: dict[str, float] = field(default_factory=dict)
    """braze.accuracy.max_error against float64 eager (NaN- and inf-aware), per variant."""
    failures: dict[str, str] = field(default_factory=dict)
    """Variants that failed to compile or run, with the error."""
    tolerance: float = 0.0
    decisions: list[str] = field(default_factory=list)
    first_bad_decision: int | None = None
    """1-based index into `decisions` of the first decision that makes braze wrong."""
    bisect_errors: dict[int, float] = field(default_factory=dict)
    """Error per decision limit tried while bisecting."""
    reproducer: str | None = None
    """Path of the imported IR, with the commands in its header."""
    commands: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.failures and all(e <= self.tolerance for e in self.errors.values())

    @property
    def verdict(self) -> str:
        if self.ok:
            return "braze matches eager"
        braze_bad = "braze" in self.failures or self.errors.get("braze", 0.0) > self.tolerance
        unfused_bad = "unfused" in self.failures or self.errors.get("unfused", 0.0) > self.tolerance
        if braze_bad and not unfused_bad:
            return "braze's passes break the model"
        if braze_bad:
            return "wrong without braze's passes too (torch-mlir or IREE)"
        return "only the unfused build is wrong"

    def __str__(self) -> str:
        lines = [f"braze check: {self.model} on {self.device} ({self.pipeline})",
                 f"  tolerance {self.tolerance:.2e} (10x eager's own error against float64, at least 1e-5)"]
        for name, error in self.errors.items():
            lines.append(f"  {name:10s} error {error:.2e}  {'ok' if error <= self.tolerance else 'WRONG'}")
        for name, why in self.failures.items():
            lines.append(f"  {name:10s} FAILED: {why}")
        lines.append(f"  verdict: {self.verdict}")
        if self.first_bad_decision is not None:
            k = self.first_bad_decision
            lines.append(f"  first bad decision: #{k} of {len(self.decisions)}: {self.decisions[k - 1]}")
            tried = ", ".join(f"{n}: {e:.1e}" for n, e in sorted(self.bisect_errors.items()))
            lines.append(f"  bisected (decision limit: error): {tried}")
        if self.reproducer:
            lines.append(f"  reproducer: {self.reproducer}")
            lines.extend(f"    {c}" for c in self.commands)
        return "\n".join(lines)


def check(model, *inputs, device: str = "cpu", target: str | None = None, example_kwargs: dict | None = None,
          passes_of: str | None = None, bisect: bool = True) -> CheckResult:
    """Compare braze with eager on `inputs` (see the module docstring); bisect when braze alone is wrong."""
    import torch
    from torch.utils._pytree import tree_map

    import braze

    from braze.compiler import device_pipeline
    from braze.targets import resolve

    kwargs = example_kwargs or {}
    pipeline = None
    if passes_of is not None:
        pipeline = device_pipeline(resolve(passes_of, "sm_90" if passes_of == "cuda" else None))
    shown = pipeline or device_pipeline(resolve(device, target))
    result = CheckResult(type(model).__name__, device, shown)
    eager, reference = _eager_and_reference(model, inputs, kwargs)
    result.errors["eager"] = max_error(eager, reference)
    result.tolerance = max(10 * result.errors["eager"], 1e-5)
    run_on = (lambda t: t.cuda() if isinstance(t, torch.Tensor) else t) if device == "cuda" else (lambda t: t)
    call_inputs, call_kwargs = tree_map(run_on, inputs), tree_map(run_on, kwargs)

    def build(**options):
        # Bisection compiles are one-offs (each decision limit its own key): not cached.
        return braze.compile(model, *inputs, example_kwargs=kwargs, device=device, target=target, cache=False,
                             **options)

    def measure(name: str, **options):
        try:
            compiled = build(**options)
            error = max_error(compiled(*call_inputs, **call_kwargs), reference, like=eager)
        except BrazeError as e:
            result.failures[name] = f"{type(e).__name__}: {str(e).splitlines()[0]}"
            return None, None
        result.errors[name] = error
        return compiled, error

    measure("unfused", fusion=False)
    compiled, error = measure("braze", pipeline=pipeline)
    if compiled is not None:
        result.decisions = list(compiled.report.decisions)
    if not bisect or result.verdict != "braze's passes break the model" or compiled is None:
        return result

    def bad(limit: int) -> bool:
        try:
            got = build(pipeline=pipeline, decision_limit=limit)(*call_inputs, **call_kwargs)
            result.bisect_errors[limit] = max_error(got, reference, like=eager)
        except BrazeError:
            result.bisect_errors[limit] = float("inf")
        return result.bisect_errors[limit] > result.tolerance

    lo, hi = 0, len(result.decisions)  # invariant: limit lo is right, limit hi is wrong
    result.bisect_errors[hi] = error
    if not result.decisions or bad(0):
        result.first_bad_decision = None
        return _reproduce(result, model, inputs, kwargs, pipeline or shown, None)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if bad(mid):
            hi = mid
        else:
            lo = mid
    result.first_bad_decision = hi
    return _reproduce(result, model, inputs, kwargs, pipeline or shown, hi)


def _reproduce(result: CheckResult, model, inputs, kwargs, pipeline: str, decision: int | None) -> CheckResult:
    """Write the imported IR and the braze-opt commands with and without the decision."""
    from braze.fileutil import default_reproducer_path

    from braze.compiler.frontend import import_model

    imported = import_model(model, tuple(inputs), kwargs)
    with imported.context:
        text = imported.module.operation.get_asm(enable_debug_info=True)
    path = default_reproducer_path()
    quoted = shlex.quote(pipeline)
    if decision is None:
        result.commands = [f"braze-opt {path} -p {quoted} --print-decisions"]
        note = "braze is wrong with none of its rewrite decisions applied"
    else:
        result.commands = [f"braze-opt {path} -p {quoted} --decision-limit={decision} --print-decisions  # wrong",
                           f"braze-opt {path} -p {quoted} --decision-limit={decision - 1}  # right"]
        note = f"decision {decision} ({result.decisions[decision - 1]}) makes {result.model} wrong"
    try:
        with open(path, "w", encoding="utf-8") as f:
            f.write(f"// braze check reproducer: {note}.\n" + "".join(f"// {c}\n" for c in result.commands) + text)
        result.reproducer = path
    except OSError as e:
        result.reproducer = f"(not written: {e.strerror or e})"
    return result


__all__ = ["CheckResult", "check"]


# ---------------------------------------------------------------------------
# On a GPU host without the compiler: build every decision limit here, run them there.


def _eager_and_reference(model, inputs: tuple, kwargs: dict):
    """Eager's outputs and float64 eager's (the reference); InputError when the model does not
    run in eager on these inputs (braze check has nothing to compare with then)."""
    import torch
    from torch.utils._pytree import tree_map

    as64 = lambda t: t.double() if isinstance(t, torch.Tensor) and t.dtype.is_floating_point else t  # noqa: E731
    name = type(model).__name__
    with torch.no_grad():
        try:
            eager = model(*inputs, **kwargs)
        except Exception as e:  # the user's forward() may raise anything
            raise InputError(f"{name} raised {type(e).__name__} in eager on the example inputs: "
                             f"{str(e).splitlines()[0] if str(e) else ''}; braze check compares braze with eager, "
                             "so the model must run in eager first (check --shape and --dtype)") from None
        try:
            reference = copy.deepcopy(model).double()(*tree_map(as64, inputs), **tree_map(as64, kwargs))
        except Exception as e:
            raise InputError(f"{name} raised {type(e).__name__} in float64 (model.double()): "
                             f"{str(e).splitlines()[0] if str(e) else ''}; braze check's reference is the "
                             "model in float64, so the model must run in float64") from None
    return eager, overflow_aware_reference(eager, reference)


def build_bisection(model, inputs: tuple, directory, *, device: str = "cuda", target: str | None = None,
                    kwargs: dict | None = None) -> int:
    """Compile the model here for `device` with no passes (unfused), with all of braze's
    decisions, and with each decision limit 0..N, save the artifacts, the inputs and float64
    eager's outputs in `directory` for `run_bisection` on the GPU host; returns N."""
    import json
    from pathlib import Path

    import torch

    import braze

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    kwargs = kwargs or {}
    eager, reference = _eager_and_reference(model, inputs, kwargs)
    eager_error = max_error(eager, reference)
    tolerance = max(10 * eager_error, 1e-5)
    torch.save({"inputs": inputs, "kwargs": kwargs, "reference": reference, "eager": eager}, directory / "data.pt")
    full = braze.compile(model, *inputs, example_kwargs=kwargs, device=device, target=target, cache=False)
    decisions = list(full.report.decisions)
    full.save(directory / "braze.braze", overwrite=True)
    braze.compile(model, *inputs, example_kwargs=kwargs, device=device, target=target, cache=False,
                  fusion=False).save(directory / "unfused.braze", overwrite=True)
    for limit in range(len(decisions)):
        braze.compile(model, *inputs, example_kwargs=kwargs, device=device, target=target, cache=False,
                      decision_limit=limit).save(directory / f"limit-{limit}.braze", overwrite=True)
    (directory / "bisection.json").write_text(json.dumps(
        {"model": type(model).__name__, "device": device, "pipeline": full.report.pipeline,
         "tolerance": tolerance, "eager_error": eager_error, "decisions": decisions}, indent=1))
    return len(decisions)


def run_bisection(directory) -> CheckResult:
    """Run what build_bisection made (needs only iree-base-runtime and torch): the errors of
    the unfused build, of braze and of every decision limit, and the first bad decision."""
    import json
    from pathlib import Path

    import torch
    from torch.utils._pytree import tree_map

    import braze

    directory = Path(directory)
    try:
        meta = json.loads((directory / "bisection.json").read_text())
        data = torch.load(directory / "data.pt", weights_only=False)
    except OSError as e:
        raise ArtifactError(f"{directory} is not a build of `braze check --build DIR`: cannot read "
                            f"{e.filename} ({e.strerror or e}); make it with `braze check MODEL --build DIR`") from None
    except (ValueError, RuntimeError) as e:  # torch.load's RuntimeError: a corrupt file
        raise ArtifactError(f"{directory} holds a corrupt build of `braze check --build DIR` "
                            f"({str(e).splitlines()[0]}); build it again") from None
    device = meta["device"]
    move = (lambda t: t.cuda() if isinstance(t, torch.Tensor) else t) if device == "cuda" else (lambda t: t)
    inputs, kwargs = tree_map(move, data["inputs"]), tree_map(move, data["kwargs"])
    result = CheckResult(meta["model"], device, meta["pipeline"], tolerance=meta["tolerance"],
                         decisions=meta["decisions"])
    result.errors["eager"] = meta["eager_error"]

    def error(name: str) -> float:
        try:
            got = braze.load(directory / f"{name}.braze", device=device)(*inputs, **kwargs)
            return max_error(got, data["reference"], like=data.get("eager"))
        except BrazeError as e:
            result.failures[name] = f"{type(e).__name__}: {str(e).splitlines()[0]}"
            return float("inf")

    result.errors["unfused"] = error("unfused")
    result.errors["braze"] = error("braze")
    for limit in range(len(result.decisions)):
        result.bisect_errors[limit] = error(f"limit-{limit}")
    result.bisect_errors[len(result.decisions)] = result.errors["braze"]
    bad = [k for k, e in sorted(result.bisect_errors.items()) if e > result.tolerance]
    if bad and result.verdict == "braze's passes break the model" and bad[0] > 0:
        result.first_bad_decision = bad[0]
    return result
