"""braze-opt: mlir-opt for braze's passes.

Reads MLIR holding upstream dialects and the fusion dialect, runs any mix of braze's
Python passes and upstream MLIR passes, and prints the result. Flags that share a name
with mlir-opt's mean what they mean there:

    braze-opt in.mlir -p fusion-form-groups,canonicalize
    braze-opt in.mlir --pass-pipeline='builtin.module(fusion-default-pipeline)'
    braze-opt in.mlir --split-input-file --verify-diagnostics -p fusion-lower-to-linalg
    braze-opt in.mlir -p fusion-form-groups --mlir-print-ir-after=fusion-form-groups

When a pass fails, braze-opt writes the IR that went into the failing pass to a
reproducer file and prints the one-line command that replays just that pass.
"""

from __future__ import annotations

import argparse
import gc
import os
import re
import sys
import tempfile
from dataclasses import dataclass, field

from braze.errors import BrazeError
from braze.nativeio import captured_stderr as _captured_stderr
from braze.nativeio import flush

SPLIT_MARKER = "// -----"

_LOC_RE = re.compile(r'loc\("((?:[^"\\]|\\.)*)":(\d+):(\d+)')
_EXPECTED_RE = re.compile(
    r"expected-(error|warning|remark|note)(-re)?"
    r"(?:\s*@\s*(above|below|unknown|[+-]\d+))?\s*\{\{(.*)\}\}\s*$"
)
_DUMP_HEADER_RE = re.compile(r"^// -----// IR Dump (Before|After) (.*) //----- //$")


# ---------------------------------------------------------------------------
# Command line.


def _arg_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="braze-opt",
        description="Run braze's passes and upstream MLIR passes on MLIR text (mlir-opt for braze).",
        epilog="Pass names: braze-opt --list-passes. Upstream passes (canonicalize, cse, "
        "linalg-fuse-elementwise-ops, func.func(...)) are accepted in any pipeline.",
    )
    p.add_argument("input", nargs="?", default="-", metavar="FILE",
                   help="input MLIR file, '-' for stdin (default)")
    p.add_argument("-o", dest="output", default="-", metavar="FILE",
                   help="output file ('-' for stdout, the default)")
    p.add_argument("--pass-pipeline", metavar="PIPELINE",
                   help="textual pipeline, e.g. 'builtin.module(fusion-form-groups,canonicalize)'")
    p.add_argument("-p", dest="passes", metavar="PASSES", action="append",
                   help="comma-separated passes with {options}, e.g. -p 'fusion-form-groups,cse' "
                   "(repeatable; appended in order)")
    p.add_argument("--split-input-file", action="store_true",
                   help=f"split the input on '{SPLIT_MARKER}' lines and process each chunk separately")
    p.add_argument("--verify-diagnostics", action="store_true",
                   help="check diagnostics against expected-error/warning/remark/note comments")
    p.add_argument("--mlir-print-ir-before", metavar="PASS", action="append", default=[],
                   help="print the IR before each run of PASS (comma-separated list; repeatable)")
    p.add_argument("--mlir-print-ir-after", metavar="PASS", action="append", default=[],
                   help="print the IR after each run of PASS (comma-separated list; repeatable)")
    p.add_argument("--mlir-print-ir-before-all", action="store_true",
                   help="print the IR before every pass")
    p.add_argument("--mlir-print-ir-after-all", action="store_true",
                   help="print the IR after every pass")
    p.add_argument("--mlir-print-ir-after-failure", action="store_true",
                   help="print the IR after a pass that failed")
    p.add_argument("--mlir-print-ir-module-scope", action="store_true",
                   help="when printing IR around a pass, print the whole module (disables threading)")
    p.add_argument("--mlir-timing", action="store_true",
                   help="print the time spent in each pass")
    p.add_argument("--mlir-print-debuginfo", action="store_true",
                   help="print locations")
    p.add_argument("--mlir-print-op-generic", action="store_true",
                   help="print every op in generic form")
    p.add_argument("--mlir-disable-threading", action="store_true",
                   help="run passes on one thread")
    p.add_argument("--verify-each", default="true", choices=["true", "false", "1", "0"],
                   help="run the verifier after each pass (default true)")
    p.add_argument("--allow-unregistered-dialect", action="store_true",
                   help="accept ops of dialects that are not registered")
    p.add_argument("--mlir-pass-pipeline-crash-reproducer", metavar="FILE", dest="reproducer",
                   help="where to write the reproducer when a pass fails "
                   "(default: braze-opt-reproducer-<pid>.mlir in the temp directory)")
    p.add_argument("--decision-limit", type=int, default=None, metavar="N",
                   help="apply only the first N rewrite decisions of braze's passes (groups, rewrites, "
                   "tiles), as LLVM's -opt-bisect-limit; see --print-decisions")
    p.add_argument("--print-decisions", action="store_true",
                   help="print braze's numbered rewrite decisions to stderr, marking those skipped")
    p.add_argument("--list-passes", action="store_true",
                   help="list braze's passes and pipelines with their options, then exit")
    p.add_argument("--emit-irdl", action="store_true",
                   help="print the fusion dialect's IRDL definition, then exit")
    p.add_argument("--version", action="store_true", help="print versions, then exit")
    return p


def main(argv: list[str] | None = None) -> int:
    args = _arg_parser().parse_args(argv)
    try:
        return _main(args)
    except BrazeError as e:
        _flush()
        print(f"braze-opt: error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


def _main(args: argparse.Namespace) -> int:
    if args.version:
        print(_version_text())
        return 0
    if args.emit_irdl:
        from braze.dialects.fusion import emit_irdl

        return _write_output(args.output, emit_irdl().rstrip("\n") + "\n")
    import braze.passes  # noqa: F401  (registers braze's passes and pipelines)

    if args.list_passes:
        return _write_output(args.output, _list_passes_text())

    pipeline = _pipeline_text(args)
    _validate_pipeline(pipeline)
    _validate_pass_names(args)
    source, buffer_name = _read_input(args.input)

    chunks = _split(source) if args.split_input_file else [(1, source)]
    outputs, ok = [], True
    for index, (first_line, text) in enumerate(chunks):
        chunk = _Chunk(
            text="\n" * (first_line - 1) + text,
            buffer_name=buffer_name,
            source_lines=source.splitlines(),
            index=index if len(chunks) > 1 else None,
        )
        chunk_ok, output = _process_chunk(chunk, pipeline, args)
        ok &= chunk_ok
        if output is not None:
            outputs.append(output)
    separator = SPLIT_MARKER + "\n"
    if ok or args.output == "-":  # a failed run leaves an existing output file as it was
        _write_output(args.output, separator.join(outputs))
    return 0 if ok else 1


def _version_text() -> str:
    from importlib import metadata

    def version(dist: str) -> str:
        try:
            return metadata.version(dist)
        except metadata.PackageNotFoundError:
            return "not installed"

    return (f"braze-opt (braze {version('braze')})\n"
            f"  torch-mlir {version('torch-mlir')}, MLIR Python bindings from torch-mlir")


def _pipeline_text(args: argparse.Namespace) -> str:
    parts = []
    if args.pass_pipeline:
        text = args.pass_pipeline.strip()
        if not (text.startswith("builtin.module(") and text.endswith(")")):
            raise BrazeError(
                f"--pass-pipeline '{text}' must be anchored on the module: write "
                f"--pass-pipeline='builtin.module({text})' or use -p {text}"
            )
        parts.append(text[len("builtin.module("):-1])
    for text in args.passes or []:
        parts.append(text)
    return ",".join(p for p in parts if p.strip())


def _validate_pipeline(pipeline: str) -> None:
    """Fail before reading input when the pipeline names an unknown pass or a bad option."""
    from braze.dialects.fusion import new_context
    from braze.passes.registry import build_pass_manager, parse_pipeline

    with new_context(), _captured_stderr(True) as native:
        try:
            build_pass_manager(parse_pipeline(pipeline))
        except BrazeError as e:
            error = e
        else:
            return
    # MLIR reports a bad upstream option on its own stderr; fold it into the one message.
    detail = " ".join(native.getvalue().split())
    raise type(error)(f"{error} ({detail})" if detail else str(error)) from None


def _validate_pass_names(args: argparse.Namespace) -> None:
    """--mlir-print-ir-before/after name passes that exist (as mlir-opt insists), braze's or upstream's."""
    from braze._mlir import passmanager
    from braze.dialects.fusion import new_context
    from braze.passes.registry import PASSES

    for flag, values in (("--mlir-print-ir-before", args.mlir_print_ir_before),
                         ("--mlir-print-ir-after", args.mlir_print_ir_after)):
        for name in sorted(_pass_names(values)):
            if name in PASSES:
                continue
            with new_context(), _captured_stderr(True):
                try:
                    passmanager.PassManager.parse(f"builtin.module({name})")
                    continue
                except ValueError:
                    pass
            raise BrazeError(f"{flag}={name}: no pass is called '{name}' (braze-opt --list-passes lists "
                             "braze's; upstream names are MLIR pass arguments such as cse or canonicalize)")


def _read_input(path: str) -> tuple[str, str]:
    if path == "-":
        return sys.stdin.read(), "<stdin>"
    try:
        with open(path, encoding="utf-8") as f:
            return f.read(), path
    except (OSError, UnicodeDecodeError) as e:
        reason = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
        raise BrazeError(f"cannot read input file '{path}': {reason}") from None


def _write_output(path: str, text: str) -> int:
    if path == "-":
        sys.stdout.write(text)
        sys.stdout.flush()
        return 0
    from braze.fileutil import write_atomically

    try:
        write_atomically(path, text.encode("utf-8"), overwrite=True, regular_only=False)
    except OSError as e:
        raise BrazeError(f"cannot write output file '{path}': {e.strerror or e}") from None
    return 0


def _split(source: str) -> list[tuple[int, str]]:
    """Chunks of the source with the line (1-based) each starts on."""
    chunks, start, current = [], 1, []
    for number, line in enumerate(source.splitlines(keepends=True), start=1):
        if line.strip() == SPLIT_MARKER:
            chunks.append((start, "".join(current)))
            start, current = number + 1, []
        else:
            current.append(line)
    chunks.append((start, "".join(current)))
    return chunks


# ---------------------------------------------------------------------------
# Diagnostics.


@dataclass
class _Diag:
    severity: str  # error, warning, remark, note
    location: str  # str(ir.Location)
    message: str

    def position(self) -> tuple[str, int, int] | None:
        m = _LOC_RE.search(self.location)
        if not m:
            return None
        return m.group(1).replace('\\"', '"'), int(m.group(2)), int(m.group(3))


def _severity_name(severity) -> str:
    return str(getattr(severity, "name", severity)).split(".")[-1].lower()


def _diags_from(diagnostic) -> list[_Diag]:
    """A diagnostic and its notes, flattened in order, as mlir-opt reports them."""
    out = [_Diag(_severity_name(diagnostic.severity), str(diagnostic.location), diagnostic.message)]
    for note in diagnostic.notes:
        out.extend(_diags_from(note))
    return out


@dataclass
class _Chunk:
    text: str  # padded with newlines so that line numbers are the original file's
    buffer_name: str
    source_lines: list[str]
    index: int | None
    diags: list[_Diag] = field(default_factory=list)

    def render(self, diag: _Diag) -> str:
        """`file:line:col: severity: message` plus the source line and a caret, like mlir-opt."""
        pos = diag.position()
        if pos is None:
            where = "" if diag.location == "loc(unknown)" else f"{diag.location}: "
            return f"{where}{diag.severity}: {diag.message}\n"
        name, line, col = pos
        if name == "-":  # text parsed without a source name
            name = self.buffer_name
        text = f"{name}:{line}:{col}: {diag.severity}: {diag.message}\n"
        if name == self.buffer_name and 1 <= line <= len(self.source_lines):
            src = self.source_lines[line - 1]
            text += f"{src}\n{' ' * max(col - 1, 0)}^\n"
        return text


def _print_diags(chunk: _Chunk) -> None:
    for diag in chunk.diags:
        sys.stderr.write(chunk.render(diag))
    chunk.diags.clear()
    sys.stderr.flush()


@dataclass
class _Expected:
    severity: str
    pattern: str
    is_regex: bool
    line: int | None  # None: @unknown
    directive_line: int
    directive_col: int
    matched: bool = False

    def matches(self, diag: _Diag, buffer_name: str) -> bool:
        if self.matched or diag.severity != self.severity:
            return False
        pos = diag.position()
        if self.line is None:
            if pos is not None:
                return False
        elif pos is None or pos[1] != self.line or pos[0] not in (buffer_name, "-"):
            return False
        if self.is_regex:
            return re.search(_mlir_regex(self.pattern), diag.message) is not None
        return self.pattern in diag.message


def _mlir_regex(pattern: str) -> str:
    """expected-*-re text: literal except inside `{{...}}`, as in MLIR's verifier."""
    out, rest = [], pattern
    while "{{" in rest:
        literal, _, tail = rest.partition("{{")
        regex, _, rest = tail.partition("}}")
        out.append(re.escape(literal) + "(?:" + regex + ")")
    out.append(re.escape(rest))
    return "".join(out)


def _parse_expected(chunk: _Chunk) -> list[_Expected]:
    expected = []
    for number, line in enumerate(chunk.text.splitlines(), start=1):
        m = _EXPECTED_RE.search(line)
        if not m:
            continue
        severity, is_re, where, pattern = m.groups()
        if where is None:
            target = number
        elif where == "above":
            target = number - 1
        elif where == "below":
            target = number + 1
        elif where == "unknown":
            target = None
        else:
            target = number + int(where)
        expected.append(_Expected(severity, pattern, bool(is_re), target, number, m.start() + 1))
    return expected


def _verify(chunk: _Chunk) -> bool:
    """mlir-opt's --verify-diagnostics: every diagnostic expected, every expectation met."""
    expected = _parse_expected(chunk)
    ok = True
    for diag in chunk.diags:
        hit = next((e for e in expected if e.matches(diag, chunk.buffer_name)), None)
        if hit is not None:
            hit.matched = True
            continue
        ok = False
        shown = _Diag("error", diag.location, f"unexpected {diag.severity}: {diag.message}")
        sys.stderr.write(chunk.render(shown))
    for e in expected:
        if not e.matched:
            ok = False
            loc = f'loc("{chunk.buffer_name}":{e.directive_line}:{e.directive_col})'
            what = f"{e.severity}{'-re' if e.is_regex else ''}"
            sys.stderr.write(chunk.render(
                _Diag("error", loc, f'expected {what} "{e.pattern}" was not produced')))
    chunk.diags.clear()
    sys.stderr.flush()
    return ok


# ---------------------------------------------------------------------------
# One chunk: parse, run, print.


def _process_chunk(chunk: _Chunk, pipeline: str, args: argparse.Namespace) -> tuple[bool, str | None]:
    from braze._mlir import ir
    from braze.dialects.fusion import new_context

    ctx = new_context()
    ctx.allow_unregistered_dialects = args.allow_unregistered_dialect
    if args.mlir_disable_threading or args.mlir_print_ir_module_scope:
        ctx.enable_multithreading(False)

    def handler(diagnostic) -> bool:
        chunk.diags.extend(_diags_from(diagnostic))
        return True

    ctx.attach_diagnostic_handler(handler)
    with ctx:
        module = _parse(chunk, ir)
        ran = module is not None and _run_pipeline(module, chunk, pipeline, args, ir)
        output = None
        if ran:
            output = module.operation.get_asm(
                enable_debug_info=args.mlir_print_debuginfo,
                print_generic_op_form=args.mlir_print_op_generic,
                assume_verified=args.verify_each in ("true", "1"),
            )
            if not output.endswith("\n"):
                output += "\n"
        if args.verify_diagnostics:
            return _verify(chunk), output
        _print_diags(chunk)
        if module is not None and not ran:
            _write_reproducer(chunk, pipeline, args)
        return ran, output


def _parse(chunk: _Chunk, ir):
    """The chunk as a module, or None after recording the parser's diagnostics.

    mlir-opt wraps top-level ops that are not one `builtin.module` in an implicit module
    located at `file:0:0`; so does this.
    """
    try:
        op = ir.Operation.parse(chunk.text, source_name=chunk.buffer_name)
    except ir.MLIRError as e:
        if "source must contain a single top-level operation" not in str(e):
            for d in e.error_diagnostics:
                chunk.diags.extend(_diags_from(d))
            return None
        op = None
    if op is not None and op.operation.name == "builtin.module":
        return op
    module = ir.Module.create(ir.Location.file(chunk.buffer_name, 0, 0))
    if op is not None:
        module.body.append(op.operation)
        return module
    try:
        wrapped = ir.Operation.parse(_wrapped(chunk.text), source_name=chunk.buffer_name)
    except ir.MLIRError as e:
        for d in e.error_diagnostics:
            chunk.diags.extend(_diags_from(d))
        return None
    return wrapped


_ALIAS = re.compile(r"^[#!][A-Za-z_][\w.$-]*\s*=")


def _wrapped(text: str) -> str:
    """Top-level ops in a `module { ... }`, with the attribute and type aliases (`#map = ...`)
    left outside it, where MLIR requires them; every line keeps its number."""
    lines = text.split("\n")
    last = max((i for i, line in enumerate(lines) if _ALIAS.match(line)), default=-1)
    if last + 1 == len(lines):
        lines.append("")
    lines[last + 1] = "module {" + lines[last + 1]
    return "\n".join(lines) + "\n}"


def _run_pipeline(module, chunk: _Chunk, pipeline: str, args: argparse.Namespace, ir) -> bool:
    """Run the pipeline on the module in place; False after recording a failure's diagnostics."""
    from braze.passes.registry import build_pass_manager, parse_pipeline

    if not pipeline:
        return True
    pm = build_pass_manager(parse_pipeline(pipeline))
    pm.enable_verifier(args.verify_each in ("true", "1"))
    before = _pass_names(args.mlir_print_ir_before)
    after = _pass_names(args.mlir_print_ir_after)
    printing = (args.mlir_print_ir_before_all or args.mlir_print_ir_after_all or before or after
                or args.mlir_print_ir_after_failure)
    if printing:
        pm.enable_ir_printing(
            print_before_all=args.mlir_print_ir_before_all or bool(before),
            print_after_all=args.mlir_print_ir_after_all or bool(after),
            print_after_failure=args.mlir_print_ir_after_failure,
            print_module_scope=args.mlir_print_ir_module_scope,
            enable_debug_info=args.mlir_print_debuginfo,
            print_generic_op_form=args.mlir_print_op_generic,
        )
    if args.mlir_timing:
        pm.enable_timing()
    # MLIR prints IR dumps to its own stderr; to honour a per-pass filter, braze-opt
    # collects them and keeps only the dumps of the named passes.
    filtering = bool(before or after) and not (args.mlir_print_ir_before_all and args.mlir_print_ir_after_all)
    ok = True
    from braze.passes.registry import recording_decisions

    with _captured_stderr(filtering) as captured, recording_decisions(args.decision_limit) as decisions:
        try:
            pm.run(module.operation)
        except ir.MLIRError as e:
            for d in e.error_diagnostics:
                chunk.diags.extend(_diags_from(d))
            ok = False
        finally:
            # The timing report prints when the PassManager is destroyed.
            del pm
            gc.collect()
    if filtering:
        sys.stderr.write(_filter_dumps(captured.getvalue(), before, after, args))
        sys.stderr.flush()
    if args.print_decisions:
        for i, what in enumerate(decisions.made, start=1):
            skipped = decisions.limit is not None and i > decisions.limit
            sys.stderr.write(f"braze-opt: decision {i}{' (skipped)' if skipped else ''}: {what}\n")
        sys.stderr.flush()
    return ok


def _pass_names(values: list[str]) -> set[str]:
    return {name.strip() for value in values for name in value.split(",") if name.strip()}


_flush = flush


def _dump_pass_argument(header_rest: str) -> str:
    """`CSEPass: cse` or `FormGroupsPass: fusion-form-groups{...} ('func.func' ...)` -> the argument."""
    _, _, spec = header_rest.partition(": ")
    return re.split(r"[{\s(]", spec.strip(), maxsplit=1)[0] if spec else header_rest.split()[0]


def _filter_dumps(text: str, before: set[str], after: set[str], args: argparse.Namespace) -> str:
    """Keep the IR dumps asked for (and anything that is not an IR dump)."""
    out, keep = [], True
    for line in text.splitlines(keepends=True):
        m = _DUMP_HEADER_RE.match(line.rstrip("\n"))
        if m:
            when, rest = m.groups()
            arg = _dump_pass_argument(rest)
            failed = " Failed" in rest.partition(":")[0]
            if when == "Before":
                keep = args.mlir_print_ir_before_all or arg in before
            else:
                keep = (args.mlir_print_ir_after_all or arg in after
                        or (failed and args.mlir_print_ir_after_failure))
        if keep:
            out.append(line)
    return "".join(out)


# ---------------------------------------------------------------------------
# Reproducers.


def _write_reproducer(chunk: _Chunk, pipeline: str, args: argparse.Namespace) -> None:
    """Find the failing step by replaying the pipeline one step at a time on a fresh parse,
    write the IR that went into it, and print the command that replays just that step
    (braze.passes.runner does the same for braze.compile)."""
    from braze._mlir import ir
    from braze.dialects.fusion import new_context
    from braze.passes.registry import parse_pipeline
    from braze.passes.runner import find_failing_step, replay_command, write_reproducer

    ctx = new_context()
    ctx.allow_unregistered_dialects = args.allow_unregistered_dialect
    ctx.attach_diagnostic_handler(lambda d: True)
    with ctx:
        scratch = _Chunk(chunk.text, chunk.buffer_name, chunk.source_lines, chunk.index)
        module = _parse(scratch, ir)
        if module is None:
            return
        failure = find_failing_step(module.operation, parse_pipeline(pipeline),
                                    verify=args.verify_each in ("true", "1"))
    if failure is None:
        # The failure did not recur pass by pass: hand over the input and the whole pipeline.
        ir_text, replay = chunk.text.lstrip("\n"), pipeline
        note = "the failure did not recur when the passes ran one at a time; this replays the whole pipeline"
    else:
        ir_text, replay = failure.ir_text, failure.replay
        note = f"the IR that went into the failing pass '{replay}'"
    path = _reproducer_path(args, chunk)
    extra = (("--allow-unregistered-dialect",) if args.allow_unregistered_dialect else ()) + \
        (("--verify-each=false",) if args.verify_each in ("false", "0") else ())
    shown = replay_command(path, replay, extra)
    try:
        write_reproducer(path, ir_text, shown, note)
    except OSError as e:
        sys.stderr.write(f"braze-opt: could not write a reproducer to '{path}': {e.strerror or e}\n")
        return
    sys.stderr.write(f"braze-opt: pass '{replay}' failed; reproducer written to {path}\n"
                     f"braze-opt: reproduce with: {shown}\n")
    sys.stderr.flush()


def _reproducer_path(args: argparse.Namespace, chunk: _Chunk) -> str:
    suffix = "" if chunk.index is None else f"-{chunk.index}"
    if args.reproducer:
        root, ext = os.path.splitext(args.reproducer)
        return f"{root}{suffix}{ext or '.mlir'}" if suffix else args.reproducer
    return os.path.join(tempfile.gettempdir(), f"braze-opt-reproducer-{os.getpid()}{suffix}.mlir")


# ---------------------------------------------------------------------------
# --list-passes.


def _list_passes_text() -> str:
    from braze.passes.registry import PASSES, PIPELINES

    lines = ["braze passes (use them in -p / --pass-pipeline):"]
    for name in sorted(PASSES):
        lines += _describe(PASSES[name])
    lines.append("")
    lines.append("braze pipelines (the device pipelines are what braze.compile runs):")
    for name in sorted(PIPELINES):
        cls = PIPELINES[name]
        lines += _describe(cls)
        lines.append(f"    = {cls().expand()}")
    lines.append("")
    lines.append("Upstream MLIR passes are accepted too, in any mix with braze's: e.g. canonicalize, "
                 "cse, linalg-fuse-elementwise-ops, func.func(canonicalize); "
                 "`torch-mlir-opt --help` lists them with their options.")
    return "\n".join(lines) + "\n"


def _describe(cls) -> list[str]:
    """A pass's or pipeline's name, summary and options, as --list-passes shows them."""
    lines = [f"  {cls.name}  -  {getattr(cls, 'summary', '')}"]
    docs = _option_docs(cls)
    for f in cls.options():
        default = f.default
        shown = str(default).lower() if isinstance(default, bool) else repr(default) \
            if isinstance(default, str) else str(default)
        lines.append(f"    {f.name.replace('_', '-')}=<{type(default).__name__}>"
                     f"  (default: {shown})  {docs.get(f.name, '')}".rstrip())
    return lines


def _option_docs(cls) -> dict[str, str]:
    """Each option's one-line doc: `option(doc=...)` metadata, else the docstring under the field."""
    import ast
    import dataclasses
    import inspect
    import textwrap

    docs = {f.name: f.metadata.get("doc", "") for f in dataclasses.fields(cls)} \
        if dataclasses.is_dataclass(cls) else {}
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    except (OSError, TypeError, SyntaxError):
        return docs
    body = tree.body[0].body if tree.body and isinstance(tree.body[0], ast.ClassDef) else []
    for node, nxt in zip(body, body[1:]):
        if (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)
                and isinstance(nxt, ast.Expr) and isinstance(nxt.value, ast.Constant)
                and isinstance(nxt.value.value, str) and not docs.get(node.target.id)):
            docs[node.target.id] = nxt.value.value.strip().splitlines()[0]
    return docs


if __name__ == "__main__":
    sys.exit(main())
