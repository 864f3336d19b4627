"""braze.compile and braze.load: the product's API.

    fast = braze.compile(model, x, device="cpu")   # export, import, fuse, IREE compile
    y = fast(x)                                    # torch in, torch out
    print(fast.report)
    fast.save("model.braze"); braze.load("model.braze")
"""

from __future__ import annotations

import io
import json
import os
import platform
import time
from dataclasses import dataclass
from typing import Any

from . import artifact
from .errors import DeviceError
from .report import Report
from .signature import Signature
from .targets import Target, resolve

ATTENTION_AS_ONE_OP = {"cuda": ("bfloat16", "float16")}
"""Where compile(attention=None) lowers attention to one op: device -> dtypes (bench/NOTES.md §12)."""
_FLOAT_DTYPES = ("bfloat16", "float16", "float32", "float64")

__version__ = "0.1.0"


class CompiledModule:
    """A model compiled by braze: call it like the model; inspect `.report`; `save()` it."""

    def __init__(self, vmfb: bytes, target: Target, signature: Signature, report: Report,
                 versions: dict | None = None, source: str = "the compiled module", abi: dict | None = None):
        self.vmfb = vmfb
        self.abi = {"output_storage": False, "transient_storage": False, **(abi or {})}
        """How main is called: output_storage when it takes a buffer per result after its inputs,
        transient_storage when it then takes one buffer for all intermediates."""
        self.target = target
        self.signature = signature
        self.report = report
        self.versions = versions or {}
        self._source = source
        self._program = None
        self._names = None

    @property
    def program(self):
        if self._program is None:
            from .runtime import Program

            self._program = Program(self.vmfb, self.target, self.signature, self._source,
                                    output_storage=self.abi["output_storage"],
                                    transient_storage=self.abi["transient_storage"])
        return self._program

    def __call__(self, *args, **kwargs) -> Any:
        flat = self.signature.flatten_call(args, kwargs)
        values = [v for v, _ in flat]
        if self._names is None:  # argument names depend only on the signature's structure
            from .signature import describe_path

            self._names = [describe_path(p) for _, p in flat]
        names = self._names
        if _wants_torch(values):
            outputs = self.program.call_torch(values, names)
        else:
            outputs = self.program(values, names)
        return self.signature.unflatten_outputs(outputs)

    def save(self, path: str | os.PathLike, overwrite: bool = False):
        """Write the program and its metadata to one file; refuses an existing path unless overwrite=True."""
        meta = {
            "signature": self.signature.to_json(),
            "target": self.target.to_json(),
            "versions": self.versions,
            "report": self.report.to_json(),
            "abi": self.abi,
        }
        return artifact.write(path, self.vmfb, meta, overwrite=overwrite)

    def __repr__(self) -> str:
        ins = ", ".join(s.describe() for s in self.signature.inputs)
        return f"<braze.CompiledModule {self.report.model or 'model'}({ins}) on {self.target.describe()}>"


def _wants_torch(values: list) -> bool:
    if any(type(v).__module__.startswith("torch") for v in values):
        return True
    if values:
        return False
    try:
        import torch  # noqa: F401

        return True
    except ImportError:
        return False


def load(path: str | os.PathLike, device: str | None = None) -> CompiledModule:
    """Load a saved artifact. Needs only iree-base-runtime and numpy (torch optional)."""
    vmfb, meta = artifact.read(path)
    target = Target(meta["target"]["device"], meta["target"]["arch"])
    if device is not None and device not in ("auto", target.device):
        raise DeviceError(
            f"{path} was compiled for {target.describe()}, not for device '{device}'; "
            f"load it with device='{target.device}' or recompile for {device}"
        )
    signature = Signature.from_json(meta["signature"])
    report = Report.from_json(meta.get("report", {}))
    module = CompiledModule(vmfb, target, signature, report, meta.get("versions"), source=str(path),
                            abi=meta.get("abi"))
    module.program  # open the device now: a missing device or bad program fails at load time
    return module


def device_pipeline(target: Target, fusion: bool = True) -> str:
    """The pipeline braze.compile runs for a target: the device's (with the user's tuning cache
    on CUDA) or, without fusion, the baseline."""
    from braze import tuning
    from braze.passes import pipelines

    if not fusion:
        return pipelines.BaselinePipeline().pipeline_text()
    return pipelines.for_device(target.device, target.arch, str(tuning.default_path())).pipeline_text(("target",))


def versions() -> dict:
    import importlib.metadata as md

    found = {"braze": __version__, "python": platform.python_version()}
    for dist, key in (("torch", "torch"), ("torch-mlir", "torch_mlir"),
                      ("iree-base-compiler", "iree_compiler"), ("iree-base-runtime", "iree_runtime")):
        try:
            found[key] = md.version(dist)
        except md.PackageNotFoundError:
            pass
    return found


def compile(model, *example_inputs, device: str = "cpu", target: str | None = None,
            fusion: bool = True, pipeline: str | None = None, example_kwargs: dict | None = None,
            output_storage: bool | None = None, transient_storage: bool = True, iree_flags: list[str] | None = None,
            attention: bool | None = None, **options) -> CompiledModule:
    """Compile a torch.nn.Module for a device.

    device: 'cpu' (default), 'cuda', 'vulkan' or 'auto' (cuda, else vulkan, else cpu).
    target: compile for another machine: a CUDA capability ('sm_90'), a Vulkan target
      ('ampere') or an LLVM CPU name; the result runs there after save()/load().
    fusion: False compiles without braze's fusion passes (the baseline).
    pipeline: a pass pipeline to run instead of fusion-default-pipeline.
    example_kwargs: keyword arguments of forward(), as in the example call.
    output_storage: results are written into tensors braze allocates with torch (True) or
      into IREE's own buffers (False); the default is True for cuda, False elsewhere.
    transient_storage: intermediates live in one buffer that the module allocates on its first
      call and reuses (True, the default), or IREE allocates and frees them on every call
      (False: less memory held between calls, slower calls; see bench/NOTES.md §9).
    iree_flags: extra iree-compile flags, after braze's own (e.g. ['--iree-hal-memoization=false']).
    attention: compile softmax(q k^T * c) v, written out or as scaled_dot_product_attention, as
      one attention op (one IREE dispatch) instead of matmul, softmax, matmul. The default
      (None) does so where that measured faster: cuda in bfloat16/float16 (bench/NOTES.md §12).
      IREE 3.13's float32 attention kernel on CUDA and its CPU one ran far slower than the
      three dispatches, and it cannot compile the op for Vulkan.
    """
    if options:
        raise TypeError(f"braze.compile() got unknown options: {', '.join(sorted(options))}")
    lowered = lower(model, *example_inputs, device=device, target=target, fusion=fusion, pipeline=pipeline,
                    example_kwargs=example_kwargs, attention=attention)
    tgt, report = lowered.target, lowered.report
    from . import backend

    t0 = time.perf_counter()
    if output_storage is None:
        output_storage = backend.default_output_storage(tgt)
    compiled = backend.compile_for_target(lowered.bytecode(), tgt, list(iree_flags or []),
                                          output_storage=output_storage, transient_storage=transient_storage)
    report.stage_seconds["iree_compile"] = time.perf_counter() - t0
    report.dispatch_count = compiled.dispatch_count
    report.executable_count = compiled.executable_count
    return CompiledModule(compiled.vmfb, tgt, lowered.signature, report, versions(),
                          source=f"the compiled {type(model).__name__}",
                          abi={"output_storage": output_storage, "transient_storage": transient_storage})


@dataclass
class Lowered:
    """A model after braze's front end and pass pipeline: the module braze.compile hands to IREE."""

    target: Target
    signature: Signature
    report: Report
    module: Any
    """The linalg module (torch-mlir's bindings), in `context`."""
    context: Any

    def bytecode(self) -> bytes:
        buffer = io.BytesIO()
        with self.context:
            self.module.operation.write_bytecode(buffer)
        return buffer.getvalue()

    def text(self, debuginfo: bool = False) -> str:
        """The module as MLIR text, printed as braze-opt prints it."""
        with self.context:
            text = self.module.operation.get_asm(enable_debug_info=debuginfo)
        return text if text.endswith("\n") else text + "\n"


def lower(model, *example_inputs, device: str = "cpu", target: str | None = None, fusion: bool = True,
          pipeline: str | None = None, example_kwargs: dict | None = None, attention: bool | None = None) -> Lowered:
    """The first half of braze.compile (same arguments): export, import, run braze's pipeline.
    `braze compile --emit mlir` prints its result; braze.compile hands it to IREE."""
    tgt = resolve(device, target)
    # Compile-side modules (torch, torch-mlir): braze.load must not need them.
    from . import frontend
    from braze.passes import runner
    from braze.passes.gpu.signatures import kernel_configs
    from braze.passes.report import count_linalg_ops

    pipeline_text = pipeline or device_pipeline(tgt, fusion)
    if attention is None:
        dtypes = ATTENTION_AS_ONE_OP.get(tgt.device, ()) if fusion else ()
    else:
        dtypes = _FLOAT_DTYPES if attention else ()
    import torch

    imported = frontend.import_model(model, example_inputs, example_kwargs or {},
                                     attention=frozenset(getattr(torch, d) for d in dtypes))
    report = Report(model=type(model).__name__, target=tgt.describe(), fusion=fusion, pipeline=pipeline_text)
    report.stage_seconds.update(imported.times)
    report.attention = dict(imported.attention)

    with imported.context:
        module_op = imported.module.operation
        report.linalg_ops_before = count_linalg_ops(module_op)
        t0 = time.perf_counter()
        analyses = runner.run_pipeline(imported.module, pipeline_text, model=type(model).__name__,
                                       internal=pipeline is None)
        report.stage_seconds["fusion"] = time.perf_counter() - t0
        report.linalg_ops_after = count_linalg_ops(module_op)
        report.kernel_configs = kernel_configs(module_op)
        fusion_report = analyses.get("fusion-report")
        if fusion_report is not None:
            data = json.loads(fusion_report.to_json())
            report.groups = data.get("groups", [])
            report.unfused = data.get("unfused", [])
            report.fusion_text = fusion_report.summary_text()
    return Lowered(tgt, imported.signature, report, imported.module, imported.context)
