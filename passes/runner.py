"""Running a pipeline, and the reproducer when a pass fails (for braze.compile and braze-opt).

    analyses = run_pipeline(module, "fusion-cuda-pipeline{target=sm_90}", model="MyModel")

runs the pipeline in place with the verifier after every pass. When a pass fails (or leaves
IR that does not verify), the pipeline is replayed pass by pass on a copy of the module taken
before it ran, to find the first failing pass; the IR that went into that pass is written to a
reproducer file, and the error names the pass, the first diagnostic, the file and the one-line
`braze-opt` command that replays just that pass:

    braze: internal error: pass 'fusion-form-groups' failed on MyModel: <diagnostic>.
    The IR before it: /tmp/braze-reproducer-123-1.mlir; replay with:
    braze-opt /tmp/braze-reproducer-123-1.mlir -p fusion-form-groups
"""

from __future__ import annotations

import contextlib
import shlex
from dataclasses import dataclass
from typing import Any, Iterator

from braze._mlir import ir
from braze.errors import CompileError, InternalError
from braze.fileutil import default_reproducer_path, write_reproducer

from .registry import Step, build_pass_manager, collecting_analyses, parse_pipeline, recording_decisions


@dataclass
class Failure:
    """The first failing step of a pipeline and the IR that went into it."""

    step: Step | None
    """None when the failure did not recur pass by pass (then `ir_text` is the pipeline's input)."""
    ir_text: str
    diagnostics: list[str]

    @property
    def replay(self) -> str:
        """The pipeline text that replays the failure on `ir_text`."""
        if self.step is None:
            return ""
        return self.step.braze_pass.pipeline_text() if self.step.braze_pass else self.step.text


def find_failing_step(module_op: ir.Operation, steps: list[Step], *, verify: bool = True) -> Failure | None:
    """Run `steps` one at a time on `module_op` (in place: pass a copy) and return the first that
    fails, with the IR it received and its diagnostics; None if every step succeeds."""
    for step in steps:
        before = module_op.get_asm(enable_debug_info=True)
        pm = build_pass_manager([step])
        pm.enable_verifier(verify)
        with _diagnostics(module_op.context) as seen:
            try:
                pm.run(module_op)
            except ir.MLIRError as e:
                return Failure(step, before, diagnostic_lines(e, seen))
            finally:
                del pm
    return None


def diagnostic_lines(error: ir.MLIRError, seen: list[str] = ()) -> list[str]:
    """`location: message` for each error diagnostic (notes indented), first first: those a
    handler saw, then those the error carries."""
    lines = list(seen)

    def add(d, depth: int) -> None:
        lines.append("  " * depth + f"{d.location}: {d.message}")
        for note in d.notes:
            add(note, depth + 1)

    for d in error.error_diagnostics:
        add(d, 0)
    return list(dict.fromkeys(lines)) or [str(error).strip()]


def replay_command(path: str, replay: str, extra: tuple[str, ...] = ()) -> str:
    return " ".join(shlex.quote(c) for c in ["braze-opt", path, "-p", replay, *extra])


def run_pipeline(module: ir.Module | ir.Operation, pipeline: str, *, verify: bool = True,
                 model: str = "the model", internal: bool = True, decision_limit: int | None = None) -> dict[str, Any]:
    """Run a pipeline on a module in place; return the analyses its passes recorded, with the
    numbered rewrite decisions under "decisions" (a DecisionLog; with `decision_limit`, only
    the first that many were applied: see registry.decide).

    A bad pipeline raises PassPipelineError. A failing pass raises InternalError when the
    pipeline is braze's own choice (`internal`: a braze bug, whatever the model), else
    CompileError; both name the pass and carry the reproducer's path and replay command.
    """
    op = module.operation if isinstance(module, ir.Module) else module
    steps = parse_pipeline(pipeline)
    pm = build_pass_manager(steps)
    pm.enable_verifier(verify)
    original = op.clone()  # shares attributes (weights) with the module: cheap
    with collecting_analyses() as sink, recording_decisions(decision_limit) as log, _diagnostics(op.context) as seen:
        sink["decisions"] = log
        try:
            pm.run(op)
        except ir.MLIRError as e:
            failed = diagnostic_lines(e, seen)
        else:
            failed = None
        finally:
            del pm
    if failed is not None:
        raise _failure_error(original, steps, failed, pipeline, model, internal, verify)
    return sink


@contextlib.contextmanager
def _diagnostics(context: ir.Context) -> Iterator[list[str]]:
    """Collect the context's error diagnostics: errors a Python pass emits reach the handler,
    not the MLIRError the pass manager raises."""
    seen: list[str] = []

    def handler(d) -> bool:
        if str(d.severity).rsplit(".", 1)[-1].upper() == "ERROR":
            seen.append(f"{d.location}: {d.message}")
        return True

    handle = context.attach_diagnostic_handler(handler)
    try:
        yield seen
    finally:
        handle.detach()


def _failure_error(original: ir.Operation, steps: list[Step], diagnostics: list[str], pipeline: str,
                   model: str, internal: bool, verify: bool) -> Exception:
    with collecting_analyses(), recording_decisions():
        failure = find_failing_step(original.clone(), steps, verify=verify)
    if failure is None:
        failure = Failure(None, original.get_asm(enable_debug_info=True), diagnostics)
    replay = failure.replay or pipeline
    what = f"pass '{replay}'" if failure.step is not None else f"pipeline '{pipeline}'"
    first = (failure.diagnostics or diagnostics or ["no diagnostic"])[0]
    path = default_reproducer_path()
    command = replay_command(path, replay)
    note = (f"the IR that went into the failing pass '{replay}'" if failure.step is not None else
            "the failure did not recur when the passes ran one at a time; this replays the whole pipeline")
    try:
        write_reproducer(path, failure.ir_text, command, note)
        where = f"The IR before it: {path}; replay with: {command}"
    except OSError as e:
        where = f"(no reproducer: cannot write {path}: {e.strerror or e})"
    if internal:
        return InternalError(
            f"{what} failed on {model}: {first}. This is a bug in braze, not in the model: "
            f"please report it with the reproducer. {where}")
    return CompileError(f"{what} failed on {model}: {first}. {where}")
