"""The back-end MLIR bindings: IREE's in-process compiler.

The only module that imports `iree.compiler`. IR arrives as MLIR bytecode (or text) from
the front-end context; objects never cross between the two binding packages.
"""

from __future__ import annotations

import json
import os
import pathlib
import tempfile
from dataclasses import dataclass, field

from braze.errors import CompileError, DependencyError
from braze.nativeio import captured_stderr

try:
    from iree.compiler import ir as iree_ir
    from iree.compiler.api import Output, Session
except ImportError as e:  # pragma: no cover - only without iree-base-compiler
    raise DependencyError(
        f"compiling needs iree-base-compiler ({e}): `pip install iree-base-compiler==3.13.0`. "
        "Running a saved artifact needs only iree-base-runtime."
    ) from e


def _failure_message(what: str, diagnostics: list[str], native: str) -> str:
    """One error whose first line says what went wrong: the most specific line IREE printed
    (a linker's undefined symbol, an op that failed to verify), then the rest."""
    linker = [line.strip() for line in native.splitlines() if "undefined symbol" in line]
    specific = [d for d in diagnostics if "check above" not in d and "failed to serialize" not in d]
    first = linker[0] if linker else (specific or diagnostics or ["no diagnostics"])[0]
    hint = ""
    if linker:
        symbol = linker[0].rsplit(":", 1)[-1].strip()
        hint = (f" (IREE's CPU code generator has no '{symbol}' for this dtype: some float64 math functions, "
                "such as fmod, are missing from its runtime library (braze writes out sin, cos, tan, atan, "
                "atan2, asin, acos, tanh, log2 and erf itself); compute this one in float32)")
    rest = [d for d in diagnostics if d != first][:5]
    return f"IREE failed to compile {what}: {first}{hint}" + "".join(f"\n  {d}" for d in rest)


def _invalid_ir(what: str, problem: str, error: Exception, text: str | None) -> Exception:
    """InternalError for IR braze hands IREE that IREE's parser or verifier rejects, with the IR
    written where the pass runner writes its reproducers (BRAZE_REPRODUCER_DIR, else the temp dir)."""
    from braze.errors import InternalError
    from braze.fileutil import default_reproducer_path, write_reproducer

    first = str(error).strip().splitlines()
    where = ""
    if text is not None:
        path = default_reproducer_path("braze-iree-input")
        command = f"iree-compile {path} -o /dev/null"
        try:
            write_reproducer(path, text, command, "the module braze handed IREE's compiler, which rejected it")
            where = f" The module: {path}; replay with: {command}."
        except OSError as e:
            where = f" (no reproducer: cannot write {path}: {e.strerror or e})"
    return InternalError(f"{problem} for {what}: {' '.join(first[:3])[:600]}. This is a bug in braze, not in "
                         f"the model: please report it with the reproducer.{where}")


@dataclass
class CompiledVmfb:
    vmfb: bytes
    dispatch_count: int | None
    executable_count: int | None
    at_hal: object = None
    """What compile_module's `at_hal` callback returned (the CUDA launch plan)."""
    dispatch_fusion: str = ""
    """How IREE formed dispatches where braze chose (backend.AGGRESSIVE_FUSION)."""
    workarounds: list = field(default_factory=list)
    """Dispatches braze configured differently from IREE to avoid an IREE bug (braze.compiler.vulkan_workarounds)."""


_PROBED: dict[tuple, str | None] = {}


def probe_flags(flags: list[str]) -> str | None:
    """Compile an empty function with `flags` in a child process: None when IREE accepts them,
    else what it printed. For flags that make LLVM abort the process instead of failing (an
    unknown `--iree-llvmcpu-target-cpu`), which must never run in the user's process first."""
    key = tuple(flags)
    if key not in _PROBED:
        import subprocess

        from iree.compiler.tools import binaries

        source = "func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> { return %a : tensor<4xf32> }"
        with tempfile.TemporaryDirectory(prefix="braze-probe-") as tmp:
            path = os.path.join(tmp, "probe.mlir")
            with open(path, "w") as f:
                f.write(source)
            done = subprocess.run([binaries.find_tool("iree-compile"), *flags, path, "-o", os.devnull],
                                  capture_output=True, text=True, timeout=120)
        text = (done.stderr + done.stdout).strip()
        _PROBED[key] = None if done.returncode == 0 and "not a recognized" not in text else text or \
            f"iree-compile exited with status {done.returncode}"
    return _PROBED[key]


def module_text(source: bytes, *, module_hook=None) -> str:
    """The module as IREE's bindings parse it, after `module_hook`, as text (no compilation)."""
    session = Session()
    with session.context:
        try:
            module = iree_ir.Module.parse(source)
        except iree_ir.MLIRError as e:
            raise CompileError(f"IREE could not parse the module braze produced (a braze bug): {e}") from None
        if module_hook is not None:
            module_hook(module)
        return module.operation.get_asm(enable_debug_info=False)


def _phases(inv) -> tuple:
    """The C API's compile-to and compile-from phase setters, which IREE's Python wrapper lacks."""
    import ctypes

    from iree.compiler.api import ctypes_dl

    lib = ctypes_dl._dylib
    for fn in (lib.ireeCompilerInvocationSetCompileToPhase, lib.ireeCompilerInvocationSetCompileFromPhase):
        fn.argtypes, fn.restype = [ctypes.c_void_p, ctypes.c_char_p], None
    return (lambda phase: lib.ireeCompilerInvocationSetCompileToPhase(inv._inv_p, phase.encode()),
            lambda phase: lib.ireeCompilerInvocationSetCompileFromPhase(inv._inv_p, phase.encode()))


def compile_module(source: "bytes | str | pathlib.Path", flags: list[str], *, module_hook=None,
                   what: str = "the module", at_hal=None, at_configurations=None) -> CompiledVmfb:
    """Compile MLIR (bytecode or text, or a pathlib.Path to a file of either) with IREE; return
    the .vmfb and scheduling statistics.

    `module_hook(ir.Module)` may edit the parsed module in IREE's context before
    compilation (used to attach explicit device targets). `at_hal(module_op)`, when given, is
    called with the program at IREE's `hal` phase (host code as HAL commands, executables
    serialized), in the same invocation, which then goes on to VM bytecode; what it returns is
    CompiledVmfb.at_hal. `at_configurations(module_op)`, likewise, at IREE's
    `executable-configurations` phase (each dispatch's code-generation pipeline and tiles chosen,
    not yet generated), may change those choices; the list of lines it returns is
    CompiledVmfb.workarounds.
    """
    with tempfile.TemporaryDirectory(prefix="braze-iree-") as tmp:
        stats_path = os.path.join(tmp, "stats.json")
        session = Session()
        try:
            session.set_flags(
                *flags,
                "--iree-scheduling-dump-statistics-format=json",
                f"--iree-scheduling-dump-statistics-file={stats_path}",
            )
        except ValueError as e:
            raise CompileError(f"IREE rejected the compiler flags {flags}: {e}") from None
        diagnostics: list[str] = []
        inv = session.invocation()
        with session.context:
            try:
                module = (iree_ir.Module.parseFile(str(source)) if isinstance(source, pathlib.Path)
                          else iree_ir.Module.parse(source))
            except iree_ir.MLIRError as e:
                raise _invalid_ir(what, "IREE's compiler could not parse the module braze produced", e,
                                  source if isinstance(source, str) else None) from None
            if module_hook is not None:
                module_hook(module)
            try:
                # braze's last rewrites (the hook's) are checked here, so that IR braze got wrong
                # is braze's error, not a diagnostic from deep inside IREE's pipeline
                module.operation.verify()
            except iree_ir.MLIRError as e:
                raise _invalid_ir(what, "braze's rewrites for IREE left invalid IR", e,
                                  module.operation.get_asm(enable_debug_info=True)) from None
            inv.import_module(module.operation)  # returns nothing; failures raise
        with session.context as ctx:
            handle = ctx.attach_diagnostic_handler(
                lambda d: diagnostics.append(f"{d.location}: {d.message}") or True
            )
            found = {}
            try:
                # IREE's passes and LLVM's linker print to fd 2: kept for the error, else dropped.
                with captured_stderr() as native:
                    stops = [(phase, fn) for phase, fn in (("executable-configurations", at_configurations),
                                                           ("hal", at_hal)) if fn is not None]
                    if not stops:
                        ok = inv.execute()
                    else:
                        to_phase, from_phase = _phases(inv)
                        for phase, fn in stops:
                            to_phase(phase)
                            ok = inv.execute()
                            if not ok:
                                break
                            stopped = inv.export_module()
                            found[phase] = fn(stopped)
                            inv.import_module(stopped)
                            from_phase(phase)
                        if ok:
                            to_phase("end")
                            ok = inv.execute()
            finally:
                handle.detach()
        if not ok:
            raise CompileError(_failure_message(what, diagnostics, native.text))
        # through a file: one copy of the program (its weights) in memory, where a membuffer
        # and the bytes read from it were two
        vmfb_path = os.path.join(tmp, "module.vmfb")
        out = Output.open_file(vmfb_path)
        inv.output_vm_bytecode(out)
        out.keep()
        out.close()
        with open(vmfb_path, "rb") as f:
            vmfb = f.read()
        dispatches = executables = None
        if os.path.exists(stats_path):
            with open(stats_path) as f:
                stats = json.load(f)
            agg = stats.get("stream-aggregate", {})
            dispatches = agg.get("execution", {}).get("dispatch-count")
            executables = agg.get("executable", {}).get("executable-count")
        return CompiledVmfb(vmfb, dispatches, executables, found.get("hal"),
                            workarounds=found.get("executable-configurations") or [])
