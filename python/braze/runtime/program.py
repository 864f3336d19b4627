"""Run a compiled program with iree.runtime: numpy or torch in, numpy or torch out.

Needs only iree-base-runtime and numpy; torch is used when the caller passes torch
tensors (and for CUDA tensors, which cross by DLPack without a host copy).
"""

from __future__ import annotations

import re
import threading
from typing import Any

import numpy as np

from braze import settings
from braze.errors import ArtifactError, DeviceError, ExecutionError, InputError, InternalError
from braze.signature import DYNAMIC, TensorSpec
from braze.runtime import cpu
from braze.targets import Target, check_runnable

try:
    import iree.runtime as rt
except ImportError as e:  # pragma: no cover
    from braze.errors import DependencyError

    raise DependencyError(f"running a braze module needs iree-base-runtime ({e})") from e

_NUMPY = {
    "float32": np.float32, "float16": np.float16, "float64": np.float64,
    "int64": np.int64, "int32": np.int32, "int16": np.int16, "int8": np.int8,
    "uint8": np.uint8, "bool": np.bool_,
    "bfloat16": np.uint16,  # numpy has no bfloat16: its bits travel as uint16
    "complex64": np.complex64, "complex128": np.complex128,
}
_ELEMENT = {
    "float32": rt.HalElementType.FLOAT_32, "float16": rt.HalElementType.FLOAT_16,
    "float64": rt.HalElementType.FLOAT_64, "bfloat16": rt.HalElementType.BFLOAT_16,
    "int64": rt.HalElementType.SINT_64, "int32": rt.HalElementType.SINT_32,
    "int16": rt.HalElementType.SINT_16, "int8": rt.HalElementType.SINT_8,
    "uint8": rt.HalElementType.UINT_8, "bool": rt.HalElementType.BOOL_8,
    "complex64": rt.HalElementType.COMPLEX_64, "complex128": rt.HalElementType.COMPLEX_128,
}

_INSTANCE = None
_LOCK = threading.Lock()


RUNTIME_FLAGS_ENV = "BRAZE_IREE_RUNTIME_FLAGS"
"""IREE runtime flags applied before the first device opens, after braze's defaults, e.g.
'--cuda_use_streams=true' (see bench/NOTES.md §8)."""

DEFAULT_RUNTIME_FLAGS = ("--cuda_use_streams=false",)
"""braze's defaults: CUDA command buffers as CUDA graphs, which IREE's own device default is
too, but its flag's default is not. Faster per call on the H200 (bench/NOTES.md §8)."""


def _instance() -> "rt.VmInstance":
    global _INSTANCE
    with _LOCK:
        if _INSTANCE is None:
            _apply_runtime_flags()
            _INSTANCE = rt.VmInstance()
        return _INSTANCE


def _apply_runtime_flags() -> None:
    import shlex

    try:
        rt.flags.parse_flags(*DEFAULT_RUNTIME_FLAGS)
    except ValueError:  # a runtime built without the CUDA driver
        pass
    text = settings.text(RUNTIME_FLAGS_ENV)
    if not text:
        return
    try:
        rt.flags.parse_flags(*shlex.split(text))
    except ValueError as e:
        raise DeviceError(
            f"{RUNTIME_FLAGS_ENV}={text!r} is not accepted by iree.runtime: {str(e).splitlines()[0]}. "
            "`iree-run-module --help` lists the runtime flags."
        ) from None


class Program:
    """A .vmfb loaded on a device, callable with flat lists of arrays."""

    def __init__(self, vmfb: bytes, target: Target, inputs: list[TensorSpec], outputs: list[TensorSpec],
                 source: str = "the compiled module", output_storage: bool = False, transient_storage: bool = False,
                 copy_inputs: frozenset = frozenset(), copy_outputs: frozenset = frozenset(), output_shapes=None,
                 tied: dict | None = None):
        check_runnable(target)
        self.target = target
        self.inputs = list(inputs)
        self.outputs = list(outputs)
        self.copy_inputs = frozenset(copy_inputs)
        """Inputs the program may write in place (IREE can tie a result to an imported buffer:
        iree-org/iree#16168): they are passed as copies, never as the caller's memory."""
        self.copy_outputs = frozenset(copy_outputs)
        """Outputs that may be an input or a constant of the program itself: returned as copies."""
        self.tied = dict(tied or {})
        """result -> input: the result is written where the input is (`iree.abi.output`); it has
        no output buffer of its own."""
        self.output_storage = output_storage
        """True when main takes one output buffer per result after its inputs (braze's ABI)."""
        self.output_shapes = output_shapes
        """A dynamic build's result shapes from its input shapes (the launch plan's arithmetic):
        output storage of a result whose size only the call decides."""
        self.transient_storage = transient_storage
        """True when main then takes one buffer for its intermediates (`iree.abi.transients`)."""
        self.driver = cpu._cpu_driver() if target.device == "cpu" else target.driver
        """The IREE driver that runs it: a CPU program's follows braze.set_cpu_threads."""
        instance = _instance()
        try:
            self.device = cpu._open_device(self.driver)
        except Exception as e:
            raise DeviceError(f"iree.runtime could not open a '{self.driver}' device: {e}") from None
        try:
            self._vm_module = rt.VmModule.copy_buffer(instance, vmfb)
        except Exception as e:
            raise ArtifactError(
                f"{source} is not a loadable IREE module ({str(e).splitlines()[0]}); it is "
                "corrupt or from another IREE version. Recompile it with braze.compile()."
            ) from None
        hal = rt.create_hal_module(instance, self.device)
        try:
            self._context = rt.VmContext(instance, modules=[hal, self._vm_module])
        except Exception as e:
            raise ArtifactError(
                f"{source} cannot run on this {self.driver} device: {str(e).splitlines()[0]}"
            ) from None
        self._fn = self._vm_module.lookup_function("main")
        self.wait_policy = cpu._wait_policy() if self.driver == "local-task" else "normal"
        """How calls wait for IREE's workers: 'batch' or 'normal' (BRAZE_CPU_WAIT; local-sync has none)."""
        if self._fn is None:
            raise ArtifactError(f"{source} has no 'main' function; it was not made by braze")
        self._check_declaration(source)
        self._allocator = self.device.allocator
        self.transient_bytes = 0
        """Bytes of the buffer that holds a call's intermediates (0 without transient storage)."""
        self._imported: list = [None] * len(self.inputs)  # (tensor, view key, view)
        self._idle_transients: list = []  # free storage buffers; a concurrent call takes its own
        self._transients_size = None
        """A dynamic build's size query (IREE's `main_transients_size`, called with main's arguments)."""
        self._stand_in = None  # the one-byte buffer the query takes for the transient argument
        if transient_storage:
            # A static build's size is a constant IREE states; a dynamic build's depends on the
            # call's sizes, and IREE's query function computes it.
            reflection = self._fn.reflection
            constant = reflection.get("iree.abi.transients.size.constant")
            query = reflection.get("iree.abi.transients.size")
            if constant is None and query is not None:
                self._transients_size = self._vm_module.lookup_function(str(query).lstrip("@"))
                if self._transients_size is None:
                    raise ArtifactError(f"{source} names a transient size query ({query}) it does not have; "
                                        "recompile it with braze.compile()")
            # No size at all: the program keeps no intermediates (e.g. zero-element results).
            self.transient_bytes = int(constant) if constant is not None else 0

    def _check_declaration(self, source: str) -> None:
        """The program's `main` takes and returns what the metadata says (an edited or mismatched
        artifact fails here, at load, not inside IREE at the first call)."""
        declaration = self._fn.reflection.get("iree.abi.declaration", "")
        head, _, tail = declaration.partition(") -> (")
        if not head:
            return  # a runtime that does not reflect declarations: nothing to compare
        args = re.findall(r"%input\d+: (tensor<[^>]*>|!hal\.buffer)( \{iree\.abi\.transients)?", head)
        results = re.findall(r"%output\d+: (tensor<[^>]*>)", tail)
        tensors = [t for t, _ in args if t.startswith("tensor")]
        buffers = [t for t, transient in args if t == "!hal.buffer" and not transient]
        transients = [t for t, transient in args if transient]
        expected = (len(self.inputs), len(self.outputs) - len(self.tied) if self.output_storage else 0,
                    int(self.transient_storage))
        found = (len(tensors), len(buffers), len(transients))
        shapes_ok = len(results) == len(self.outputs) and all(
            _dims(t) == list(spec.shape) for t, spec in zip(tensors + results, self.inputs + self.outputs))
        if found != expected or not shapes_ok:
            raise ArtifactError(
                f"{source}: its program takes {found[0]} tensors, {found[1]} output buffers and "
                f"{found[2]} transient buffers, returning {len(results)} tensors, but its metadata "
                f"describes {expected[0]}, {expected[1]} and {expected[2]}, returning {len(self.outputs)} "
                "(or other shapes): the metadata was edited or does not belong to this program. "
                "Recompile it with braze.compile()."
            )

    # -- arguments -----------------------------------------------------------

    def _buffer_view(self, value: Any, spec: TensorSpec, name: str, slot: int = -1):
        if 0 in spec.shape:
            # Nothing to read: check the argument, pass a view of a one-byte buffer (importing
            # zero bytes fails on CUDA: "could not import host allocation").
            self._to_numpy(value, spec, name)
            return rt.HalBufferView(self._allocate_bytes(0), list(spec.shape), _ELEMENT[spec.dtype])
        if type(value).__module__.startswith("torch"):
            view = self._torch_buffer_view(value, spec, name, slot)
            if view is not None:
                return view
        array = self._to_numpy(value, spec, name)
        return self._allocator.allocate_buffer_copy(
            memory_type=rt.MemoryType.DEVICE_LOCAL,
            allowed_usage=rt.BufferUsage.DEFAULT,
            device=self.device,
            buffer=array,
            element_type=_ELEMENT[spec.dtype],
        )

    def _torch_buffer_view(self, value, spec: TensorSpec, name: str, slot: int = -1):
        """Import a torch tensor by DLPack (no copy) when it already lives on our device.

        The last tensor imported for each input slot is kept with its import: calling again
        with the same tensor (same memory, contents may have changed) skips the import. The
        kept reference holds that tensor's memory until another tensor takes the slot.
        """
        import torch

        if not isinstance(value, torch.Tensor):
            raise InputError(f"{name}: expected a tensor, got {type(value).__name__}")
        cached = self._imported[slot] if slot >= 0 else None
        if cached is not None and cached[0] is value and cached[1] == _view_key(value):
            return cached[2]  # device, dtype and layout were checked when it was imported
        if value.layout is not torch.strided or value.is_nested:
            raise InputError(f"{name} is a {value.layout} tensor; braze takes dense (strided) tensors: "
                             "pass x.to_dense()")
        kind = value.device.type
        if kind == "cuda" and self.target.driver != "cuda":
            raise InputError(
                f"{name} is on {value.device}, but this module runs on {self.target.describe()}; "
                "move it with .cpu() (braze does not copy GPU tensors back to the host silently)"
            )
        if kind not in ("cpu", "cuda"):
            raise InputError(f"{name} is on {value.device}; braze takes CPU or CUDA tensors")
        if value.dtype is not _torch_dtype(spec.dtype) or (tuple(value.shape) != tuple(spec.shape)
                                                           and not spec.matches(value.shape)):
            _check(name, spec, list(value.shape), str(value.dtype).replace("torch.", ""))
        same_device = (kind == "cpu" and self.target.device == "cpu") or (
            kind == "cuda" and self.target.driver == "cuda"
        )
        if not same_device or spec.dtype == "bool" or slot in self.copy_inputs:
            # The copy path moves it (CPU tensors to a GPU module) or converts it; and an input
            # the program may write in place goes there too: IREE 3.13 writes the result of an
            # insert_slice into its argument (slice_copy, slice_scatter) with a whole-buffer
            # copy, which needs discard-write access that no imported buffer, the caller's or
            # a clone, grants (PERMISSION_DENIED), while a buffer IREE allocates does.
            return None
        t = value.detach() if value.requires_grad else value
        direct = t.is_contiguous() and t.storage_offset() == 0
        if not direct:
            t = t.clone(memory_format=torch.contiguous_format)
        try:
            view = self.device.from_dlpack_capsule(torch.utils.dlpack.to_dlpack(t))
        except Exception:
            return None
        if direct and slot >= 0:
            self._imported[slot] = (value, _view_key(value), view)
        return view

    def _to_numpy(self, value: Any, spec: TensorSpec, name: str) -> np.ndarray:
        if type(value).__module__.startswith("torch"):
            import torch

            if not isinstance(value, torch.Tensor):
                raise InputError(f"{name}: expected a tensor, got {type(value).__name__}")
            got_dtype = str(value.dtype).replace("torch.", "")
            _check(name, spec, list(value.shape), got_dtype)
            t = value.detach()
            if t.device.type != "cpu":
                t = t.cpu()
            t = t.contiguous()
            if spec.dtype == "bfloat16":
                t = t.view(torch.int16)
            return t.numpy()
        if isinstance(value, np.ndarray) or np.isscalar(value):
            array = np.asarray(value)
            got_dtype = "bool" if array.dtype == np.bool_ else str(array.dtype)
            if spec.dtype == "bfloat16" and array.dtype == np.uint16:
                got_dtype = "bfloat16"
            _check(name, spec, list(array.shape), got_dtype)
            return np.ascontiguousarray(array)
        raise InputError(
            f"{name}: expected a torch.Tensor or numpy.ndarray of {spec.describe()}, got {type(value).__name__}"
        )

    # -- call ----------------------------------------------------------------

    def invoke(self, values: list, names: list[str], storage: list | None = None) -> list:
        """Run the program; return the result buffer views.

        With output storage (braze's ABI: `main(inputs..., out0: !hal.buffer {iree.abi.output = 0}, ...)`)
        `storage` holds one HalBuffer per result, and the results are written into them.
        """
        specs = self.inputs
        if len(values) != len(specs):
            raise InputError(f"expected {len(specs)} tensor inputs, got {len(values)}")
        outputs = self.outputs
        refs = [self._buffer_view(value, spec, name, i) for i, (value, spec, name) in enumerate(zip(values, specs, names))]
        if self.output_storage:
            refs += storage or [self._allocate(spec) for i, spec in enumerate(self._concrete_outputs(values))
                                if i not in self.tied]
        transients = None
        if self.transient_storage:
            transients = self._take_transients(self._query_transients(refs) if self._transients_size is not None
                                               else self.transient_bytes)
        if transients is not None:
            refs.append(transients)
        args = rt.VmVariantList(len(refs))
        for ref in refs:
            args.push_ref(ref)
        if self.target.driver == "cuda" and any(_is_cuda_tensor(v) for v in values):
            import torch

            # IREE runs on its own stream: let the producer's work on torch's stream finish.
            # (An int index: current_stream() without one costs ~4 us more a call.)
            torch.cuda.current_stream(_cuda_index(values)).synchronize()
        results = rt.VmVariantList(len(outputs))
        try:
            if self.wait_policy == "batch":
                with cpu._WaitBehindWorkers():
                    self._context.invoke(self._fn, args, results)
            else:
                self._context.invoke(self._fn, args, results)
        except (RuntimeError, ValueError) as e:
            raise _execution_error(e, self.target) from e
        finally:
            if transients is not None:
                # main is synchronous: the device is done with the storage when invoke returns.
                self._idle_transients.append(transients)
        return [results.get_as_object(i, rt.HalBufferView) for i in range(len(outputs))]

    def _take_transients(self, nbytes: int):
        """A storage buffer of at least `nbytes` for this call's intermediates: an idle one, or a
        new one (a dynamic build's calls need different sizes: a buffer too small for this call
        is freed, and the new one is the size asked for).

        Buffers are kept for the next call; calls running at the same time (threads) each
        take their own, so they never share intermediates.
        """
        while self._idle_transients:
            buffer = self._idle_transients.pop()
            if buffer.byte_length() >= nbytes:
                return buffer
        return self._allocate_bytes(nbytes)

    def _query_transients(self, refs: list) -> int:
        """Bytes of intermediates a dynamic build's call with these arguments needs (IREE's
        query takes main's arguments, the transient buffer included: a one-byte stand-in)."""
        args = rt.VmVariantList(len(refs) + 1)
        for ref in refs:
            args.push_ref(ref)
        if self._stand_in is None:
            self._stand_in = self._allocate_bytes(0)
        args.push_ref(self._stand_in)
        results = rt.VmVariantList(1)
        self._context.invoke(self._transients_size, args, results)
        return int(results.get_variant(0))

    def __call__(self, values: list, names: list[str]) -> list[np.ndarray]:
        """Run the program; return numpy arrays on the host (always copies)."""
        views = self.invoke(values, names)
        return [self._to_host(bv, spec.concrete(bv.shape)) for bv, spec in zip(views, self.outputs)]

    def call_torch(self, values: list, names: list[str]) -> list:
        """Run the program; return torch tensors on the module's device without host copies
        where the driver allows: results written into fresh torch tensors (output storage,
        cuda) or IREE's result buffers handed to torch by DLPack (cpu)."""
        import torch

        index = _cuda_index(values) if self.target.driver == "cuda" else 0
        device = {"cpu": "cpu", "cuda": f"cuda:{index}"}.get(self.target.device)
        tensors, storage = [None] * len(self.outputs), None
        if self.output_storage:
            storage = []
            # A result that is a copy of an input or constant (or of an input updated in place) is
            # written by a whole-buffer copy, which needs discard-write access that buffers
            # imported by DLPack lack: such results go to buffers IREE allocates.
            for i, spec in enumerate(self._concrete_outputs(values)):
                if i in self.tied:
                    continue
                imported = device is not None and not self.copy_inputs and i not in self.copy_outputs
                tensor, buffer = self._torch_storage(spec, device) if imported else (None, None)
                tensors[i] = tensor
                storage.append(buffer if buffer is not None else self._allocate(spec))
        views = self.invoke(values, names, storage)
        for i, slot in self.tied.items():
            imported = self._imported[slot]
            if imported is not None and imported[0] is values[slot]:
                tensors[i] = values[slot]  # written where it is: the input is its own new value
        outputs = []
        for i, (tensor, bv, spec) in enumerate(zip(tensors, views, self.outputs)):
            if tensor is not None and i in self.tied:
                outputs.append(tensor)
                continue
            spec = spec.concrete(bv.shape)
            dtype = _torch_dtype(spec.dtype)
            if tensor is None and 0 in spec.shape:
                tensor = torch.empty(spec.shape, dtype=dtype, device=device or "cpu")
            if tensor is None and device is not None and spec.dtype != "bool" and bv.byte_length > 0:
                code = 2 if self.target.driver == "cuda" else 1  # DLPack kDLCUDA / kDLCPU
                try:
                    tensor = torch.from_dlpack(self.device.create_dlpack_capsule(bv, code, index))
                except Exception:  # e.g. CUDA pool buffers cannot be exported
                    tensor = None
                if tensor is not None:
                    if tensor.dtype is not dtype:
                        # IREE's element types are signless: a uint8 result arrives as int8.
                        tensor = tensor.view(dtype)
                    if i in self.copy_outputs:
                        tensor = tensor.clone()
            if tensor is None:
                tensor = torch.from_numpy(self._to_host(bv, spec))
                if spec.dtype == "bfloat16":
                    tensor = tensor.view(torch.bfloat16)
                if device is not None and device != "cpu":
                    tensor = tensor.to(device)
            outputs.append(tensor)
        return outputs

    def _concrete_outputs(self, values: list) -> list[TensorSpec]:
        """The result specs of a call with these inputs: sizes the call decides come from
        `output_shapes` (output storage needs them before the call)."""
        if not any(s.dynamic for s in self.outputs):
            return self.outputs
        if self.output_shapes is None:
            raise InternalError("braze bug: a dynamic result's output storage has no sizes to allocate it with")
        shapes = self.output_shapes([list(getattr(v, "shape", np.shape(v))) for v in values])
        return [spec.concrete(shape) if shape is not None else spec for spec, shape in zip(self.outputs, shapes)]

    def _torch_storage(self, spec: TensorSpec, device: str):
        """A torch tensor for a result and the HalBuffer aliasing it (None, None if not importable)."""
        import torch

        if spec.dtype == "bool" or 0 in spec.shape:
            return None, None
        tensor = torch.empty(spec.shape, dtype=_torch_dtype(spec.dtype), device=device)
        try:
            view = self.device.from_dlpack_capsule(torch.utils.dlpack.to_dlpack(tensor))
        except Exception:
            return None, None
        return tensor, view.get_buffer()

    def _allocate(self, spec: TensorSpec):
        return self._allocate_bytes(int(np.prod(spec.shape, dtype=np.int64)) * np.dtype(_NUMPY[spec.dtype]).itemsize)

    def _allocate_bytes(self, nbytes: int):
        return self._allocator.allocate_buffer(
            memory_type=rt.MemoryType.DEVICE_LOCAL,
            allowed_usage=rt.BufferUsage.DEFAULT,
            allocation_size=max(int(nbytes), 1),
        )

    def _to_host(self, bv, spec: TensorSpec) -> np.ndarray:
        dtype = np.dtype(_NUMPY[spec.dtype])
        if 0 in spec.shape or bv.byte_length == 0:
            return np.zeros(spec.shape, dtype)
        if self.target.device == "cpu":
            return _read(bv, spec)
        if self.target.driver == "vulkan":
            return _staged_read(self.device, bv, spec)
        # Whatever numpy dtype the runtime gives the transfer (signless ints, no bfloat16), its
        # bytes are the result's: reinterpret them with the result's dtype and shape.
        array = rt.DeviceArray(self.device, bv, implicit_host_transfer=True).to_host()
        return np.frombuffer(np.ascontiguousarray(array).tobytes(), dtype=dtype).reshape(spec.shape).copy()


def _staged_read(device, bv, spec: TensorSpec) -> np.ndarray:
    """A device buffer's bytes as a new array, through a host-visible staging buffer.

    iree.runtime's own transfer (DeviceArray.to_host) imports a fresh numpy array as the copy's
    target where the Vulkan driver says it can import host memory, and fails where the array is
    not aligned as the driver asks (Mesa's lavapipe: "host allocation import pointer does not
    satisfy Vulkan minImportedHostPointerAlignment 4096"); a staging buffer has no such limit."""
    nbytes = bv.byte_length
    staging = device.allocator.allocate_buffer(
        memory_type=int(rt.MemoryType.HOST_LOCAL | rt.MemoryType.DEVICE_VISIBLE),
        allowed_usage=int(rt.BufferUsage.TRANSFER_TARGET | rt.BufferUsage.MAPPING_SCOPED),
        allocation_size=nbytes)
    sem = device.create_semaphore(0)
    device.queue_copy(bv.get_buffer(), staging, wait_semaphores=rt.HalFence.create_at(sem, 0),
                      signal_semaphores=rt.HalFence.create_at(sem, 1))
    rt.HalFence.create_at(sem, 1).wait()
    raw = staging.map().asarray([nbytes], np.dtype(np.uint8))
    return raw.view(np.dtype(_NUMPY[spec.dtype])).reshape(spec.shape).copy()


_TORCH_DTYPES: dict = {}


def _torch_dtype(name: str):
    """torch's dtype object for a signature dtype name (cached: a hot path)."""
    dtype = _TORCH_DTYPES.get(name)
    if dtype is None:
        import torch

        dtype = _TORCH_DTYPES[name] = getattr(torch, name)
    return dtype


def _dims(tensor_type: str) -> list[int]:
    """[4, 8] for 'tensor<4x8xf32>', [] for 'tensor<f32>', [-1, 8] for 'tensor<?x8xf32>'."""
    parts = tensor_type[len("tensor<"):-1].split("x")
    return [int(p) if p.isdigit() else DYNAMIC for p in parts[:-1] if p.isdigit() or p == "?"]


def _view_key(t) -> tuple:
    """Everything that decides what memory an import of `t` reads: a tensor changed in place to
    another view (t.t_(), t.resize_(), set_()) or dtype gets a new import."""
    return (t.data_ptr(), t.dtype, t.shape, t.stride(), t.storage_offset())


def _is_cuda_tensor(value) -> bool:
    return type(value).__module__.startswith("torch") and getattr(value, "is_cuda", False)


def _cuda_index(values: list) -> int:
    for v in values:
        if _is_cuda_tensor(v):
            return v.device.index or 0
    return 0


def _read(bv, spec: TensorSpec) -> np.ndarray:
    dtype = np.dtype(_NUMPY[spec.dtype])
    mapped = bv.map()
    return np.array(mapped.asarray(list(spec.shape), dtype), copy=True)


def _check(name: str, spec: TensorSpec, shape: list[int], dtype: str) -> None:
    if dtype != spec.dtype:
        raise InputError(
            f"{name}: dtype {dtype} does not match the compiled {spec.describe()}; "
            f"convert it (e.g. x.to(torch.{spec.dtype})) or recompile with an example of this dtype"
        )
    if not spec.matches(shape):
        raise InputError(
            f"{name}: shape [{', '.join(map(str, shape))}] does not match the compiled "
            f"{spec.describe()}; " + ("the sizes shown are fixed" if spec.dynamic else
                                      "braze compiled static shapes: recompile with an example of this "
                                      "shape, or with dynamic_shapes=")
        )


def _execution_error(error: Exception, target) -> ExecutionError:
    """A BrazeError for a failure iree.runtime reports from inside a call (its status line first)."""
    if isinstance(error, ExecutionError):
        return error
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    status = next((line for line in lines if re.search(r"\b[A-Z]+(_[A-Z]+)+;", line)), lines[0] if lines else "")
    status = re.sub(r"^Error invoking function: ", "", status)
    if "RESOURCE_EXHAUSTED" in status:
        advice = "the device ran out of memory: free memory, or run smaller inputs"
    else:
        advice = ("this is a bug in braze or IREE, not in the model: please report it with the model and its "
                  "inputs' shapes (braze.check(model, *inputs) reproduces the call)")
    return ExecutionError(f"IREE's runtime failed running the compiled program on {target.describe()}: {status}; "
                          f"{advice}")
