"""The exceptions braze raises for problems a user can cause.

Every message names the thing that is wrong, where it came from (FX node, source line,
file, flag) and what to do next. Catch `BrazeError` to catch them all.
"""


class BrazeError(Exception):
    """Base class of every error braze raises on purpose."""


class DependencyError(BrazeError):
    """A package needed for this step (torch, torch-mlir, iree-base-compiler) is missing."""


class UnsupportedOpError(BrazeError):
    """torch-mlir or IREE cannot lower an operation of the model.

    `op`: the aten op (e.g. 'aten.erfinv') where braze knows it, else None; `node`: its FX node's
    name (braze.compile(partial=True) runs such ops in eager)."""

    def __init__(self, message: str = "", op: str | None = None, node: str | None = None):
        super().__init__(message)
        self.op, self.node = op, node


class ExportError(BrazeError):
    """torch.export could not capture the model with the example inputs."""


class CompileError(BrazeError):
    """The fusion pipeline or IREE's compiler failed on the model."""


class KernelResourceError(CompileError):
    """A generated kernel needs more of the GPU than it has (shared memory): the tile does not fit
    (a forced or tuned tile; the cost model's tiles fit)."""


class InternalError(BrazeError):
    """braze itself failed (a bug in braze, not in the model): the message says where, and how
    to reproduce it."""


class ExecutionError(BrazeError, RuntimeError):
    """IREE's runtime failed while running a compiled program (a RuntimeError too, as
    iree.runtime's own failures are): the message says which program and what IREE reported."""


class PassPipelineError(BrazeError):
    """A pass pipeline string names an unknown pass or a bad option."""


class UsageError(BrazeError):
    """A command-line flag or argument is malformed (the CLIs exit with status 2, as argparse)."""


class InputError(BrazeError):
    """A call got the wrong number, shape, dtype or device of arguments."""


class DeviceError(BrazeError):
    """A device is unknown, unavailable, or not the one a module was compiled for."""


class ArtifactError(BrazeError):
    """A saved artifact is missing, corrupt, truncated or from an incompatible version."""


class ArtifactExistsError(ArtifactError, FileExistsError):
    """save() found something at its path and was not told to overwrite it (or may never
    replace it: a directory, device, FIFO or symlink)."""


class BrazeWarning(UserWarning):
    """Something braze did that a user may not expect (a model compiled in training mode,
    inputs that require grad)."""
