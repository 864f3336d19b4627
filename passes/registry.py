"""The pass registry: names to pass and pipeline classes, their options, pipeline text.

Python passes are not in MLIR's textual pass registry, so braze parses a pipeline
string itself: braze's passes go to the PassManager as Python callables, everything
else (canonicalize, cse, func.func(...), ...) as textual elements, in order.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import importlib
import math
import os
import traceback
from dataclasses import dataclass
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Callable, ClassVar, Iterator

from braze.errors import PassPipelineError

if TYPE_CHECKING:
    from braze._mlir import ir, passmanager

PASS_MODULES = {
    "fusion-form-groups": "braze.passes.form_groups",
    "fusion-lower-to-linalg": "braze.passes.lower_to_linalg",
    "fusion-report": "braze.passes.fusion_report",
    "fusion-fold-broadcast-matmul": "braze.passes.fold_broadcast_matmul",
    "fusion-fold-concat": "braze.passes.fold_concat",
    "fusion-expand-f64-math": "braze.passes.expand_f64_math",
    "fusion-cpu-codegen": "braze.passes.cpu.cpu_codegen",
    "fusion-expand-erf": "braze.passes.cpu.expand_erf",
    "fusion-conv-to-matmul": "braze.passes.gpu.conv_to_matmul",
    "fusion-channels-last": "braze.passes.gpu.channels_last",
    "fusion-generate-kernels": "braze.passes.gpu.generate_kernels",
    "fusion-pad-matmuls": "braze.passes.gpu.pad_matmuls",
    "fusion-split-k": "braze.passes.gpu.split_k",
    "fusion-spread-scatters": "braze.passes.gpu.spread_scatters",
    "fusion-configure-kernels": "braze.passes.gpu.configure_kernels",
}
"""Where each of braze's passes is defined: a name's module is imported when the name is first
looked up (lazy registration, as xDSL's `get_all_passes`), so printing or parsing a pipeline's
text imports no MLIR and only the passes it names are loaded. test_registry.py checks the table
against the classes the modules register."""

PIPELINE_MODULES = {name: "braze.passes.pipelines" for name in (
    "fusion-default-pipeline", "fusion-baseline-pipeline", "fusion-cpu-pipeline", "fusion-cuda-pipeline",
    "fusion-vulkan-pipeline")}
"""Where each named pipeline is defined (pipelines.py imports no MLIR)."""


class _Table(Mapping):
    """Name -> class, loading a name's module on first lookup; classes `register`ed outside the
    tables (a user's own pass) are found once their module has run."""

    def __init__(self, modules: dict[str, str]):
        self.modules = modules
        self.loaded: dict[str, type] = {}

    def __getitem__(self, name: str) -> type:
        if name not in self.loaded and name in self.modules:
            importlib.import_module(self.modules[name])
            if name not in self.loaded:
                raise RuntimeError(f"{self.modules[name]} registers no '{name}' (passes/registry.py's table)")
        return self.loaded[name]

    def __contains__(self, name: object) -> bool:
        return name in self.modules or name in self.loaded

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(set(self.modules) | set(self.loaded)))

    def __len__(self) -> int:
        return len(set(self.modules) | set(self.loaded))


PASSES: Mapping[str, type["ModulePass"]] = _Table(PASS_MODULES)
"""Every braze pass, by name."""

PIPELINES: Mapping[str, type["PassPipeline"]] = _Table(PIPELINE_MODULES)
"""Every named pipeline, by name (names end in `-pipeline`)."""


def option(default: Any, doc: str, *, minimum: float | None = None,
           check: Callable[[Any], str | None] | None = None) -> Any:
    """A pass or pipeline option: a dataclass field with a one-line doc shown by `--list-passes`.

    minimum: the smallest value a number may take. check(value) returns why a value is
    wrong, or None. Float options never accept NaN or infinity."""
    return dataclasses.field(default=default, metadata={"doc": doc, "minimum": minimum, "check": check})


def one_of(*values: str) -> Callable[[Any], str | None]:
    """An option `check` accepting exactly `values` ("is a, b or c, got 'x'" otherwise)."""
    listed = f"{', '.join(values[:-1])} or {values[-1]}" if len(values) > 1 else values[0]
    return lambda value: None if value in values else f"is {listed}, got '{value}'"


def spelled(name: str) -> str:
    """An option's name as users type it in a pipeline (`matmul_config` -> `matmul-config`)."""
    return name.replace("_", "-")


class PassFailure(Exception):
    """Raised inside `ModulePass.run` to fail the pass with a diagnostic at `location`."""

    def __init__(self, message: str, location: ir.Location | None = None):
        super().__init__(message)
        self.message = message
        self.location = location


class Configurable:
    """A frozen dataclass whose fields are options, written `name{key=value ...}` in a pipeline."""

    name: ClassVar[str]
    summary: ClassVar[str]

    def __post_init__(self) -> None:
        for f in self.options():
            value = getattr(self, f.name)
            kind = type(f.default)
            if kind is float and isinstance(value, int) and not isinstance(value, bool):
                value = float(value)
            if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
                self.option_error(f, f"expects a {kind.__name__}, got {value!r}")
            if kind is float and not math.isfinite(value):
                self.option_error(f, f"expects a finite number, got {value!r}")
            minimum = f.metadata.get("minimum")
            if minimum is not None and value < minimum:
                self.option_error(f, f"must be at least {minimum:g}, got {value!r}")
            check = f.metadata.get("check")
            why = check(value) if check is not None else None
            if why:
                self.option_error(f, why)

    @classmethod
    def option_error(cls, f: dataclasses.Field | str, why: str) -> None:
        name = f if isinstance(f, str) else f.name
        raise PassPipelineError(f"option '{spelled(name)}' of '{cls.name}' {why}")

    @classmethod
    def options(cls) -> list[dataclasses.Field]:
        return list(dataclasses.fields(cls)) if dataclasses.is_dataclass(cls) else []

    @classmethod
    def from_options(cls, values: dict[str, str]):
        known = {spelled(f.name): f for f in cls.options()}
        kwargs = {}
        for key, text in values.items():
            f = known.get(spelled(key))
            if f is None:
                names = ", ".join(sorted(known)) or "none"
                raise PassPipelineError(f"'{cls.name}' has no option '{key}' (its options: {names})")
            kwargs[f.name] = _parse_option_value(cls, f, text)
        return cls(**kwargs)

    def pipeline_text(self, explicit: tuple[str, ...] = ()) -> str:
        """This element with its non-default options (and those named in `explicit`), as it
        would be written in a pipeline."""
        parts = []
        for f in self.options():
            value = getattr(self, f.name)
            if value != f.default or f.name in explicit:
                shown = str(value).lower() if isinstance(value, bool) else str(value)
                parts.append(f"{spelled(f.name)}={quote_option(shown)}")
        return self.name + ("{" + " ".join(parts) + "}" if parts else "")


def quote_option(text: str) -> str:
    """An option value as pipeline text: double-quoted when it is empty or holds spaces,
    braces or quotes (the form `_parse_options` reads back)."""
    if text and not any(c.isspace() or c in '{}"\'' for c in text):
        return text
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


class ModulePass(Configurable):
    """Base of braze's passes: a frozen dataclass whose fields are its options."""

    def run(self, module: ir.Operation) -> None:
        raise NotImplementedError


class PassPipeline(Configurable):
    """Base of braze's named pipelines: options, and the pipeline text they expand to."""

    def expand(self) -> str:
        raise NotImplementedError


def _parse_option_value(cls, f: dataclasses.Field, text: str) -> Any:
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
        cls.option_error(f, f"expects a {kind.__name__}, got '{text}'")


def register(cls):
    """Class decorator: add a pass to `PASSES` (or a pipeline to `PIPELINES`) under its `name`."""
    table = PIPELINES if issubclass(cls, PassPipeline) else PASSES
    other = PASSES if table is PIPELINES else PIPELINES
    if cls.name in other.modules or table.modules.get(cls.name, cls.__module__) != cls.__module__:
        raise RuntimeError(f"'{cls.name}' is listed in passes/registry.py under "
                           f"{table.modules.get(cls.name) or other.modules[cls.name]}, not {cls.__module__}")
    if cls.name in PASSES.loaded or cls.name in PIPELINES.loaded:
        raise RuntimeError(f"pass name '{cls.name}' registered twice")
    if table is PIPELINES and not cls.name.endswith("-pipeline"):
        raise RuntimeError(f"pipeline name '{cls.name}' must end in '-pipeline'")
    table.loaded[cls.name] = cls
    return cls


# ---------------------------------------------------------------------------
# Analyses: passes such as fusion-report record results the caller can read.

_ANALYSES: contextvars.ContextVar[dict[str, Any] | None] = contextvars.ContextVar(
    "braze_analyses", default=None
)


@contextlib.contextmanager
def collecting_analyses() -> Iterator[dict[str, Any]]:
    """Collect what passes record with `record_analysis` while the block runs."""
    sink: dict[str, Any] = {}
    token = _ANALYSES.set(sink)
    try:
        yield sink
    finally:
        _ANALYSES.reset(token)


def record_analysis(key: str, value: Any) -> None:
    """Store an analysis result for whoever runs the pipeline (no-op when nobody asks)."""
    sink = _ANALYSES.get()
    if sink is not None:
        sink[key] = value


# ---------------------------------------------------------------------------
# Decisions: each rewrite a pass chooses to make (a group formed, a convolution rewritten, a
# tile attached) is numbered in pipeline order. As LLVM's -opt-bisect-limit, a limit keeps only
# the first N, so that bisecting N finds the first decision that breaks a model (braze check).


@dataclass
class DecisionLog:
    """The decisions made while a pipeline ran, in order, and how many of them may apply."""

    limit: int | None = None
    made: list[str] = dataclasses.field(default_factory=list)

    @property
    def applied(self) -> int:
        return len(self.made) if self.limit is None else min(self.limit, len(self.made))


_DECISIONS: contextvars.ContextVar[DecisionLog | None] = contextvars.ContextVar("braze_decisions", default=None)


@contextlib.contextmanager
def recording_decisions(limit: int | None = None) -> Iterator[DecisionLog]:
    """Number the decisions passes make while the block runs; apply only the first `limit`."""
    log = DecisionLog(limit)
    token = _DECISIONS.set(log)
    try:
        yield log
    finally:
        _DECISIONS.reset(token)


def decide(pass_name: str, what: str) -> bool:
    """Whether a pass may make the rewrite `what` (always, unless a decision limit is set)."""
    log = _DECISIONS.get()
    if log is None:
        return True
    log.made.append(f"{pass_name}: {what}")
    return log.limit is None or len(log.made) <= log.limit


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


def _parse_options(name: str, text: str) -> dict[str, str]:
    """`key=value key2="a b" flag` -> {key: value, key2: 'a b', flag: 'true'} (as MLIR's
    option syntax: whitespace separates, double quotes keep spaces, `\\` escapes)."""
    values, items, current, quoted, escaped = {}, [], "", False, False
    for ch in text + " ":
        if escaped:
            current, escaped = current + ch, False
        elif ch == "\\" and quoted:
            escaped = True
        elif ch == '"':
            quoted = not quoted
        elif ch.isspace() and not quoted:
            if current:
                items.append(current)
            current = ""
        else:
            current += ch
    if quoted:
        raise PassPipelineError(f"unterminated quote in options '{{{text}}}' of '{name}'")
    for item in items:
        key, eq, value = item.partition("=")
        if not key:
            raise PassPipelineError(f"empty option name in '{{{text}}}' of '{name}'")
        values[key] = value if eq else "true"
    return values


def parse_element(element: str):
    """A braze pass or pipeline instance for one pipeline element, or None if it is not braze's."""
    name, brace, rest = element.partition("{")
    name = name.strip()
    cls = PASSES.get(name) or PIPELINES.get(name)
    if cls is None:
        return None
    if brace and not rest.rstrip().endswith("}"):
        raise PassPipelineError(f"options of '{name}' must end in '}}': '{element}'")
    return cls.from_options(_parse_options(name, rest.rstrip()[:-1]) if brace else {})


def parse_pipeline(text: str) -> list[Step]:
    """Parse `builtin.module(a,b{opt=v})` or `a,b{opt=v}` into steps, expanding named pipelines."""
    text = text.strip()
    if text.startswith("builtin.module(") and text.endswith(")"):
        text = text[len("builtin.module(") : -1]
    steps: list[Step] = []
    for element in split_top_level(text):
        instance = parse_element(element)
        if isinstance(instance, PassPipeline):
            steps.extend(parse_pipeline(instance.expand()))
        elif instance is not None:
            steps.append(Step(instance.pipeline_text(), instance))
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
        except Exception as e:  # a bug in the pass: fail it with where it happened, never abort
            frame = traceback.extract_tb(e.__traceback__)[-1]
            where = f"{os.path.basename(frame.filename)}:{frame.lineno}"
            op.location.emit_error(f"{instance.name} raised {type(e).__name__}: {e} (at {where}; "
                                   "a bug in the pass)")
            pass_.signal_pass_failure()

    run.__name__ = type(instance).__name__
    return run


def build_pass_manager(steps: list[Step]) -> passmanager.PassManager:
    """A PassManager (in the current context) holding the steps in order. (MLIR loads here, not
    when the registry is imported: parsing and printing pipelines need none.)"""
    from braze._mlir import passmanager

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
