"""The pass registry: names to pass classes, pipelines, and the pipeline runner.

Python passes are not in MLIR's textual pass registry, so braze parses a pipeline
string itself: braze's passes go to the PassManager as Python callables, everything
else (canonicalize, cse, func.func(...), ...) as textual elements, in order.
"""

from __future__ import annotations

import contextvars
import dataclasses
from dataclasses import dataclass
from typing import Any, Callable, ClassVar

from braze._mlir import ir, passmanager
from braze.errors import PassPipelineError

PASSES: dict[str, type["ModulePass"]] = {}
"""Every braze pass, by name."""

PIPELINES: dict[str, "Pipeline"] = {}
"""Every named pipeline, by name (names end in `-pipeline`)."""


def option(default: Any, doc: str) -> Any:
    """A pass option: a dataclass field with a one-line doc shown by `--list-passes`."""
    return dataclasses.field(default=default, metadata={"doc": doc})


class PassFailure(Exception):
    """Raised inside `ModulePass.run` to fail the pass with a diagnostic at `location`."""

    def __init__(self, message: str, location: ir.Location | None = None):
        super().__init__(message)
        self.message = message
        self.location = location


class ModulePass:
    """Base of braze's passes: a frozen dataclass whose fields are its options."""

    name: ClassVar[str]
    summary: ClassVar[str]

    def run(self, module: ir.Operation) -> None:
        raise NotImplementedError

    @classmethod
    def options(cls) -> list[dataclasses.Field]:
        return list(dataclasses.fields(cls)) if dataclasses.is_dataclass(cls) else []

    @classmethod
    def from_options(cls, values: dict[str, str]) -> "ModulePass":
        known = {f.name.replace("_", "-"): f for f in cls.options()}
        kwargs = {}
        for key, text in values.items():
            f = known.get(key) or known.get(key.replace("_", "-"))
            if f is None:
                names = ", ".join(sorted(known)) or "none"
                raise PassPipelineError(
                    f"pass '{cls.name}' has no option '{key}' (its options: {names})"
                )
            kwargs[f.name] = _parse_option_value(cls.name, key, f, text)
        return cls(**kwargs)

    def pipeline_text(self) -> str:
        """This pass with its non-default options, as it would be written in a pipeline."""
        parts = []
        for f in self.options():
            value = getattr(self, f.name)
            if value != f.default:
                shown = str(value).lower() if isinstance(value, bool) else str(value)
                parts.append(f"{f.name.replace('_', '-')}={shown}")
        return self.name + ("{" + " ".join(parts) + "}" if parts else "")


def _parse_option_value(pass_name: str, key: str, f: dataclasses.Field, text: str) -> Any:
    kind = type(f.default)
    try:
        if kind is bool:
            lowered = text.strip().lower()
            if lowered in ("true", "1", ""):
                return True
            if lowered in ("false", "0"):
                return False
            raise ValueError(text)
        if kind is int:
            return int(text)
        if kind is float:
            return float(text)
        return text
    except ValueError:
        raise PassPipelineError(
            f"option '{key}' of pass '{pass_name}' expects a {kind.__name__}, got '{text}'"
        ) from None


def register(cls: type[ModulePass]) -> type[ModulePass]:
    """Class decorator: add a pass to `PASSES` under its `name`."""
    if cls.name in PASSES or cls.name in PIPELINES:
        raise RuntimeError(f"pass name '{cls.name}' registered twice")
    PASSES[cls.name] = cls
    return cls


@dataclass(frozen=True)
class Pipeline:
    """A named pipeline: a summary and the pipeline text it expands to."""

    name: str
    summary: str
    text: str


def register_pipeline(name: str, summary: str, text: str) -> Pipeline:
    if not name.endswith("-pipeline"):
        raise RuntimeError(f"pipeline name '{name}' must end in '-pipeline'")
    if name in PASSES or name in PIPELINES:
        raise RuntimeError(f"pipeline name '{name}' registered twice")
    PIPELINES[name] = Pipeline(name, summary, text)
    return PIPELINES[name]


def ops_named(module: ir.Operation, name: str) -> list[ir.Operation]:
    """Every op called `name` nested in `module`, in walk order (collected before any rewrite)."""
    found = []

    def visit(op):
        if op.name == name:
            found.append(op)
        return ir.WalkResult.ADVANCE

    module.walk(visit)
    return found


# ---------------------------------------------------------------------------
# Analyses: passes such as fusion-report record results the caller can read.

_ANALYSES: contextvars.ContextVar[dict[str, Any] | None] = contextvars.ContextVar(
    "braze_analyses", default=None
)


def record_analysis(key: str, value: Any) -> None:
    """Store an analysis result for whoever runs the pipeline (no-op when nobody asks)."""
    sink = _ANALYSES.get()
    if sink is not None:
        sink[key] = value


# ---------------------------------------------------------------------------
# Pipeline text.


@dataclass(frozen=True)
class Step:
    """One element of a parsed pipeline: a braze pass instance or upstream pipeline text."""

    text: str
    braze_pass: ModulePass | None = None


def split_top_level(text: str) -> list[str]:
    """Split on commas that are not inside (), {} or []."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch in "({[":
            depth += 1
        elif ch in ")}]":
            depth -= 1
            if depth < 0:
                raise PassPipelineError(f"unbalanced ')' or '}}' in pipeline '{text}'")
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    if depth != 0:
        raise PassPipelineError(f"unbalanced '(' or '{{' in pipeline '{text}'")
    parts.append(text[start:])
    return [p.strip() for p in parts if p.strip()]


def _parse_options(pass_name: str, text: str) -> dict[str, str]:
    values = {}
    for item in text.split():
        key, eq, value = item.partition("=")
        if not key:
            raise PassPipelineError(f"empty option name in '{{{text}}}' of pass '{pass_name}'")
        values[key] = value if eq else "true"
    return values


def parse_pipeline(text: str) -> list[Step]:
    """Parse `builtin.module(a,b{opt=v})` or `a,b{opt=v}` into steps, expanding named pipelines."""
    text = text.strip()
    if text.startswith("builtin.module(") and text.endswith(")"):
        text = text[len("builtin.module(") : -1]
    steps: list[Step] = []
    for element in split_top_level(text):
        name, brace, rest = element.partition("{")
        name = name.strip()
        if name in PIPELINES:
            if brace:
                raise PassPipelineError(f"pipeline '{name}' takes no options")
            steps.extend(parse_pipeline(PIPELINES[name].text))
        elif name in PASSES:
            if brace and not rest.endswith("}"):
                raise PassPipelineError(f"options of pass '{name}' must end in '}}': '{element}'")
            values = _parse_options(name, rest[:-1]) if brace else {}
            steps.append(Step(element, PASSES[name].from_options(values)))
        else:
            steps.append(Step(element))
    return steps


def _python_pass(instance: ModulePass) -> Callable:
    def run(op, pass_) -> None:
        try:
            instance.run(op)
        except PassFailure as failure:
            (failure.location or op.location).emit_error(failure.message)
            pass_.signal_pass_failure()

    run.__name__ = type(instance).__name__
    return run


def build_pass_manager(steps: list[Step]) -> passmanager.PassManager:
    """A PassManager (in the current context) holding the steps in order."""
    pm = passmanager.PassManager("builtin.module")
    for step in steps:
        if step.braze_pass is not None:
            p = step.braze_pass
            pm.add(_python_pass(p), name=p.name, argument=p.name, description=p.summary)
        else:
            try:
                pm.add(step.text)
            except ValueError as e:
                known = ", ".join(sorted(PASSES) + sorted(PIPELINES))
                raise PassPipelineError(
                    f"unknown or malformed pass '{step.text}': {str(e).strip()}. "
                    f"braze's passes are: {known}; other names must be upstream MLIR passes "
                    "(see `braze-opt --list-passes`)."
                ) from None
    return pm


def run_pipeline(module: ir.Module | ir.Operation, pipeline: str, *, verify: bool = True) -> dict[str, Any]:
    """Run a pipeline on a module in place; return the analyses its passes recorded.

    Raises `PassPipelineError` for a bad pipeline and `braze.errors.CompileError` (with
    the diagnostics) when a pass fails.
    """
    from braze.errors import CompileError

    op = module.operation if isinstance(module, ir.Module) else module
    pm = build_pass_manager(parse_pipeline(pipeline))
    pm.enable_verifier(verify)
    sink: dict[str, Any] = {}
    token = _ANALYSES.set(sink)
    try:
        pm.run(op)
    except ir.MLIRError as e:
        raise CompileError(f"pipeline '{pipeline}' failed: {e}") from None
    finally:
        _ANALYSES.reset(token)
    return sink
