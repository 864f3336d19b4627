"""The launcher's CUDA graph (braze.runtime.cuda.graph) against a recording stand-in for the driver: the
nodes form a chain in the plan's order with the call's addresses, and a later call rewrites
exactly the nodes whose buffers moved. (The graph on a real GPU: bench/launch_check.py.)"""

from __future__ import annotations

import ctypes
from types import SimpleNamespace

import pytest

from braze.runtime.cuda.graph import PlanGraph
from braze.runtime.cuda.launch import _Dispatch
from braze.runtime.cuda.plan import Ref, Step


class FakeDriver:
    """Records what PlanGraph asks of libcuda; node handles are 1, 2, 3, ..."""

    def __init__(self):
        self.context = 0x77
        self.nodes = {}     # handle -> (kind, dependencies, copied parameters)
        self.updates = []   # (handle, copied parameters)
        self.launches = []
        self.lib = SimpleNamespace(**{name: self._fn(name) for name in (
            "cuGraphCreate", "cuGraphDestroy", "cuGraphAddKernelNode_v2", "cuGraphAddMemsetNode",
            "cuGraphAddMemcpyNode", "cuGraphInstantiateWithFlags", "cuGraphExecDestroy", "cuGraphLaunch",
            "cuGraphExecKernelNodeSetParams_v2", "cuGraphExecMemsetNodeSetParams",
            "cuGraphExecMemcpyNodeSetParams")})

    def _fn(self, name):
        def call(*args):
            return getattr(self, "_" + name.removesuffix("_v2"))(*args)
        return call

    @staticmethod
    def _out(ref, value):
        ref._obj.value = value

    def _cuGraphCreate(self, graph, flags):
        self._out(graph, 0x1000)
        return 0

    def _add(self, kind, node, deps, count, params):
        handle = len(self.nodes) + 1
        dep = [deps._obj.value] if count else []
        self.nodes[handle] = (kind, dep, self._copy(kind, params._obj))
        self._out(node, handle)
        return 0

    @staticmethod
    def _copy(kind, p):
        if kind == "kernel":  # the driver copies the parameter values at this call
            n = 3
            slots = ctypes.cast(p.kernelParams, ctypes.POINTER(ctypes.c_void_p))
            values = [ctypes.cast(slots[i], ctypes.POINTER(ctypes.c_uint64))[0] for i in range(n)]
            return {"func": p.func, "grid": (p.gridDimX, p.gridDimY, p.gridDimZ), "values": values}
        if kind == "memset":
            return {"dst": p.dst, "value": p.value, "size": p.elementSize, "width": p.width}
        return {"dst": p.dstDevice, "src": p.srcDevice, "bytes": p.WidthInBytes}

    def _cuGraphAddKernelNode(self, node, graph, deps, count, params):
        return self._add("kernel", node, deps, count, params)

    def _cuGraphAddMemsetNode(self, node, graph, deps, count, params, ctx):
        return self._add("memset", node, deps, count, params)

    def _cuGraphAddMemcpyNode(self, node, graph, deps, count, params, ctx):
        return self._add("memcpy", node, deps, count, params)

    def _cuGraphInstantiateWithFlags(self, exec_, graph, flags):
        self._out(exec_, 0x2000)
        return 0

    def _update(self, kind, exec_, node, params):
        self.updates.append((node.value, self._copy(kind, params._obj)))
        return 0

    def _cuGraphExecKernelNodeSetParams(self, exec_, node, params):
        return self._update("kernel", exec_, node, params)

    def _cuGraphExecMemsetNodeSetParams(self, exec_, node, params, ctx):
        return self._update("memset", exec_, node, params)

    def _cuGraphExecMemcpyNodeSetParams(self, exec_, node, params, ctx):
        return self._update("memcpy", exec_, node, params)

    def _cuGraphLaunch(self, exec_, stream):
        self.launches.append(stream.value)
        return 0

    def _cuGraphDestroy(self, graph):
        return 0

    def _cuGraphExecDestroy(self, exec_):
        return 0


# Slots as the launcher numbers them: input 0, output 1, transient 2, constant 3.
SLOTS = {"input": 0, "output": 1, "transient": 2, "constant": 3}


def _steps():
    kernel = SimpleNamespace(block=(128, 1, 1), shared_memory=0)

    def dispatch(function, bindings):
        step = Step(op="dispatch", grid=(4, 1, 1), constants=[9],
                    bindings=[(Ref(kind), offset, 64) for kind, offset in bindings])
        return ("dispatch", _Dispatch(function, kernel, step, lambda ref: SLOTS[ref.kind]))

    fill = Step(op="fill", target=Ref("transient"), target_offset=128, length=256, pattern=0, pattern_bytes=4)
    copy = Step(op="copy", target=Ref("output"), length=64, source=Ref("transient"), source_offset=256)
    return [
        dispatch(0xA, [("input", 0), ("transient", 0)]),      # reads the input
        ("fill", (fill, SLOTS["transient"], None)),
        dispatch(0xB, [("transient", 0), ("constant", 32)]),  # only the transient and a weight
        ("copy", (copy, SLOTS["output"], SLOTS["transient"])),
    ]


def test_nodes_are_a_chain_in_plan_order_with_the_calls_addresses():
    driver = FakeDriver()
    bases = [0x10000, 0x20000, 0x30000, 0x40000]
    graph = PlanGraph(driver, _steps(), bases, dynamic={0, 1, 2})
    kinds = [driver.nodes[h][0] for h in sorted(driver.nodes)]
    assert kinds == ["kernel", "memset", "kernel", "memcpy"]
    assert [driver.nodes[h][1] for h in sorted(driver.nodes)] == [[], [1], [2], [3]]
    first, fill, second, copy = (driver.nodes[h][2] for h in sorted(driver.nodes))
    assert first["func"] == 0xA and first["grid"] == (4, 1, 1)
    assert first["values"] == [0x10000, 0x30000, 9]       # bindings, then the 32-bit constant
    assert second["values"] == [0x30000, 0x40000 + 32, 9]
    assert fill == {"dst": 0x30000 + 128, "value": 0, "size": 4, "width": 64}
    assert copy == {"dst": 0x20000, "src": 0x30000 + 256, "bytes": 64}
    assert graph.launch(bases, stream=5) == 0              # same buffers: nothing rewritten
    assert driver.launches == [5] and driver.updates == []


def test_a_call_rewrites_exactly_the_nodes_whose_buffers_moved():
    driver = FakeDriver()
    bases = [0x10000, 0x20000, 0x30000, 0x40000]
    graph = PlanGraph(driver, _steps(), bases, dynamic={0, 1, 2})
    moved_input = [0x11000, 0x20000, 0x30000, 0x40000]
    assert graph.launch(moved_input, stream=5) == 1
    assert driver.updates == [(1, {"func": 0xA, "grid": (4, 1, 1), "values": [0x11000, 0x30000, 9]})]
    driver.updates.clear()
    moved_output = [0x11000, 0x21000, 0x30000, 0x40000]
    assert graph.launch(moved_output, stream=5) == 1
    assert driver.updates == [(4, {"dst": 0x21000, "src": 0x30000 + 256, "bytes": 64})]
    driver.updates.clear()
    moved_transient = [0x11000, 0x21000, 0x31000, 0x40000]
    assert graph.launch(moved_transient, stream=6) == 4    # every node uses the transient buffer
    assert sorted(h for h, _ in driver.updates) == [1, 2, 3, 4]
    assert dict(driver.updates)[2] == {"dst": 0x31000 + 128, "value": 0, "size": 4, "width": 64}
    assert dict(driver.updates)[3]["values"] == [0x31000, 0x40000 + 32, 9]
    assert driver.launches == [5, 5, 6]
    driver.updates.clear()
    assert graph.launch(moved_transient, stream=6) == 0    # and then nothing again


def test_a_driver_without_graph_entry_points_is_refused_so_the_launcher_falls_back():
    driver = FakeDriver()
    del driver.lib.cuGraphExecMemcpyNodeSetParams
    with pytest.raises(AttributeError, match="cuGraphExecMemcpyNodeSetParams"):
        PlanGraph(driver, _steps(), [1, 2, 3, 4], dynamic={0, 1, 2})
