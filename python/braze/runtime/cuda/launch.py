"""The CUDA launcher: a module's launch plan run on torch's current stream, without waiting.

    launcher = Launcher(plan, inputs, outputs, device_index)   # at load: modules, weights on the GPU
    results = launcher(tensors)                                 # per call: allocate, launch, return

Per call: outputs and one transient buffer come from torch's caching allocator on the current
stream of the input's device; every fill, copy and kernel of `main` is issued on that stream in
IREE's order; the call returns at once. A plan of GRAPH_MIN_STEPS steps or more runs as one
CUDA graph built once from its steps (cuda/graph.py): each call rewrites only the nodes whose
buffers moved (in steady state none: torch's allocator hands a call the blocks the last one
freed) and launches it, one driver call instead of one per step (a launch costs ~5-7 µs of host
time, which a layer of fast kernels otherwise waits on; bench/NOTES.md §20, §21).
Under the caller's own graph capture the steps are launched as they are (and captured).
Results are torch tensors ordered after the call's work on that stream, as any torch op's, so
they are usable at once there, under `torch.cuda.graph` capture too. Kernel parameters follow
IREE's CUDA ABI: each binding as a device pointer (base + offset), then each 32-bit push
constant (runtime/src/iree/hal/drivers/cuda).
"""

from __future__ import annotations

import ctypes
import threading

from braze.errors import DeviceError, InputError, InternalError

from braze.runtime.cuda.driver import Driver, check
from braze.runtime.cuda.graph import PlanGraph
from braze.runtime.cuda.plan import LaunchPlan, Ref, Step

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
                 copy_inputs: frozenset = frozenset(), graphs: bool | None = None, loaded=None,
                 tied: frozenset = frozenset()):
        """loaded: another Launcher's `loaded` for the same program (its kernels and weights on
        the GPU, load-time steps run): a dynamic build's launcher for one more shape. tied: the
        results written where an input is (compile(inputs_in_place=True)): the plan's Output
        of each is that input, and the call returns the input tensor the kernels wrote."""
        import torch

        if not torch.cuda.is_available():
            raise DeviceError("the CUDA launcher needs torch with a CUDA device")
        self.torch = torch
        self.device = torch.device("cuda", device_index)
        self.index = device_index
        if plan.symbolic:
            raise ValueError("a Launcher runs a plan of plain numbers: DynamicLauncher evaluates a dynamic one")
        if loaded is None:
            with torch.cuda.device(device_index):
                torch.cuda.init()
                torch.empty(1, device=self.device)  # makes torch's primary context current here
                driver = Driver()
            modules = [[driver.load_module(ptx) for ptx in e.ptx] for e in plan.executables]
            functions = [[driver.function(modules[i][k.module], k.name, k.shared_memory) for k in e.kernels]
                         for i, e in enumerate(plan.executables)]
            constants = [torch.frombuffer(bytearray(c), dtype=torch.uint8).to(self.device) if c else
                         torch.empty(1, dtype=torch.uint8, device=self.device) for c in plan.constants]
        else:
            driver, functions, constants = loaded
        self.driver, self.functions, self.constants = driver, functions, constants
        self.loaded = (driver, functions, constants)
        self.plan = plan
        self.input_specs, self.output_specs = input_specs, output_specs
        self.copy_inputs = copy_inputs
        self.tied = {i: plan.outputs[i].buffer.index for i in tied}
        if any(plan.outputs[i].buffer.kind != "input" or plan.outputs[i].offset for i in tied):
            raise ValueError("a tied result whose plan output is not its input's buffer")
        self._dtypes = [getattr(torch, s.dtype) for s in output_specs]
        # The flat table of base pointers: inputs, outputs, transient, constants.
        self._first_output = len(input_specs)
        self._transient_slot = self._first_output + len(output_specs)
        self._first_constant = self._transient_slot + 1
        self._bases = [0] * (self._first_constant + len(self.constants))
        for i, t in enumerate(self.constants):
            self._bases[self._first_constant + i] = t.data_ptr()
        self._launch = self._choose_launch()
        # main's steps, then a copy for each result IREE leaves in another buffer than its output
        self._steps = [self._prepare(s) for s in plan.steps] + self._result_copy_steps()
        # Parameter blocks are shared by calls: two threads calling at once take turns.
        self._lock = threading.Lock()
        self.graphs = len(plan.steps) >= GRAPH_MIN_STEPS if graphs is None else graphs
        self._graph = None  # built on the first call that may use it
        self.stats = {"calls": 0, "graph_launches": 0, "nodes_rewritten": 0}
        """Counts since load: calls, of them launched as the graph, and graph nodes rewritten
        because a buffer moved (bench/launch_check.py prints them beside its timings)."""
        # Buffer slots whose address changes between calls: the graph rewrites their users.
        self._dynamic = set(range(self._first_constant))
        if plan.init_steps and loaded is None:  # constants IREE computes when the module loads
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
        outputs = self._new_outputs()
        for i, slot in self.tied.items():
            outputs[i] = keep[slot]  # the tensor the kernels updated: the caller's, or the copy passed
        for i, t in enumerate(outputs):
            bases[self._first_output + i] = t.data_ptr()
        transient = None
        if self.plan.transient_bytes:
            transient = torch.empty(self.plan.transient_bytes, dtype=torch.uint8, device=self.device)
            bases[self._transient_slot] = transient.data_ptr()
        stream = torch._C._cuda_getCurrentRawStream(self.index)
        self.stats["calls"] += 1
        if not (self.graphs and not torch.cuda.is_current_stream_capturing() and self._replay(bases, stream)):
            with self._lock:
                self._run(self._steps, bases, stream)
        # Dropping `keep` and `transient` here is safe: torch's caching allocator hands their
        # memory only to later work on this same stream, which runs after these kernels.
        del keep, transient
        return outputs

    def _new_outputs(self) -> list:
        return [None if i in self.tied else self.torch.empty(spec.shape, dtype=dtype, device=self.device)
                for i, (spec, dtype) in enumerate(zip(self.output_specs, self._dtypes))]

    def _result_copy_steps(self) -> list:
        """A copy step for each result IREE leaves in another buffer than its output."""
        steps = []
        for i, out in enumerate(self.plan.outputs):
            if i not in self.tied and not (out.buffer.kind == "output" and out.offset == 0):
                copy = Step(op="copy", target=Ref("output", i), length=out.nbytes, source=out.buffer,
                            source_offset=out.offset)
                steps.append(self._prepare(copy))
        return steps

    # -- as one CUDA graph -----------------------------------------------------------------

    def _replay(self, bases: list, stream: int) -> bool:
        """Launch the plan as its CUDA graph (built on first use) with this call's addresses;
        False (and plain launches from then on) where the driver cannot build it."""
        with self._lock:
            if self._graph is None:
                try:
                    self._graph = PlanGraph(self.driver, self._steps, bases, self._dynamic)
                except (AttributeError, ValueError, DeviceError):  # an older driver, a copy too long
                    self.graphs = False
                    return False
            self.stats["nodes_rewritten"] += self._graph.launch(bases, stream)
            self.stats["graph_launches"] += 1
        return True

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


class DynamicLauncher:
    """A dynamic build's plan on the launcher: per input shape, the plan's numbers evaluated
    (LaunchPlan.concrete) into a Launcher of their own (its prepared launches and its CUDA
    graph), all sharing one load of the kernels and weights. MAX_SHAPES shapes are kept, the
    first seen dropped first (a shape's evaluation and graph cost ~0.1-1 ms on its first call;
    a call of a kept shape costs one dictionary lookup more than a static module's)."""

    MAX_SHAPES = 64

    def __init__(self, plan: LaunchPlan, input_specs: list, output_specs: list, device_index: int = 0,
                 copy_inputs: frozenset = frozenset(), graphs: bool | None = None, tied: frozenset = frozenset()):
        self.plan = plan
        self.input_specs, self.output_specs = input_specs, output_specs
        self.index, self.copy_inputs, self.graphs, self.tied = device_index, copy_inputs, graphs, tied
        self._loaded = None
        self._by_shape: dict = {}
        self._lock = threading.Lock()

    @property
    def shapes(self) -> list:
        """The input shapes with a launcher, first seen first."""
        return list(self._by_shape)

    def __call__(self, inputs: list, names: list[str]) -> list:
        try:
            key = tuple(t.shape for t in inputs)  # torch.Size: a tuple, hashable
        except AttributeError:
            key = None
        launcher = self._by_shape.get(key) if len(inputs) == len(self.input_specs) else None
        if launcher is None:  # a new shape: checked, evaluated and kept (the oldest dropped past MAX_SHAPES)
            launcher = self._new_shape(inputs, names)
        return launcher(inputs, names)

    def _new_shape(self, inputs: list, names: list[str]) -> Launcher:
        if len(inputs) != len(self.input_specs):
            raise InputError(f"expected {len(self.input_specs)} tensor inputs, got {len(inputs)}")
        shapes = []
        for t, spec, name in zip(inputs, self.input_specs, names):
            shape = tuple(getattr(t, "shape", ()))
            if not spec.matches(shape):
                raise InputError(f"{name}: {getattr(t, 'dtype', type(t).__name__)}[{', '.join(map(str, shape))}] "
                                 f"does not match the compiled {spec.describe()}")
            shapes.append(shape)
        key = tuple(shapes)
        with self._lock:
            launcher = self._by_shape.get(key)
            if launcher is None:
                launcher = self._launcher_for([list(s) for s in shapes])
                while len(self._by_shape) >= self.MAX_SHAPES:
                    self._by_shape.pop(next(iter(self._by_shape)))
                self._by_shape[key] = launcher
        return launcher

    def _launcher_for(self, shapes: list) -> Launcher:
        try:
            plan = self.plan.concrete(shapes)
        except ValueError as e:  # IREE's own check on the sizes (a broadcast whose sizes disagree)
            raise InputError(f"inputs of shapes {', '.join(map(str, shapes))}: {e}") from None
        ins = [spec.concrete(shape) for spec, shape in zip(self.input_specs, shapes)]
        outs = [spec.concrete(o.shape) if spec.dynamic else spec for spec, o in zip(self.output_specs, plan.outputs)]
        if any(spec.dynamic for spec in outs):
            raise InternalError("braze bug: the launch plan gives no shape for a dynamic result")
        launcher = Launcher(plan, ins, outs, self.index, self.copy_inputs, self.graphs, loaded=self._loaded,
                            tied=self.tied)
        self._loaded = launcher.loaded
        return launcher
