"""Reading the launch plan off IREE's HAL-level program (compile side: IREE's bindings).

braze compiles a CUDA module in one IREE invocation that stops at the `hal` phase, where
`main` is a straight-line list of HAL commands (command buffer fills, copies and dispatches
with constant grids, push constants and binding ranges) and the initializers create the
executables (CUDA flatbuffers holding PTX) and the constant buffers; then the same invocation
goes on to VM bytecode. This module interprets that HAL program symbolically, op by op, into a
LaunchPlan: nothing is re-derived, every number comes from IREE's output.

A dynamic build's program computes sizes, offsets, grids and push constants from its inputs'
dimensions (`hal.buffer_view.dim`) in straight-line index arithmetic: those values become
nodes of the plan's `exprs` (numbers that are known fold as they are), and the launcher
evaluates them per input shape. The transient buffer's size comes from the function IREE
names for it (`iree.abi.transients.size`), interpreted the same way.

What it does not recognize (control flow that depends on run-time values, calls, dynamic
allocations, queue operations other than one execute, any other op) makes the plan
unavailable, with the op named: the module then runs through iree.runtime.
"""

from __future__ import annotations

import binascii
import mmap
import os
import re
import tempfile
from dataclasses import dataclass, field

import numpy as np

from braze.compiler._iree_compiler import iree_ir
from braze.irutil import all_ops

from braze.runtime.cuda.plan import Executable, LaunchPlan, Output, Ref, Step, Sym, apply, read_cuda_executable, split_top


class Unsupported(Exception):
    """The HAL program does something the plan cannot express."""


@dataclass
class _Buffer:
    ref: Ref
    size: int
    offset: int = 0


@dataclass
class _Bytes:
    data: "bytes | _Lazy"


_RESOURCE = re.compile(rb'^\s*([\w.$-]+): "0x([0-9A-Fa-f]*)"', re.MULTILINE)


class _Resources:
    """A module's builtin dialect resources (the weights), read from its printed form on disk a
    range at a time. A blob prints as twice its bytes in hex, and the whole module as one string
    was the peak of compiling a 0.5B-parameter decoder step: 10.2 GB for 1 GB of weights, 4.9
    before the plan was read (bench/NOTES.md §52)."""

    def __init__(self, module_op):
        self._tmp = tempfile.TemporaryDirectory(prefix="braze-plan-")
        path = os.path.join(self._tmp.name, "hal.mlir")
        with open(path, "wb") as f:
            module_op.print(file=f, binary=True, assume_verified=True)  # streamed to the file
        self._file = open(path, "rb")
        self._map = mmap.mmap(self._file.fileno(), 0, access=mmap.ACCESS_READ) if os.path.getsize(path) else b""
        self.spans: dict[str, tuple[int, int]] = {}
        """name -> (start, end) of the blob's hex digits in the file."""
        at = self._map.rfind(b"dialect_resources:")
        if at >= 0:
            for m in _RESOURCE.finditer(self._map, at):
                self.spans[m.group(1).decode()] = m.span(2)

    def size(self, name: str) -> int:
        start, end = self.spans[name]
        return (end - start) // 2 - 4  # MLIR's blob encoding: a 4-byte alignment, then the bytes

    def read(self, name: str, start: int, length: int) -> bytes:
        at = self.spans[name][0] + 2 * (4 + start)
        with memoryview(self._map) as hex_digits:
            return binascii.unhexlify(hex_digits[at:at + 2 * length])

    def close(self) -> None:
        if isinstance(self._map, mmap.mmap):
            self._map.close()
        self._file.close()
        self._tmp.cleanup()


class _Lazy:
    """Constant bytes not read yet: pieces of bytes or (resources, name, start, length) ranges of
    blobs. Sliced as bytes are; `read()` gives the bytes. The plan keeps its weights this way
    until IREE's program exists, then as views of the same bytes in it (bind_constants)."""

    def __init__(self, pieces: list):
        self.pieces = pieces

    @staticmethod
    def _length(piece) -> int:
        return len(piece) if isinstance(piece, (bytes, bytearray)) else piece[3]

    def __len__(self) -> int:
        return sum(self._length(p) for p in self.pieces)

    @classmethod
    def join(cls, parts: list) -> "_Lazy":
        return cls([p for part in parts for p in (part.pieces if isinstance(part, _Lazy) else [bytes(part)])])

    def __getitem__(self, key: slice) -> "_Lazy":
        start, stop, step = key.indices(len(self))
        if step != 1:
            raise TypeError("a strided slice of constant bytes")
        out, at = [], 0
        for p in self.pieces:
            n = self._length(p)
            lo, hi = max(start - at, 0), min(stop - at, n)
            if lo < hi:
                out.append(p[lo:hi] if isinstance(p, (bytes, bytearray)) else (p[0], p[1], p[2] + lo, hi - lo))
            at += n
        return _Lazy(out)

    def read(self) -> bytes:
        return b"".join(p if isinstance(p, (bytes, bytearray)) else p[0].read(*p[1:]) for p in self.pieces)

    def resources(self) -> set:
        return {p[0] for p in self.pieces if not isinstance(p, (bytes, bytearray))}


def bind_constants(plan: LaunchPlan, vmfb: bytes) -> None:
    """The plan's constants that are still to be read (_Lazy) as views of the same bytes in
    IREE's program `vmfb` (which holds the weights too), else read: one copy of the weights in
    memory, not three."""
    view = memoryview(vmfb)
    opened = set()
    for i, c in enumerate(plan.constants):
        if isinstance(c, _Lazy):
            opened |= c.resources()
            at = _locate(vmfb, c)
            plan.constants[i] = view[at:at + len(c)] if at >= 0 else c.read()
    for resources in opened:
        resources.close()


_CHUNK = 1 << 26


def _locate(vmfb, data: _Lazy) -> int:
    """Where `data`'s bytes occur in `vmfb` (-1: nowhere), compared a chunk at a time: a
    gigabyte of weights is never read whole."""
    n = len(data)
    if not n:
        return -1
    head = data[0:min(n, 1 << 16)].read()
    at = vmfb.find(head)
    with memoryview(vmfb) as view:
        while at >= 0:
            if at + n <= len(vmfb) and all(view[at + i:at + min(i + _CHUNK, n)] == data[i:i + _CHUNK].read()
                                           for i in range(len(head), n, _CHUNK)):
                return at
            at = vmfb.find(head, at + 1)
    return -1


@dataclass
class _Commands:
    steps: list = field(default_factory=list)


@dataclass
class _View:
    buffer: _Buffer
    offset: object
    length: object
    shape: list = field(default_factory=list)


_IGNORED = {
    "hal.device.queue.dealloca",
    "hal.buffer.assert", "hal.buffer_view.assert", "util.status.check_ok", "hal.command_buffer.execution_barrier",
    "hal.command_buffer.finalize", "hal.fence.await", "hal.command_buffer.begin_debug_group",
    "hal.command_buffer.end_debug_group",
}
_TOKENS = {
    "util.null", "hal.device.allocator", "hal.fence.create", "hal.memory_type", "hal.buffer_usage", "hal.element_type",
    "hal.encoding_type", "hal.devices.get", "hal.devices.count", "hal.ex.file.from_memory", "hal.fence.join",
}


def _int_attr(attr) -> int:
    return int(iree_ir.IntegerAttr(attr).value)


_ARITH = {
    "arith.addi": "add", "arith.subi": "sub", "arith.muli": "mul", "arith.divsi": "divs", "arith.divui": "divu",
    "arith.ceildivsi": "ceildivs", "arith.ceildivui": "ceildivu", "arith.remsi": "rems", "arith.remui": "remu",
    "arith.minsi": "min", "arith.maxsi": "max", "arith.minui": "minu", "arith.maxui": "maxu", "arith.shli": "shl",
    "arith.shrui": "shru", "arith.shrsi": "shrs", "arith.andi": "and", "arith.ori": "or", "arith.xori": "xor",
}
"""IREE's host-side index arithmetic, by the plan's node names (braze.runtime.cuda.plan.apply)."""
_CASTS = {"arith.index_cast", "arith.index_castui", "arith.extui", "arith.extsi"}


class _Interpreter:
    def __init__(self, module_op, resources: _Resources, input_bytes: list, output_bytes: list,
                 transient_bytes, tied: dict | None = None):
        self.module = module_op
        self.tied = dict(tied or {})
        """result -> input whose buffer holds it (no output argument of its own)."""
        self.resources = resources
        self.input_bytes, self.output_bytes, self.transient_bytes = input_bytes, output_bytes, transient_bytes
        self.globals: dict[str, object] = {}
        self.executables: list[Executable] = []
        self.executable_index: dict[str, int] = {}
        self.constants: list[bytes] = []
        self.steps: list[Step] = []
        self.init_steps: list[Step] = []
        self.binaries = self._binaries()
        self.exprs: list = []
        """The plan's symbolic nodes (a dynamic build's size arithmetic)."""
        self.checks: list = []
        """[condition, message] of each cf.assert on them."""

    def num(self, op: str, *args):
        """op on plan numbers: folded where all are known, else a new node."""
        if all(isinstance(a, (int, bool, np.integer)) for a in args):
            return apply(op, [int(a) for a in args])
        self.exprs.append([op, *args])
        return Sym(len(self.exprs) - 1)

    def dim_node(self, index: int, axis: int) -> Sym:
        node = ["dim", index, axis]
        if node not in self.exprs:
            self.exprs.append(node)
        return Sym(self.exprs.index(node))

    # -- executables and constants ------------------------------------------------------

    def _binaries(self) -> dict[str, bytes]:
        """'@executable::@variant' -> the binary's bytes, for the CUDA variants."""
        found = {}
        for exe in all_ops(self.module, "hal.executable"):
            name = iree_ir.StringAttr(exe.attributes["sym_name"]).value
            for binary in all_ops(exe, "hal.executable.binary"):
                variant = iree_ir.StringAttr(binary.attributes["sym_name"]).value
                fmt = iree_ir.StringAttr(binary.attributes["format"]).value
                if fmt != "cuda-nvptx-fb":
                    continue
                found[f"@{name}::@{variant}"] = np.array(binary.attributes["data"]).astype(np.int8).tobytes()
        return found

    def _executable(self, symbol: str) -> int:
        if symbol not in self.executable_index:
            if symbol not in self.binaries:
                raise Unsupported(f"executable {symbol} is not a CUDA binary")
            self.executable_index[symbol] = len(self.executables)
            self.executables.append(read_cuda_executable(self.binaries[symbol]))
        return self.executable_index[symbol]

    def _constant_bytes(self, text: str, size: int) -> "bytes | _Lazy":
        """The bytes of a util.buffer.constant's value (a composite of elements, or one)."""
        text = text.strip()
        if text.startswith("#util.composite<"):
            inner = text[text.index("[") + 1: text.rindex("]")]
            parts = [p for p in split_top(inner) if p]
            data = _Lazy.join([self._element_bytes(p) for p in parts])
        else:
            data = self._element_bytes(text)
        if len(data) != size:
            raise Unsupported(f"constant of {len(data)} bytes where {size} were declared")
        return data

    def _element_bytes(self, text: str) -> bytes:
        resource = re.match(r"dense_resource<([^>]+)>\s*:", text)
        if resource:
            name = resource.group(1)
            if name not in self.resources.spans:
                raise Unsupported(f"constant resource {name} not found")
            return _Lazy([(self.resources, name, 0, self.resources.size(name))])
        pattern = re.match(r"#util\.byte_pattern<(-?\d+)>\s*:\s*(.+)$", text)
        if pattern:
            return bytes([int(pattern.group(1)) & 0xFF]) * _type_bytes(pattern.group(2))
        raw = re.match(r'dense<"0x([0-9A-Fa-f]*)">\s*:\s*(.+)$', text)
        if raw:  # MLIR's hex form: the elements' bytes, little-endian (one element: a splat)
            data, total = bytes.fromhex(raw.group(1)), _type_bytes(raw.group(2))
            if data and len(data) < total and total % len(data) == 0:
                data *= total // len(data)
            return data
        value, _, type_text = text.rpartition(":")
        element = re.search(r"[<x]([a-z][a-z0-9]*)>\s*$", type_text)
        if element and element.group(1) in ("bf16", "f16"):
            # The bindings cannot read 16-bit float elements: the same literal read as float32
            # (each value is one of the 16-bit type's, so rounding back is exact).
            wide = type_text[:element.start(1)] + "f32" + type_text[element.end(1):]
            values = np.ascontiguousarray(np.array(iree_ir.DenseElementsAttr(
                iree_ir.Attribute.parse(f"{value}: {wide}"))), dtype=np.float32).reshape(-1)
            if element.group(1) == "f16":
                return values.astype(np.float16).tobytes()
            bits = values.view(np.uint32).astype(np.uint64)
            return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16).tobytes()
        # A literal (splats are expanded by numpy's view of the attribute).
        dense = iree_ir.DenseElementsAttr(iree_ir.Attribute.parse(text))
        return np.ascontiguousarray(np.array(dense)).tobytes()

    # -- the interpreter ------------------------------------------------------------------

    def run_initializers(self) -> None:
        for op in self.module.regions[0].blocks[0].operations:
            op = op.operation
            if op.name == "util.initializer":
                stores = [iree_ir.FlatSymbolRefAttr(o.attributes["global"]).value
                          for o in all_ops(op, "util.global.store")]
                if stores and all(name.startswith("__device_") and "_query_" not in name
                                  and "_executable_" not in name for name in stores):
                    for name in stores:  # choosing the device: the launcher runs on torch's
                        self.globals[name] = "device"
                    continue
                self.steps = []
                self._run_region(op.regions[0], {}, initializer=True)
                self.init_steps.extend(self.steps)  # constants computed at load (IREE's hoisting)

    def run_main(self, function: str = "main") -> tuple[list[Step], list[Output]]:
        funcs = [f for f in all_ops(self.module, "util.func")
                 if iree_ir.StringAttr(f.attributes["sym_name"]).value == function]
        if not funcs:
            raise Unsupported(f"no util.func @{function}")
        block = funcs[0].regions[0].blocks[0]
        env: dict = {}
        args = list(block.arguments)
        n_in = len(self.input_bytes)
        untied = [i for i in range(len(self.output_bytes)) if i not in self.tied]  # each has an output argument
        n_out = len(untied)
        expected = n_in + n_out + (1 if self.transient_bytes else 0)
        if len(args) not in (expected, n_in + n_out + 1, n_in + n_out):
            raise Unsupported(f"@{function} takes {len(args)} arguments")
        for i, a in enumerate(args):
            if i < n_in:
                env[a] = ("view", i)
            elif i < n_in + n_out:
                result = untied[i - n_in]
                size = self.output_bytes[result]
                if size is None:  # a dynamic result: as many bytes as the call's result has
                    self.exprs.append(["outlen", result])
                    size = Sym(len(self.exprs) - 1)
                env[a] = _Buffer(Ref("output", result), size)
            else:
                env[a] = _Buffer(Ref("transient", 0), self.transient_bytes)
        self.steps = []
        results = self._run_region(funcs[0].regions[0], env, initializer=False)
        outputs = []
        for i, r in enumerate(results):
            if not isinstance(r, _View):
                raise Unsupported("a result is not a buffer view")
            if i in self.tied and (r.buffer.ref != Ref("input", self.tied[i]) or self.num("add", r.buffer.offset, r.offset)):
                raise Unsupported(f"result {i}, tied to input {self.tied[i]}, is not that input's buffer")
            shape = r.shape if any(isinstance(d, Sym) for d in r.shape) else None
            outputs.append(Output(r.buffer.ref, self.num("add", r.buffer.offset, r.offset), r.length, shape))
        return self.steps, outputs

    def _run_region(self, region, env: dict, initializer: bool):
        blocks = list(region.blocks)
        block = blocks[0]
        for _ in range(10000):
            jump = None
            for op in block.operations:
                op = op.operation
                name = op.name
                if name == "util.return":
                    return [env[v] for v in op.operands]
                if name == "cf.br":
                    jump = (op.successors[0], [env[v] for v in op.operands])
                    break
                if name == "cf.cond_br":
                    condition = env[op.operands[0]]
                    if not isinstance(condition, (bool, int, np.bool_)):
                        raise Unsupported("a branch on a value known only at run time")
                    segments = list(iree_ir.DenseI32ArrayAttr(op.attributes["operandSegmentSizes"]))
                    values = list(op.operands)
                    true_args = values[1:1 + segments[1]]
                    false_args = values[1 + segments[1]:]
                    if condition:
                        jump = (op.successors[0], [env[v] for v in true_args])
                    else:
                        jump = (op.successors[1], [env[v] for v in false_args])
                    break
                self._op(op, env, initializer)
            if jump is None:
                raise Unsupported("a block without a terminator")
            target, values = jump
            for arg, value in zip(target.arguments, values):
                env[arg] = value
            block = target
        raise Unsupported("a loop")

    def _op(self, op, env: dict, initializer: bool) -> None:
        name = op.name
        operands = [env.get(v) for v in op.operands]
        results = list(op.results)

        def put(*values):
            for r, v in zip(results, values):
                env[r] = v

        if name in _IGNORED:
            return
        if name == "cf.assert":
            condition, message = operands[0], str(op.attributes["msg"]).strip('"')
            if isinstance(condition, Sym):
                self.checks.append([condition, message])
            elif not condition:
                raise Unsupported(f"an assertion that always fails: {message}")
            return
        if name in _TOKENS:
            put(*([name] * len(results)))
            return
        if name == "arith.constant":
            attr = op.attributes["value"]
            put(_int_attr(attr) if isinstance(attr, iree_ir.IntegerAttr) else attr)
            return
        if name == "arith.select":
            c, a, b = operands
            if isinstance(c, (bool, int, np.bool_)):
                put(a if c else b)
            elif all(isinstance(v, (int, Sym)) for v in operands):
                put(self.num("select", c, a, b))
            else:
                raise Unsupported("a select between values that are not numbers, on a run-time condition")
            return
        if name == "arith.cmpi":
            a, b = operands
            if not all(isinstance(v, (int, bool, Sym)) for v in (a, b)):
                raise Unsupported("a comparison of values that are not numbers")
            put(self.num("cmp", _int_attr(op.attributes["predicate"]), a, b))
            return
        if name in _ARITH:
            if not all(isinstance(v, (int, bool, Sym)) for v in operands):
                raise Unsupported(f"{name} of values that are not numbers")
            put(self.num(_ARITH[name], *operands))
            return
        if name in _CASTS:
            put(operands[0])
            return
        if name == "arith.trunci":
            width = iree_ir.IntegerType(op.results[0].type).width
            put(self.num("trunc", operands[0], width) if isinstance(operands[0], Sym) else operands[0])
            return
        if name == "hal.buffer_view.dim":
            view = operands[0]
            if not (isinstance(view, tuple) and view[0] == "view"):
                raise Unsupported("a dimension of a view that is not an input")
            put(self.dim_node(view[1], _int_attr(op.attributes["index"])))
            return
        if name == "util.global.load":
            symbol = iree_ir.FlatSymbolRefAttr(op.attributes["global"]).value
            if symbol.startswith("__device_") and symbol not in self.globals:
                put("device")
                return
            if symbol not in self.globals:
                raise Unsupported(f"global @{symbol} read before it is set")
            put(self.globals[symbol])
            return
        if name == "util.global.store":
            self.globals[iree_ir.FlatSymbolRefAttr(op.attributes["global"]).value] = operands[0]
            return
        if name == "hal.device.query":
            key = str(op.attributes["key"]).strip('"')
            category = str(op.attributes["category"]).strip('"')
            if category == "hal.executable.format":
                put(True, key == "cuda-nvptx-fb")
                return
            raise Unsupported(f"device query {category}::{key}")
        if name == "hal.executable.create":
            put(self._executable(str(op.attributes["executable_target"])))
            return
        if name == "hal.executable.lookup.function":
            entry = str(op.attributes["entry_point"])
            exe_symbol, _, kernel = entry.rpartition("::@")
            index = self._executable(exe_symbol)
            names = [k.name for k in self.executables[index].kernels]
            if kernel not in names:
                raise Unsupported(f"kernel {kernel} is not in {exe_symbol}")
            put((index, names.index(kernel)))
            return
        if name == "util.buffer.constant":
            size = None
            text = str(op.attributes["value"])
            composite = re.match(r"#util\.composite<(\d+)xi8", text)
            size = int(composite.group(1)) if composite else None
            put(_Bytes(self._constant_bytes(text, size if size is not None else len(self._element_bytes(text)))))
            return
        if name == "hal.allocator.import":
            # operands: allocator, affinity, memory types, usage, source, offset, length
            source, offset, length = operands[4], operands[5], operands[6]
            if not isinstance(source, _Bytes) or isinstance(offset, Sym) or isinstance(length, Sym):
                raise Unsupported("an import of something that is not a constant")
            self.constants.append(source.data[offset:offset + length])
            put(True, _Buffer(Ref("constant", len(self.constants) - 1), length))
            return
        if name == "hal.allocator.allocate":
            if not initializer:
                raise Unsupported("an allocation in main outside the transient buffer")
            size = next(v for v in reversed(operands) if isinstance(v, int))
            self.constants.append(bytearray(size))  # a constant an initializer computes
            put(_Buffer(Ref("constant", len(self.constants) - 1), size))
            return
        if name == "hal.device.queue.alloca":
            # operands: device, affinity, wait, signal, pool, memory types, usage, size
            size = operands[7]
            if not initializer:
                raise Unsupported("an allocation in main outside the transient buffer")
            self.constants.append(bytearray(size))  # a constant the initializer fills
            put(_Buffer(Ref("constant", len(self.constants) - 1), size))
            return
        if name == "hal.device.queue.fill":
            # operands: device, affinity, wait, signal, target, offset, length, pattern
            target, offset, length, pattern = operands[4:8]
            width = iree_ir.IntegerType(op.operands[7].type).width // 8
            if not (initializer and target.ref.kind == "constant"):
                raise Unsupported("a queue fill in main")
            data = self.constants[target.ref.index]
            if not isinstance(data, bytearray):
                raise Unsupported("a fill of an imported constant")
            chunk = (pattern & ((1 << (8 * width)) - 1)).to_bytes(width, "little")
            at = target.offset + offset
            data[at:at + length] = (chunk * (length // width + 1))[:length]
            return
        if name == "hal.device.queue.copy" and not initializer:
            # operands: device, affinity, wait, signal, source, source offset, target, target
            # offset, length. IREE orders it by fences before the next execute; the launcher
            # runs every step in order on one stream, which keeps that order.
            source, source_offset, target, target_offset, length = operands[4:9]
            if not (isinstance(source, _Buffer) and isinstance(target, _Buffer)):
                raise Unsupported("a queue copy of something that is not a buffer")
            self.steps.append(Step("copy", target.ref, self.num("add", target.offset, target_offset), length,
                                   source.ref, self.num("add", source.offset, source_offset)))
            return
        if name == "hal.buffer_view.buffer":
            view = operands[0]
            if not (isinstance(view, tuple) and view[0] == "view"):
                raise Unsupported("a buffer of a view that is not an input")
            size = self.input_bytes[view[1]]
            if isinstance(size, tuple):  # a dynamic input: (shape with -1 where dynamic, bytes an element)
                shape, itemsize = size
                size = itemsize
                for axis, d in enumerate(shape):
                    size = self.num("mul", size, self.dim_node(view[1], axis) if d < 0 else d)
            put(_Buffer(Ref("input", view[1]), size))
            return
        if name == "hal.buffer.length":
            put(operands[0].size)
            return
        if name == "hal.buffer.subspan":
            buffer, offset, length = operands
            put(_Buffer(buffer.ref, length, self.num("add", buffer.offset, offset)))
            return
        if name == "hal.command_buffer.create":
            put(_Commands())
            return
        if name == "hal.command_buffer.fill_buffer":
            cmd, target, offset, length, pattern = operands
            width = iree_ir.IntegerType(op.operands[4].type).width // 8
            cmd.steps.append(("fill", target, offset, length, pattern & ((1 << (8 * width)) - 1), width))
            return
        if name == "hal.command_buffer.copy_buffer":
            cmd, source, source_offset, target, target_offset, length = operands
            cmd.steps.append(("copy", source, source_offset, target, target_offset, length))
            return
        if name == "hal.command_buffer.dispatch":
            seg = list(iree_ir.DenseI32ArrayAttr(op.attributes["operandSegmentSizes"]))
            values, at = operands, 0
            parts = []
            for size in seg:
                parts.append(values[at:at + size])
                at += size
            cmd, _, function, wx, wy, wz, constants, buffers, offsets, lengths = parts
            executable, kernel = function[0]
            grid = (wx[0], wy[0], wz[0])
            if any(not isinstance(g, (int, Sym)) for g in grid) or any(not isinstance(c, (int, Sym)) for c in constants):
                raise Unsupported("a dispatch whose grid or constants are not numbers")
            cmd[0].steps.append(("dispatch", executable, kernel, grid,
                                 [c & 0xFFFFFFFF if isinstance(c, int) else c for c in constants],
                                 list(zip(buffers, offsets, lengths))))
            return
        if name in ("hal.device.queue.execute", "hal.device.queue.execute.indirect"):
            # operands: device, affinity, wait fence, signal fence, command buffer[, the binding
            # table: buffers, offsets, lengths]
            cmd, table = operands[4], operands[5:]
            if not isinstance(cmd, _Commands):
                raise Unsupported("a queue execute of something that is not a recorded command buffer")
            n = len(table) // 3
            slots = [(table[i], table[n + i], table[2 * n + i]) for i in range(n)]
            self.steps.extend(self._resolve(cmd, slots))
            return
        if name == "util.call":
            callee = iree_ir.FlatSymbolRefAttr(op.attributes["callee"]).value
            funcs = [f for f in all_ops(self.module, "util.func")
                     if iree_ir.StringAttr(f.attributes["sym_name"]).value == callee]
            if not funcs or not len(funcs[0].regions[0].blocks):
                raise Unsupported(f"a call of @{callee}")
            inner = dict(zip(funcs[0].regions[0].blocks[0].arguments, operands))
            put(*self._run_region(funcs[0].regions[0], inner, initializer))
            return
        if name == "hal.buffer_view.create":
            # operands: buffer, offset, length, element type, encoding, then the shape
            buffer, offset, length = operands[0], operands[1], operands[2]
            put(_View(buffer, offset, length, list(operands[5:])))
            return
        if name == "hal.device.queue.read":
            raise Unsupported("a constant read from a file (its import failed)")
        raise Unsupported(f"op {name}")


    def _resolve(self, cmd: _Commands, slots: list) -> list[Step]:
        """A recorded command buffer's steps, with binding-table slots (indirect command
        buffers, which IREE memoizes) replaced by the buffers the execute passes."""

        def buffer(value, offset):
            if isinstance(value, int):  # a slot of the binding table
                if value >= len(slots):
                    raise Unsupported("a binding slot the execute does not fill")
                b, slot_offset, _ = slots[value]
                return b.ref, self.num("add", self.num("add", b.offset, slot_offset), offset)
            if not isinstance(value, _Buffer):
                raise Unsupported("a command on something that is not a buffer")
            return value.ref, self.num("add", value.offset, offset)

        steps = []
        for s in cmd.steps:
            if s[0] == "fill":
                _, target, offset, length, pattern, width = s
                ref, at = buffer(target, offset)
                steps.append(Step("fill", ref, at, length, pattern=pattern, pattern_bytes=width))
            elif s[0] == "copy":
                _, source, source_offset, target, target_offset, length = s
                sref, sat = buffer(source, source_offset)
                tref, tat = buffer(target, target_offset)
                steps.append(Step("copy", tref, tat, length, sref, sat))
            else:
                _, executable, kernel, grid, constants, bindings = s
                resolved = [(*buffer(b, o), n) for b, o, n in bindings]
                steps.append(Step("dispatch", executable=executable, kernel=kernel, grid=grid, constants=constants,
                                  bindings=resolved))
        return steps


_WIDTH = {"i1": 1, "i8": 1, "i16": 2, "i32": 4, "i64": 8, "f16": 2, "bf16": 2, "f32": 4, "f64": 8}


def _elements(shape) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def _type_bytes(text: str) -> int:
    found = re.match(r"(?:tensor|vector)<((?:\d+x)*)([a-z][a-z0-9]*)>", text.strip())
    if not found:
        raise Unsupported(f"constant element of type {text}")
    dims = [int(d) for d in found.group(1).split("x") if d]
    return _elements(dims) * _WIDTH[found.group(2)]


def transient_size(module_op, function: str = "main") -> int | str:
    """The constant transient-storage size IREE states in `function`'s reflection (0: none), or
    the name of the function that computes it from the inputs (a dynamic build)."""
    for f in all_ops(module_op, "util.func"):
        if iree_ir.StringAttr(f.attributes["sym_name"]).value != function or "iree.reflection" not in f.attributes:
            continue
        reflection = iree_ir.DictAttr(f.attributes["iree.reflection"])
        if "iree.abi.transients.size.constant" in reflection:
            return _int_attr(reflection["iree.abi.transients.size.constant"])
        if "iree.abi.transients.size" in reflection:
            return iree_ir.FlatSymbolRefAttr(reflection["iree.abi.transients.size"]).value
    return 0


def plan_or_reason(module_op, input_bytes: list, output_bytes: list, tied: dict | None = None) -> LaunchPlan | str:
    """The launch plan of a HAL-phase module, or why it has none. A dynamic input's entry is
    (shape with -1 where dynamic, bytes an element); a dynamic output's is None. tied: result ->
    input written in place (compile(inputs_in_place=True)): the result's Output is that input."""
    try:
        return plan_from_hal(module_op, input_bytes, output_bytes, transient_size(module_op), tied)
    except Unsupported as e:
        return str(e)


def plan_from_hal(module_op, input_bytes: list, output_bytes: list, transient_bytes: int | str,
                  tied: dict | None = None) -> LaunchPlan:
    """The launch plan of a HAL-phase module (Unsupported when it cannot have one). Its imported
    constants (the weights) are still to be read: bind_constants, once IREE's program exists."""
    resources = _Resources(module_op)  # weights are blobs there
    try:
        return _plan_from_hal(module_op, resources, input_bytes, output_bytes, transient_bytes, tied)
    except BaseException:
        resources.close()
        raise


def _plan_from_hal(module_op, resources: _Resources, input_bytes: list, output_bytes: list,
                   transient_bytes: int | str, tied: dict | None) -> LaunchPlan:
    interp = _Interpreter(module_op, resources, input_bytes, output_bytes, 0, tied)
    interp.run_initializers()
    if isinstance(transient_bytes, str):  # IREE's query function: its value, per input shape
        sizer = [f for f in all_ops(module_op, "util.func")
                 if iree_ir.StringAttr(f.attributes["sym_name"]).value == transient_bytes]
        if not sizer or not len(sizer[0].regions[0].blocks):
            raise Unsupported(f"the transient size function @{transient_bytes} is not in the program")
        env = {a: ("view", i) for i, a in enumerate(list(sizer[0].regions[0].blocks[0].arguments)[:len(input_bytes)])}
        (transient_bytes,) = interp._run_region(sizer[0].regions[0], env, initializer=False)
        if not isinstance(transient_bytes, (int, Sym)):
            raise Unsupported(f"@{transient_bytes} does not return a size")
    interp.transient_bytes = transient_bytes
    steps, outputs = interp.run_main()
    plan = LaunchPlan(interp.executables, [bytes(c) if isinstance(c, bytearray) else c for c in interp.constants],
                      steps, outputs, transient_bytes,
                      len(input_bytes), init_steps=interp.init_steps, exprs=interp.exprs, checks=interp.checks)
    try:
        plan.validate()
    except ValueError as e:
        raise Unsupported(str(e)) from None
    return plan
