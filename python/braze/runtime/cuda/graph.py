"""A launch plan as one CUDA graph, built node by node through the driver API and relaunched on
every call with only the pointers that changed rewritten.

    graph = PlanGraph(driver, steps, bases, dynamic)   # once: a node per step, in IREE's order
    graph.launch(bases, stream)                         # per call: update nodes, cuGraphLaunch

Each step is a node of a chain (kernel, memset or memcpy node, each depending on the one before).
`dynamic` names the buffer slots whose address may change between calls (the call's inputs,
outputs and transient buffer, all from torch's caching allocator); a node that uses one of them
is rewritten with cuGraphExec*NodeSetParams when, and only when, one of its addresses changed
since the last launch. In steady state (torch hands a call the blocks the last one freed) a
call is one cuGraphLaunch. The CUDA driver API says an update affects later launches only, not
launches already queued, and that launches of one executable graph are ordered behind each
other, so nothing a call reads or writes is shared with a call still running.

Why not torch.cuda.graph: its capture gives no handle on the nodes, so each call had to copy its
inputs into buffers captured once and its results out again (two more GPU operations a call,
~10 us on a bf16 TransformerEncoderLayer whose kernels take 81; bench/NOTES.md §21).
"""

from __future__ import annotations

import ctypes

from braze.runtime.cuda.driver import check

_u32, _sz, _p = ctypes.c_uint, ctypes.c_size_t, ctypes.c_void_p
CU_MEMORYTYPE_DEVICE = 2
MAX_PITCH = (1 << 31) - 1
"""Copies are one row of a 3-D copy; a row must fit the driver's pitch limit."""


class KernelNodeParams(ctypes.Structure):
    """CUDA_KERNEL_NODE_PARAMS_v2 (its first ten fields are the v1 struct)."""

    _fields_ = [("func", _p), ("gridDimX", _u32), ("gridDimY", _u32), ("gridDimZ", _u32),
                ("blockDimX", _u32), ("blockDimY", _u32), ("blockDimZ", _u32), ("sharedMemBytes", _u32),
                ("kernelParams", _p), ("extra", _p), ("kern", _p), ("ctx", _p)]


class MemsetNodeParams(ctypes.Structure):
    """CUDA_MEMSET_NODE_PARAMS."""

    _fields_ = [("dst", ctypes.c_uint64), ("pitch", _sz), ("value", _u32), ("elementSize", _u32),
                ("width", _sz), ("height", _sz)]


class Memcpy3D(ctypes.Structure):
    """CUDA_MEMCPY3D."""

    _fields_ = [("srcXInBytes", _sz), ("srcY", _sz), ("srcZ", _sz), ("srcLOD", _sz),
                ("srcMemoryType", ctypes.c_int), ("srcHost", _p), ("srcDevice", ctypes.c_uint64),
                ("srcArray", _p), ("reserved0", _p), ("srcPitch", _sz), ("srcHeight", _sz),
                ("dstXInBytes", _sz), ("dstY", _sz), ("dstZ", _sz), ("dstLOD", _sz),
                ("dstMemoryType", ctypes.c_int), ("dstHost", _p), ("dstDevice", ctypes.c_uint64),
                ("dstArray", _p), ("reserved1", _p), ("dstPitch", _sz), ("dstHeight", _sz),
                ("WidthInBytes", _sz), ("Height", _sz), ("Depth", _sz)]


def _declare(lib) -> dict:
    """The graph entry points, by their versioned names where the driver has them."""
    p, u64, sz, i32 = _p, ctypes.c_uint64, _sz, ctypes.c_int
    pp = ctypes.POINTER(p)
    wanted = {
        "cuGraphCreate": ([pp, ctypes.c_uint], ()),
        "cuGraphDestroy": ([p], ()),
        "cuGraphAddKernelNode": ([pp, p, pp, sz, ctypes.POINTER(KernelNodeParams)], ("_v2",)),
        "cuGraphAddMemsetNode": ([pp, p, pp, sz, ctypes.POINTER(MemsetNodeParams), p], ()),
        "cuGraphAddMemcpyNode": ([pp, p, pp, sz, ctypes.POINTER(Memcpy3D), p], ()),
        "cuGraphInstantiateWithFlags": ([pp, p, u64], ()),
        "cuGraphExecDestroy": ([p], ()),
        "cuGraphLaunch": ([p, p], ()),
        "cuGraphExecKernelNodeSetParams": ([p, p, ctypes.POINTER(KernelNodeParams)], ("_v2",)),
        "cuGraphExecMemsetNodeSetParams": ([p, p, ctypes.POINTER(MemsetNodeParams), p], ()),
        "cuGraphExecMemcpyNodeSetParams": ([p, p, ctypes.POINTER(Memcpy3D), p], ()),
    }
    found = {}
    for name, (args, suffixes) in wanted.items():
        for symbol in [name + s for s in suffixes] + [name]:
            fn = getattr(lib, symbol, None)
            if fn is not None:
                fn.argtypes, fn.restype = args, i32
                found[name] = fn
                break
        else:
            raise AttributeError(f"the CUDA driver has no {name}")
    return found


class _Node:
    """One step's node: its handle, its parameter struct and where its addresses come from."""

    __slots__ = ("kind", "handle", "params", "uses", "dispatch", "step", "target", "source")

    def __init__(self, kind, params, uses, dispatch=None, step=None, target=None, source=None):
        self.kind, self.params, self.uses = kind, params, uses
        self.dispatch, self.step, self.target, self.source = dispatch, step, target, source
        self.handle = ctypes.c_void_p()


class PlanGraph:
    def __init__(self, driver, steps: list, bases: list, dynamic: set[int]):
        self.driver = driver
        self.fn = _declare(driver.lib)
        self.ctx = ctypes.c_void_p(driver.context)
        self.nodes: list[_Node] = []
        self.graph = ctypes.c_void_p()
        self.exec = ctypes.c_void_p()
        check(self.fn["cuGraphCreate"](ctypes.byref(self.graph), 0), "cuGraphCreate")
        try:
            previous = None
            for op, item in steps:
                node = self._node(op, item, dynamic)
                self._fill(node, bases)
                deps, count = (ctypes.byref(previous), 1) if previous is not None else (None, 0)
                self._add(node, deps, count)
                self.nodes.append(node)
                previous = node.handle
            check(self.fn["cuGraphInstantiateWithFlags"](ctypes.byref(self.exec), self.graph, 0),
                  "cuGraphInstantiateWithFlags")
        except Exception:
            self.close()
            raise
        self._last = list(bases)
        self._watch = sorted(dynamic)
        self._users = {slot: [n for n in self.nodes if slot in n.uses] for slot in dynamic}

    @staticmethod
    def _node(op, item, dynamic) -> _Node:
        if op == "dispatch":
            params = KernelNodeParams(func=item.function, gridDimX=item.grid[0], gridDimY=item.grid[1],
                                      gridDimZ=item.grid[2], blockDimX=item.block[0], blockDimY=item.block[1],
                                      blockDimZ=item.block[2], sharedMemBytes=item.shared,
                                      kernelParams=item.params_address)
            return _Node("kernel", params, {s for _, s, _ in item.bindings} & dynamic, dispatch=item)
        step, target, source = item
        if op == "fill":
            size = step.pattern_bytes if step.pattern_bytes in (1, 2) else 4
            width = step.length // size
            params = MemsetNodeParams(pitch=width * size, value=step.pattern, elementSize=size, width=width, height=1)
            return _Node("memset", params, {target} & dynamic, step=step, target=target)
        if step.length > MAX_PITCH:
            raise ValueError(f"a {step.length}-byte copy is past one row of a graph's memcpy node")
        params = Memcpy3D(srcMemoryType=CU_MEMORYTYPE_DEVICE, srcPitch=step.length, srcHeight=1,
                          dstMemoryType=CU_MEMORYTYPE_DEVICE, dstPitch=step.length, dstHeight=1,
                          WidthInBytes=step.length, Height=1, Depth=1)
        return _Node("memcpy", params, {target, source} & dynamic, step=step, target=target, source=source)

    @staticmethod
    def _fill(node: _Node, bases: list) -> None:
        """Write the node's addresses for these bases into its parameters."""
        if node.kind == "kernel":
            values = node.dispatch.values
            for i, slot, offset in node.dispatch.bindings:
                values[i] = bases[slot] + offset
        elif node.kind == "memset":
            node.params.dst = bases[node.target] + node.step.target_offset
        else:
            node.params.dstDevice = bases[node.target] + node.step.target_offset
            node.params.srcDevice = bases[node.source] + node.step.source_offset

    def _add(self, node: _Node, deps, count: int) -> None:
        ref = ctypes.byref(node.params)
        if node.kind == "kernel":
            status = self.fn["cuGraphAddKernelNode"](ctypes.byref(node.handle), self.graph, deps, count, ref)
        elif node.kind == "memset":
            status = self.fn["cuGraphAddMemsetNode"](ctypes.byref(node.handle), self.graph, deps, count, ref, self.ctx)
        else:
            status = self.fn["cuGraphAddMemcpyNode"](ctypes.byref(node.handle), self.graph, deps, count, ref, self.ctx)
        check(status, f"cuGraphAdd({node.kind})")

    def _update(self, node: _Node) -> None:
        ref = ctypes.byref(node.params)
        if node.kind == "kernel":
            status = self.fn["cuGraphExecKernelNodeSetParams"](self.exec, node.handle, ref)
        elif node.kind == "memset":
            status = self.fn["cuGraphExecMemsetNodeSetParams"](self.exec, node.handle, ref, self.ctx)
        else:
            status = self.fn["cuGraphExecMemcpyNodeSetParams"](self.exec, node.handle, ref, self.ctx)
        check(status, f"cuGraphExecSetParams({node.kind})")

    def launch(self, bases: list, stream: int) -> int:
        """Rewrite the nodes whose addresses changed, then launch on `stream`; returns how many
        nodes were rewritten."""
        last = self._last
        stale: dict[int, _Node] = {}
        for slot in self._watch:
            if bases[slot] != last[slot]:
                for node in self._users[slot]:
                    stale[id(node)] = node
                last[slot] = bases[slot]
        for node in stale.values():
            self._fill(node, bases)
            self._update(node)
        check(self.fn["cuGraphLaunch"](self.exec, ctypes.c_void_p(stream)), "cuGraphLaunch")
        return len(stale)

    def close(self) -> None:
        if self.exec.value:
            self.fn["cuGraphExecDestroy"](self.exec)
            self.exec = ctypes.c_void_p()
        if self.graph.value:
            self.fn["cuGraphDestroy"](self.graph)
            self.graph = ctypes.c_void_p()

    def __del__(self):
        try:
            self.close()
        except Exception:  # noqa: BLE001 - at interpreter exit the driver may be gone
            pass
