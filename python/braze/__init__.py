"""braze: an MLIR fusion compiler for PyTorch.

    fast = braze.compile(model, *example_inputs, device="cpu")
    fast(*inputs); print(fast.report); fast.save("model.braze"); braze.load("model.braze")

`braze.load` and calling a loaded module need only iree-base-runtime and numpy; compiling
needs torch, torch-mlir and iree-base-compiler.
"""

from .check import CheckResult, check
from .compiler import CompiledModule, __version__, compile, load
from .dynamic import DynamicModule
from .errors import (
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
from .targets import available_devices
from . import dynamo  # noqa: E402  (torch.compile(backend="braze"); imports no torch until used)


def set_cpu_threads(threads: int | None) -> None:
    """Threads for braze's CPU programs in this process, before the first CPU module runs: 1 runs
    each call on the calling thread (IREE's local-sync driver), N > 1 on N IREE workers, None on
    IREE's default (a worker per physical core). braze.runtime.set_cpu_threads says more."""
    from .runtime import set_cpu_threads as set_threads  # iree.runtime loads when it is needed

    set_threads(threads)

__all__ = [
    "ArtifactError", "CheckResult", "ArtifactExistsError", "BrazeError", "BrazeWarning", "CompileError", "CompiledModule", "DependencyError", "DynamicModule",
    "DeviceError", "ExecutionError", "ExportError", "InputError", "InternalError", "KernelResourceError", "PassPipelineError", "UnsupportedOpError", "UsageError",
    "__version__", "available_devices", "check", "compile", "dynamo", "load", "set_cpu_threads",
]
