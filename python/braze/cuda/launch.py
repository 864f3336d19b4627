"""The CUDA launcher: a module's launch plan run on torch's current stream, without waiting.

    launcher = Launcher(plan, inputs, outputs, device_index)   # at load: modules, weights on the GPU
    results = launcher(tensors)                                 # per call: allocate, launch, return

Per call: outputs and one transient buffer come from torch's caching allocator on the current
stream of the input's device; every fill, copy and kernel of `main` is issued on that stream in
IREE's order; the call returns at once. A plan of GRAPH_MIN_STEPS steps or more is captured once
into a CUDA graph over buffers the launcher owns, and each call copies its inputs in, replays
the graph and copies the results out into fresh tensors (three launches instead of one a step:
a launch costs ~5-7 µs of host time, which a layer of fast kernels otherwise waits on; bench/NOTES.md §20).
Under the caller's own graph capture the steps are launched as they are (and captured). Results are torch tensors ordered after the call's work
on that stream, as any torch op's, so they are usable at once there, under `torch.cuda.graph`
capture too. Kernel parameters follow IREE's CUDA ABI: each binding as a device pointer (base +
offset), then each 32-bit push constant (runtime/src/iree/hal/drivers/cuda).
"""

from __future__ import annotations

import ctypes
import threading

from braze.errors import DeviceError, InputError

from .driver import Driver, check
from .plan import LaunchPlan

ALIGNMENT = 64
"""Bytes IREE's kernels assume a binding's base is aligned to; other inputs are copied."""
GRAPH_MIN_STEPS = 4
"""Plans of this many steps (kernels, fills, copies) or more run as a replayed CUDA graph."""


class _Dispatch:
    """A kernel launch with its parameter block built once; per call only pointers change.

    `bindings` holds (parameter slot, buffer slot, offset): the buffer slot indexes the call's
    flat table of base pointers (inputs, outputs, the transient buffer, constants)."""

    def __init__(self, function: int, kernel, step, slot_of):
        self.function = function
        self.grid = step.grid
        self.block = kernel.block
        self.shared = kernel.shared_memory
        n = len(step.bindings) + len(step.constants)
        self.values = (ctypes.c_uint64 * max(n, 1))()
        for i, c in enumerate(step.constants):
            self.values[len(step.bindings) + i] = c  # a 32-bit constant in the low half of a slot
        self.params = (ctypes.c_void_p * max(n, 1))(
            *[ctypes.addressof(self.values) + 8 * i for i in range(max(n, 1))])
        self.params_address = ctypes.addressof(self.params)
        self.bindings = [(i, slot_of(ref), offset) for i, (ref, offset, _) in enumerate(step.bindings)]


class Launcher:
    def __init__(self, plan: LaunchPlan, input_specs: list, output_specs: list, device_index: int = 0,
                 copy_inputs: frozenset = frozenset(), graphs: bool | None = None):
        import torch

        if not torch.cuda.is_available():
            raise DeviceError("the CUDA launcher needs torch with a CUDA device")
        self.torch = torch
        self.device = torch.device("cuda", device_index)
        self.index = device_index
        with torch.cuda.device(device_index):
            torch.cuda.init()
            torch.empty(1, device=self.device)  # makes torch's primary context current here
            self.driver = Driver()
        self.plan = plan
        self.input_specs, self.output_specs = input_specs, output_specs
        self.copy_inputs = copy_inputs
        self._dtypes = [getattr(torch, s.dtype) for s in output_specs]
        modules = [[self.driver.load_module(ptx) for ptx in e.ptx] for e in plan.executables]
        self.functions = [[self.driver.function(modules[i][k.module], k.name, k.shared_memory) for k in e.kernels]
                          for i, e in enumerate(plan.executables)]
        self.constants = [torch.frombuffer(bytearray(c), dtype=torch.uint8).to(self.device) if c else
                          torch.empty(1, dtype=torch.uint8, device=self.device) for c in plan.constants]
        # The flat table of base pointers: inputs, outputs, transient, constants.
        self._first_output = len(input_specs)
        self._transient_slot = self._first_output + len(output_specs)
        self._first_constant = self._transient_slot + 1
        self._bases = [0] * (self._first_constant + len(self.constants))
        for i, t in enumerate(self.constants):
            self._bases[self._first_constant + i] = t.data_ptr()
        self._launch = self._choose_launch()
        self._steps = [self._prepare(s) for s in plan.steps]
        # Parameter blocks are shared by calls: two threads calling at once take turns.
        self._lock = threading.Lock()
        self.graphs = len(plan.steps) >= GRAPH_MIN_STEPS if graphs is None else graphs
        self._graph = None  # captured on the first call that may use it
        self._done = self._last_stream = None
        if plan.init_steps:  # constants IREE computes when the module loads
            with torch.cuda.device(device_index):
                stream = torch.cuda.current_stream(device_index)
                self._run([self._prepare(s) for s in plan.init_steps], list(self._bases), stream.cuda_stream)
                stream.synchronize()

    def _slot(self, ref) -> int:
        start = {"input": 0, "output": self._first_output, "transient": self._transient_slot,
                 "constant": self._first_constant}[ref.kind]
        return start + ref.index

    def _prepare(self, step):
        if step.op == "dispatch":
            kernel = self.plan.executables[step.executable].kernels[step.kernel]
            return ("dispatch", _Dispatch(self.functions[step.executable][step.kernel], kernel, step, self._slot))
        target = self._slot(step.target)
        source = self._slot(step.source) if step.source is not None else None
        return (step.op, (step, target, source))

    def _choose_launch(self):
        """cuLaunchKernel through cuda-bindings where installed (4.3 us a launch on the H200),
        else through ctypes (6.1 us); bench/experiments/launch_cost.py measures both."""
        try:
            from cuda.bindings import driver as cu
        except ImportError:
            lib = self.driver.lib

            def launch(d, stream):
                gx, gy, gz = d.grid
                bx, by, bz = d.block
                return lib.cuLaunchKernel(d.function, gx, gy, gz, bx, by, bz, d.shared, stream, d.params, None)

            return launch
        launch_kernel = cu.cuLaunchKernel

        def launch(d, stream):
            gx, gy, gz = d.grid
            bx, by, bz = d.block
            return int(launch_kernel(d.function, gx, gy, gz, bx, by, bz, d.shared, stream, d.params_address, 0)[0])

        return launch

    # -- per call -------------------------------------------------------------------------

    def __call__(self, inputs: list, names: list[str]) -> list:
        torch = self.torch
        if len(inputs) != len(self.input_specs):
            raise InputError(f"expected {len(self.input_specs)} tensor inputs, got {len(inputs)}")
        bases = list(self._bases)
        keep = []
        for i, (t, spec, name) in enumerate(zip(inputs, self.input_specs, names)):
            t = self._input(t, spec, name, i)
            keep.append(t)
            bases[i] = t.data_ptr()
        if self.graphs and not torch.cuda.is_current_stream_capturing():
            results = self._replay(keep)
            if results is not None:
                return results
        outputs = self._new_outputs()
        for i, t in enumerate(outputs):
            bases[self._first_output + i] = t.data_ptr()
        transient = None
        if self.plan.transient_bytes:
            transient = torch.empty(self.plan.transient_bytes, dtype=torch.uint8, device=self.device)
            bases[self._transient_slot] = transient.data_ptr()
        stream = torch._C._cuda_getCurrentRawStream(self.index)
        with self._lock:
            self._run(self._steps, bases, stream)
        self._copy_results(bases, outputs, stream)
        # Dropping `keep` and `transient` here is safe: torch's caching allocator hands their
        # memory only to later work on this same stream, which runs after these kernels.
        del keep, transient
        return outputs

    def _new_outputs(self) -> list:
        return [self.torch.empty(spec.shape, dtype=dtype, device=self.device)
                for spec, dtype in zip(self.output_specs, self._dtypes)]

    def _copy_results(self, bases: list, outputs: list, stream: int) -> None:
        """Copy each result IREE left in another buffer than its output into it, in stream order."""
        for out, t in zip(self.plan.outputs, outputs):
            if not (out.buffer.kind == "output" and out.offset == 0):
                source = bases[self._slot(out.buffer)] + out.offset
                check(self.driver.lib.cuMemcpyDtoDAsync_v2(t.data_ptr(), source, out.nbytes, stream),
                      "cuMemcpyDtoDAsync")

    # -- replayed as a CUDA graph ---------------------------------------------------------

    def _capture(self) -> None:
        """Capture the plan over buffers of the launcher's own: static inputs, outputs (every
        result copied into one, in the graph) and transient buffer."""
        torch = self.torch
        specs = list(zip(self.input_specs, [getattr(torch, s.dtype) for s in self.input_specs]))
        self._static_in = [torch.empty(spec.shape, dtype=dtype, device=self.device) for spec, dtype in specs]
        self._static_out = self._new_outputs()
        bases = list(self._bases)
        for i, t in enumerate(self._static_in):
            bases[i] = t.data_ptr()
        for i, t in enumerate(self._static_out):
            bases[self._first_output + i] = t.data_ptr()
        self._static_transient = None
        if self.plan.transient_bytes:
            self._static_transient = torch.empty(self.plan.transient_bytes, dtype=torch.uint8, device=self.device)
            bases[self._transient_slot] = self._static_transient.data_ptr()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.device(self.index), torch.cuda.graph(graph):
            stream = torch._C._cuda_getCurrentRawStream(self.index)
            self._run(self._steps, bases, stream)
            self._copy_results(bases, self._static_out, stream)
        self._graph = graph
        self._done = torch.cuda.Event()

    def _replay(self, inputs: list) -> list | None:
        """One call as copies in, the graph's replay, copies out, on the current stream; None
        (and the plain launches from then on) where the plan cannot be captured."""
        torch = self.torch
        lib = self.driver.lib
        with self._lock:
            if self._graph is None:
                try:
                    self._capture()
                except Exception:  # noqa: BLE001 - a plan the driver cannot capture runs as launches
                    self.graphs = False
                    self._graph = None
                    return None
            stream = torch._C._cuda_getCurrentRawStream(self.index)
            current = torch.cuda.current_stream(self.index)
            if self._last_stream is not None and self._last_stream != stream:
                current.wait_event(self._done)  # the last call, on another stream, has read the static buffers
            for t, static in zip(inputs, self._static_in):
                check(lib.cuMemcpyDtoDAsync_v2(static.data_ptr(), t.data_ptr(), static.nbytes, stream),
                      "cuMemcpyDtoDAsync")
            self._graph.replay()
            results = self._new_outputs()
            for t, static in zip(results, self._static_out):
                check(lib.cuMemcpyDtoDAsync_v2(t.data_ptr(), static.data_ptr(), static.nbytes, stream),
                      "cuMemcpyDtoDAsync")
            self._done.record(current)
            self._last_stream = stream
        return results

    def _input(self, t, spec, name: str, slot: int):
        torch = self.torch
        if not isinstance(t, torch.Tensor):
            raise InputError(f"{name}: the CUDA launcher takes torch tensors, got {type(t).__name__}")
        if t.device != self.device:
            if t.device.type == "cuda":
                raise InputError(f"{name} is on {t.device}; this module runs on {self.device}")
            t = t.to(self.device, non_blocking=True)
        if t.dtype is not getattr(torch, spec.dtype) or list(t.shape) != list(spec.shape):
            raise InputError(f"{name}: {str(t.dtype).replace('torch.', '')}[{', '.join(map(str, t.shape))}] "
                             f"does not match the compiled {spec.describe()}")
        if t.layout is not torch.strided:
            raise InputError(f"{name} is a {t.layout} tensor; braze takes dense (strided) tensors")
        if slot in self.copy_inputs or not t.is_contiguous() or t.data_ptr() % ALIGNMENT:
            t = t.contiguous() if slot not in self.copy_inputs else t.clone(memory_format=torch.contiguous_format)
            if t.data_ptr() % ALIGNMENT:
                t = t.clone()
        return t

    def _run(self, steps, bases: list, stream: int) -> None:
        launch = self._launch
        for op, item in steps:
            if op == "dispatch":
                values = item.values
                for i, slot, offset in item.bindings:
                    values[i] = bases[slot] + offset
                status = launch(item, stream)
                if status:
                    check(status, "cuLaunchKernel")
                continue
            item, target_slot, source_slot = item
            target = bases[target_slot] + item.target_offset
            lib = self.driver.lib
            if op == "fill":
                if item.pattern_bytes == 1:
                    check(lib.cuMemsetD8Async(target, item.pattern, item.length, stream), "cuMemsetD8Async")
                elif item.pattern_bytes == 2:
                    check(lib.cuMemsetD16Async(target, item.pattern, item.length // 2, stream), "cuMemsetD16Async")
                else:
                    check(lib.cuMemsetD32Async(target, item.pattern, item.length // 4, stream), "cuMemsetD32Async")
            else:
                source = bases[source_slot] + item.source_offset
                check(lib.cuMemcpyDtoDAsync_v2(target, source, item.length, stream), "cuMemcpyDtoDAsync")
