"""braze: an MLIR fusion compiler for PyTorch.

    fast = braze.compile(model, *example_inputs, device="cpu")
    fast(*inputs); print(fast.report); fast.save("model.braze"); braze.load("model.braze")

`braze.load` and calling a loaded module need only iree-base-runtime and numpy (braze.runtime);
compiling needs torch, torch-mlir and iree-base-compiler (braze.compiler, braze.passes).
"""

__version__ = "0.1.0"

from braze.errors import (
    ArtifactError,
    ArtifactExistsError,
    BrazeError,
    BrazeWarning,
    CompileError,
    DependencyError,
    DeviceError,
    ExecutionError,
    ExportError,
    InputError,
    InternalError,
    KernelResourceError,
    PassPipelineError,
    UnsupportedOpError,
    UsageError,
)
from braze.runtime import CompiledModule, DynamicModule, load
from braze.targets import available_devices

_COMPILE_SIDE = {"compile": "braze.compiler", "check": "braze.check", "CheckResult": "braze.check",
                 "compile_decoder": "braze.compiler.decoder", "generate": "braze.compiler.decoder",
                 "load_decoder": "braze.runtime.decoder"}
"""Loaded on first use (load_decoder too: it is the runtime's, but the token loop needs torch)."""


def __getattr__(name: str):
    """braze.compile and braze.check on first use: `import braze` and braze.load import nothing
    of the compiler (test_load_runtime_only.py); braze.dynamo is torch.compile's backend."""
    import importlib

    if name in _COMPILE_SIDE:
        value = getattr(importlib.import_module(_COMPILE_SIDE[name]), name)
    elif name == "dynamo":
        value = importlib.import_module("braze.dynamo")
    else:
        raise AttributeError(f"module 'braze' has no attribute {name!r}")
    globals()[name] = value
    return value


def set_cpu_threads(threads: int | None) -> None:
    """Threads for braze's CPU programs in this process, before the first CPU module runs: 1 runs
    each call on the calling thread (IREE's local-sync driver), N > 1 on N IREE workers, None on
    IREE's default (a worker per physical core). braze.runtime.cpu.set_cpu_threads says more."""
    from braze.runtime.cpu import set_cpu_threads as set_threads  # iree.runtime loads when it is needed

    set_threads(threads)


__all__ = [
    "ArtifactError", "CheckResult", "ArtifactExistsError", "BrazeError", "BrazeWarning", "CompileError", "CompiledModule", "DependencyError", "DynamicModule",
    "DeviceError", "ExecutionError", "ExportError", "InputError", "InternalError", "KernelResourceError", "PassPipelineError", "UnsupportedOpError", "UsageError",
    "__version__", "available_devices", "check", "compile", "compile_decoder", "dynamo", "generate", "load", "load_decoder", "set_cpu_threads",
]
