"""A compiled model as it runs: the object braze.compile returns and braze.load reads back.

    fast(x)                               # torch in, torch out (numpy in, numpy out)
    fast.save("model.braze"); m = braze.load("model.braze")

Runtime side: this module and everything it imports need iree-base-runtime and numpy only
(torch where the caller passes torch tensors); never torch-mlir, IREE's compiler or braze's
compiler (test_load_runtime_only.py).
"""

from __future__ import annotations

import json
import os
import warnings
from typing import Any

from braze.errors import ArtifactError, BrazeWarning, DependencyError, DeviceError, InputError
from braze.report import Report
from braze.runtime import artifact
from braze.signature import Signature
from braze.targets import Target

RUNTIMES = ("auto", "launch", "iree")
PLAN_FILE = "cuda/plan.json"


class CompiledModule:
    """A model compiled by braze: call it like the model; inspect `.report`; `save()` it."""

    def __init__(self, vmfb: bytes, target: Target, signature: Signature, report: Report,
                 versions: dict | None = None, source: str = "the compiled module", abi: dict | None = None,
                 state=None, outputs: str = "auto", plan=None, runtime: str = "auto"):
        self.vmfb = vmfb
        self.abi = {"output_storage": False, "transient_storage": False, "copy_inputs": [], "copy_outputs": [],
                    "tied": [], **(abi or {})}
        """How main is called: output_storage when it takes a buffer per result after its inputs,
        transient_storage when it then takes one buffer for all intermediates; copy_inputs and
        copy_outputs the positions that must not share memory with the caller (passes/abi.py);
        tied the [input, result] pairs whose result is written where the input is
        (compile(inputs_in_place=True))."""
        self.target = target
        self.signature = signature
        self.report = report
        self.versions = versions or {}
        if outputs not in ("auto", "torch", "numpy"):
            raise InputError(f"outputs={outputs!r}: braze returns 'torch' tensors, 'numpy' arrays, or 'auto' "
                             "(the kind of the inputs; torch for a model without tensor inputs)")
        self.output_kind = outputs
        if runtime not in RUNTIMES:
            raise InputError(f"runtime={runtime!r}: braze runs modules with 'launch' (its CUDA launcher, on "
                             "torch's stream), 'iree' (iree.runtime) or 'auto' (the launcher where it can)")
        if runtime == "launch" and plan is None:
            raise InputError(f"runtime='launch' needs a CUDA launch plan, which {source} has not "
                             f"({report.launch_plan or 'not compiled for CUDA'}); use runtime='iree'")
        self.plan = plan
        """The CUDA launch plan (braze.runtime.cuda.plan.LaunchPlan) or None."""
        self.runtime = runtime
        self._launcher = None
        self._state = state
        """Where the buffers the program updates live: the model (compiled here: its own buffers,
        read and written on every call, as eager does) or a dict name -> array (loaded)."""
        self._source = source
        self._program = None
        self._names = None
        self._state_names = [f"buffer '{n}'" for n in signature.state]
        self._warned_grad = False

    @property
    def program(self):
        if self._program is None:
            from braze.runtime.program import Program

            sizes = None
            if self.plan is not None and self.plan.symbolic:
                sizes = lambda shapes: [o.shape for o in self.plan.concrete(shapes).outputs]  # noqa: E731
            self._program = Program(self.vmfb, self.target, self.signature.program_inputs, self.signature.outputs,
                                    self._source, output_storage=self.abi["output_storage"], output_shapes=sizes,
                                    transient_storage=self.abi["transient_storage"],
                                    copy_inputs=frozenset(self.abi["copy_inputs"]),
                                    copy_outputs=frozenset(self.abi["copy_outputs"]),
                                    tied={int(r): int(a) for a, r in self.abi["tied"]})
        return self._program

    @property
    def launcher(self):
        """braze's CUDA launcher for this module (created on first use; needs torch and the GPU)."""
        if self._launcher is None:
            from braze.runtime.cuda.launch import DynamicLauncher, Launcher

            kind = DynamicLauncher if self.plan.symbolic else Launcher
            self._launcher = kind(self.plan, self.signature.program_inputs, self.signature.outputs,
                                  copy_inputs=frozenset(self.abi["copy_inputs"]),
                                  tied=frozenset(int(r) for _, r in self.abi["tied"]))
        return self._launcher

    def runtime_for(self, *args, **kwargs) -> str:
        """Which runtime a call with these arguments takes: 'launch' (braze's CUDA launcher, on
        torch's current stream, returning before the GPU finishes) or 'iree' (iree.runtime)."""
        values = [v for v, _ in self.signature.flatten_call(args, kwargs)]
        return "launch" if self._uses_launcher(self.state() + values) else "iree"

    def _uses_launcher(self, values: list) -> bool:
        if self.plan is None or self.runtime == "iree":
            return False
        if self.runtime == "launch":
            return True
        if not all(type(v).__module__.startswith("torch") for v in values):
            return False  # numpy arrays go through iree.runtime, host copies and all
        import torch

        return torch.cuda.is_available() and (not values or all(getattr(v, "is_cuda", False) for v in values))

    def state(self) -> list:
        """The current values of the buffers the program reads and updates, in its order."""
        if not self.signature.state:
            return []
        if isinstance(self._state, dict):
            return [self._state[n] for n in self.signature.state]
        return [self._state.get_buffer(n) for n in self.signature.state]

    def __call__(self, *args, **kwargs) -> Any:
        flat = self.signature.flatten_call(args, kwargs)
        values = [v for v, _ in flat]
        if not self._warned_grad and any(getattr(v, "requires_grad", False) for v in values) and _grad_enabled():
            self._warned_grad = True
            warnings.warn(f"{self!r}: an input requires grad, but braze computes no gradients: its outputs "
                          "are not part of the autograd graph. Call it under torch.no_grad() or pass "
                          "x.detach() to say so.", BrazeWarning, stacklevel=2)
        if self._names is None:  # argument names depend only on the signature's structure
            from braze.signature import describe_path

            self._names = [describe_path(p) for _, p in flat]
        state = self.state()
        if self.signature.dims:
            self.signature.check_dims(values, self._names)
        mutations = self.signature.mutations
        if mutations:
            _check_writable(mutations, values, self._names)
        if state:
            values, names = state + values, self._state_names + self._names
        else:
            names = self._names
        if self._uses_launcher(values):
            outputs = self.launcher(values, names)
        elif self._wants_torch(values):
            outputs = self.program.call_torch(values, names)
        else:
            outputs = self.program(values, names)
        if mutations:
            _write_back(mutations, outputs, state, values[len(state):], names[len(state):])
            outputs = outputs[len(mutations):]
        return self.signature.unflatten_outputs(outputs)

    def _wants_torch(self, values: list) -> bool:
        if self.output_kind != "auto":
            if self.output_kind == "torch":
                _require_torch("outputs='torch'")
            return self.output_kind == "torch"
        if any(type(v).__module__.startswith("torch") for v in values):
            return True
        if values:
            return False
        _require_torch("a model without tensor inputs returns torch tensors")
        return True

    def save(self, path: str | os.PathLike, overwrite: bool = False):
        """Write the program, its metadata and its buffers' current values to one file; refuses
        an existing path unless overwrite=True."""
        meta = {
            "signature": self.signature.to_json(),
            "target": self.target.to_json(),
            "versions": self.versions,
            "report": self.report.to_json(),
            "abi": self.abi,
        }
        arrays = [_host_array(v, spec.dtype) for v, spec in zip(self.state(), self.signature.state_specs)]
        files = {}
        if self.plan is not None:
            shared = self.plan.shared_with(self.vmfb)  # the weights and PTX IREE's program holds
            files = dict(self.plan.blobs(shared))
            files[PLAN_FILE] = json.dumps(self.plan.to_json(shared)).encode()
        meta["runtime"] = self.runtime
        return artifact.write(path, self.vmfb, meta, overwrite=overwrite, arrays=arrays, files=files)

    def __repr__(self) -> str:
        ins = ", ".join(s.describe() for s in self.signature.inputs)
        return f"<braze.CompiledModule {self.report.model or 'model'}({ins}) on {self.target.describe()}>"


def _grad_enabled() -> bool:
    import torch  # an input that requires grad is a torch tensor

    return torch.is_grad_enabled()


def _require_torch(why: str) -> None:
    try:
        import torch  # noqa: F401
    except ImportError:
        raise DependencyError(f"{why}, but torch is not installed here: install torch, or "
                              "braze.load(..., outputs='numpy') for numpy arrays") from None


def _check_writable(mutations: list[dict], inputs: list, names: list[str]) -> None:
    """InputError before the program runs when an input the model updates in place cannot be
    written: refusing after the call would leave the model's buffers updated and the caller's
    tensors not (a call either completes every write-back or changes nothing)."""
    for m in mutations:
        if m["kind"] != "input":
            continue
        target, why = inputs[m["index"]], None
        if type(target).__module__.startswith("torch"):
            import torch

            if any(stride == 0 and size > 1 for stride, size in zip(target.stride(), target.shape)):
                why = "several of its elements share one memory location (an expand()ed view); pass x.clone()"
            elif target.is_inference() and not torch.is_inference_mode_enabled():
                why = "it is an inference tensor, written only inside torch.inference_mode(); pass x.clone()"
        elif not getattr(getattr(target, "flags", None), "writeable", True):
            why = "the numpy array is read-only; pass arr.copy() or call arr.setflags(write=True)"
        if why:
            raise InputError(f"{names[m['index']]}: the model updates it in place, but it cannot be written: {why}")


def _write_back(mutations: list[dict], outputs: list, state: list, inputs: list, names: list[str]) -> None:
    """Apply the program's mutations as eager would: new buffer values into the model's buffers
    (or the loaded module's), new input values into the caller's tensors. The caller's tensors
    go first: should one still refuse the write (_check_writable vetted them), the model's
    state stays as it was."""
    for m, new in sorted(zip(mutations, outputs), key=lambda pair: pair[0]["kind"] != "input"):
        target = state[m["index"]] if m["kind"] == "buffer" else inputs[m["index"]]
        what = names[m["index"]] if m["kind"] == "input" else "a buffer"
        if _same_memory(new, target):
            continue  # the program wrote the new value where the target is (an input it may update in place)
        if type(target).__module__.startswith("torch"):
            import torch

            try:
                with torch.no_grad():
                    target.copy_(new if type(new).__module__.startswith("torch") else torch.from_numpy(new))
            except RuntimeError as e:
                raise InputError(f"{what}: the model updates it in place, but it cannot be written "
                                 f"({str(e).splitlines()[0]})") from None
        else:
            import numpy as np

            try:
                np.copyto(target, new.cpu().numpy() if hasattr(new, "cpu") else new)
            except (ValueError, TypeError) as e:
                raise InputError(f"{what}: the model updates it in place, but it cannot be written ({e})") from None


def _same_memory(new, target) -> bool:
    """Whether `new` is `target`'s very memory (same start, shape and strides)."""
    if type(new) is not type(target) or not hasattr(new, "data_ptr"):
        return False
    return (new.data_ptr() == target.data_ptr() and new.shape == target.shape and new.stride() == target.stride()
            and new.dtype == target.dtype and new.device == target.device)


def _host_array(value, dtype: str):
    """A numpy copy of a state value (torch or numpy), bfloat16 as its uint16 bits."""
    import numpy as np

    if type(value).__module__.startswith("torch"):
        t = value.detach().cpu().contiguous()
        if dtype == "bfloat16":
            import torch

            t = t.view(torch.int16)
        return t.numpy().copy()
    return np.array(value, copy=True)


def load(path: str | os.PathLike, device: str | None = None, outputs: str = "auto",
         runtime: str | None = None) -> CompiledModule:
    """Load a saved artifact. Needs only iree-base-runtime and numpy (torch optional).

    outputs: 'auto' (the kind of the inputs: torch tensors in, torch out; numpy in, numpy out),
    'torch' or 'numpy'. runtime: 'launch' (braze's CUDA launcher on torch's stream; needs torch,
    the GPU and a launch plan in the artifact), 'iree' (iree.runtime) or 'auto' (as saved: the
    launcher where the module has a plan and torch has the GPU, else iree.runtime)."""
    vmfb, meta, arrays, files = artifact.read(path)
    try:
        target, signature, abi = _parse_metadata(meta)
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise ArtifactError(f"{path} has damaged metadata ({type(e).__name__}: {e}); it was edited or "
                            "written by another tool. Save it again from braze.compile(...).save().") from None
    if len(arrays) != len(signature.state):
        raise ArtifactError(f"{path} holds {len(arrays)} buffer values for {len(signature.state)} buffers; "
                            "save it again from braze.compile(...).save()")
    for array, spec, name in zip(arrays, signature.state_specs, signature.state):
        if list(array.shape) != list(spec.shape):
            raise ArtifactError(f"{path}: buffer '{name}' holds shape {list(array.shape)}, not {spec.describe()}")
    if device is not None and device not in ("auto", target.device):
        raise DeviceError(
            f"{path} was compiled for {target.describe()}, not for device '{device}'; "
            f"load it with device='{target.device}' or recompile for {device}"
        )
    report = Report.from_json(meta.get("report", {}) if isinstance(meta.get("report"), dict) else {})
    state = dict(zip(signature.state, (_from_host(a, spec.dtype) for a, spec in zip(arrays, signature.state_specs))))
    plan = None
    if PLAN_FILE in files:
        from braze.runtime.cuda.plan import LaunchPlan

        try:
            plan = LaunchPlan.from_json(json.loads(files[PLAN_FILE]), files, vmfb)
        except (KeyError, TypeError, ValueError) as e:
            raise ArtifactError(f"{path} has a damaged CUDA launch plan ({type(e).__name__}: {e}); "
                                "load it with runtime='iree' or save it again") from None
    chosen = runtime or (meta.get("runtime") if meta.get("runtime") in RUNTIMES else "auto")
    module = CompiledModule(vmfb, target, signature, report, meta.get("versions"), source=str(path),
                            abi=abi, state=state, outputs=outputs, plan=plan if chosen != "iree" else None,
                            runtime=chosen)
    if module.plan is not None and (chosen == "launch" or _cuda_available()):
        module.launcher  # load the kernels and weights now: a bad plan fails at load time
    else:
        module.program  # open the device now: a missing device or bad program fails at load time
    return module


def _cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


def _parse_metadata(meta: dict) -> tuple[Target, Signature, dict]:
    from braze.targets import DEVICES

    device, arch = meta["target"]["device"], meta["target"]["arch"]
    if device not in DEVICES or not isinstance(arch, str):
        raise ValueError(f"target {meta['target']!r} names no device braze runs on")
    signature = Signature.from_json(meta["signature"])
    raw = meta.get("abi") or {}
    abi = {"output_storage": bool(raw.get("output_storage", False)),
           "transient_storage": bool(raw.get("transient_storage", False)),
           "copy_inputs": [int(i) for i in raw.get("copy_inputs", [])],
           "copy_outputs": [int(i) for i in raw.get("copy_outputs", [])],
           "tied": [[int(a), int(r)] for a, r in raw.get("tied", [])]}
    return Target(device, arch), signature, abi


def _from_host(array, dtype: str):
    """A loaded buffer value: a torch tensor when torch is here (bfloat16 from its bits), else numpy."""
    try:
        import torch
    except ImportError:
        return array
    tensor = torch.from_numpy(array.copy())
    return tensor.view(torch.bfloat16) if dtype == "bfloat16" else tensor
