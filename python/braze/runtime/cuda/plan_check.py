"""Checking a launch plan against IREE's own program: run the module's VM bytecode on the CPU
with a `hal` module that records instead of executing, and compare the HAL commands it issues
with the plan's steps.

compiler/cuda_plan.py makes the plan by interpreting IREE's HAL-phase MLIR. This module reads none of
that: it runs the bytecode in the .vmfb (the program iree.runtime runs on the GPU host), so a
plan that reads a weight where IREE binds the input, shifts an offset, or drops a step, differs
from what IREE's program does and is reported with the step, binding and numbers.

    diffs = check(vmfb, plan)                     # [] when the plan is IREE's program
    diffs = check(vmfb, plan, shapes=[[7, 48]])   # a dynamic build, at one call's input shapes
    rec = record(vmfb, shapes)                    # IREE's commands: rec.init, rec.main, rec.outputs

Compared, in order: the load-time steps (initializers) and main's steps, one for one: fill
(buffer, offset, length, pattern), copy (both buffers, offsets, length) and dispatch (kernel
name, the executable whose PTX holds it, grid, push constants, and each binding's buffer,
offset and length); then the results (buffer, offset, bytes, shape) and the transient size.
IREE's buffers map to the plan's Refs by what they are: main's arguments (input i, output i,
the transient buffer) and, for constants, the imported bytes (or, for a buffer an initializer
allocates, its size and fill); the mapping must be one to one. Execution barriers are not
compared: the launcher runs every step in order on one stream, which is one of the orders
IREE's barriers allow.

How the program runs. iree.runtime cannot host a recording `hal`: PyModuleInterface refuses
variadic calling conventions ("PyModules do not yet support variadic arguments/results",
IREE 3.13), and hal.command_buffer.dispatch, hal.buffer_view.create/assert and
hal.fence.await are variadic; a VmContext resolves `hal.*` to one module, so the real HAL
module cannot serve the rest (and the CPU devices refuse a CUDA executable anyway). So this
module interprets the bytecode itself, from the disassembly of IREE's own `iree-dump-module`
(shipped in iree.runtime's wheel, so this runs wherever the runtime is installed): register
files of 32-bit words and refs, IREE's calling convention for imports (by each import's
cconv, variadic segments included) and for internal calls (word for word), block arguments,
yieldable calls. The callee of an internal call is read from the bytecode at the offset the
disassembly gives (names of internal functions are not unique there). An op this interpreter
does not know, or a HAL call it does not model, is an error that names it, never a skip.
"""

from __future__ import annotations

import fnmatch
import os
import re
import shutil
import struct
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from braze.runtime.cuda.plan import FlatbufferTable, LaunchPlan, Ref, split_top


class ReplayError(Exception):
    """IREE's program could not be replayed (an op or HAL call this module does not model, a
    vm.fail, a malformed module)."""


# ---------------------------------------------------------------------------------------
# The .vmfb: a zip archive holding a size-prefixed flatbuffer (BytecodeModuleDef,
# runtime/src/iree/schemas/bytecode_module_def.fbs), then external rodata at the next
# 64-byte boundary (iree_vm_bytecode_archive_parse_header).

_ALIGNMENT = 64
# BytecodeModuleDef fields
_IMPORTS, _EXPORTS, _SIGNATURES, _RODATA, _DESCRIPTORS, _BYTECODE = 6, 7, 8, 9, 12, 14


@dataclass
class _Module:
    data: bytes
    imports: list[tuple[str, str]]
    """(full name, cconv) per import ordinal."""
    exports: dict[str, int]
    """export name -> internal function ordinal."""
    signatures: list[tuple[str, dict]]
    """(cconv, attributes) per internal function."""
    rodata: list[memoryview]
    code: list[memoryview]
    """each internal function's bytecode."""
    rodata_lengths: list[tuple[int, str]] = field(default_factory=list)
    """(file offset, struct format) of each rodata segment's length: `_without_rodata` zeroes them."""


def _read_module(data: bytes) -> _Module:
    start = 0
    if data[:4] == b"PK\x03\x04":
        name_len, extra_len = struct.unpack_from("<HH", data, 26)
        start = 30 + name_len + extra_len
    size = struct.unpack_from("<I", data, start)[0]
    fb_start = start + 4
    if data[fb_start + 4:fb_start + 8] != b"IREE" or fb_start + size > len(data):
        raise ReplayError("not an IREE VM module (no IREE flatbuffer)")
    buf = memoryview(data)[fb_start:fb_start + size]
    rodata_base = -(-(fb_start + size) // _ALIGNMENT) * _ALIGNMENT
    root = FlatbufferTable(buf, struct.unpack_from("<I", buf, 0)[0])

    def cconv_and_attrs(sig):
        if sig is None:
            return "", {}
        return sig.string(0), {a.string(0): a.string(1) for a in sig.tables(1)}

    imports = [(t.string(0), cconv_and_attrs(t.table(1))[0]) for t in root.tables(_IMPORTS)]
    exports = {t.string(0): t.scalar(1, "i") for t in root.tables(_EXPORTS)}
    signatures = [cconv_and_attrs(t) for t in root.tables(_SIGNATURES)]
    rodata, lengths = [], []
    for seg in root.tables(_RODATA):  # compression union (2 slots), embedded_data, external offset, length
        s, n = seg.vector(2)
        if seg._field(2) is not None:
            rodata.append(buf[s:s + n])
            lengths.append((fb_start + s - 4, "<I"))
        else:
            at, length = rodata_base + seg.scalar(3, "Q"), seg.scalar(4, "Q")
            rodata.append(memoryview(data)[at:at + length])
            if seg._field(4) is not None:
                lengths.append((fb_start + seg._field(4), "<Q"))
    code_start, _ = root.vector(_BYTECODE)
    d_start, d_count = root.vector(_DESCRIPTORS)
    code = []
    for k in range(d_count):  # struct FunctionDescriptor: offset i32, length i32, 4 x i16, 2 x i16 ...
        off, length = struct.unpack_from("<ii", buf, d_start + 20 * k)
        code.append(buf[code_start + off:code_start + off + length])
    return _Module(data, imports, exports, signatures, rodata, code, lengths)


def _without_rodata(module: _Module) -> bytes:
    """The module with every rodata segment emptied: the disassembly prints each segment in
    hex (57 MB of text for a 28 MB BERT layer), and the interpreter reads rodata from the
    module itself."""
    out = bytearray(module.data)
    for at, fmt in module.rodata_lengths:
        struct.pack_into(fmt, out, at, 0)
    return bytes(out)


def _dump_tool() -> str:
    import iree.runtime

    here = Path(iree.runtime.__file__).resolve().parent.parent / "_runtime_libs" / "iree-dump-module"
    if here.exists():
        return str(here)
    found = shutil.which("iree-dump-module")
    if not found:
        raise ReplayError("iree-dump-module not found (it ships with iree-base-runtime)")
    return found


def _disassemble(data: bytes) -> str:
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "module.vmfb")
        with open(path, "wb") as f:
            f.write(data)
        done = subprocess.run([_dump_tool(), "--output=disassembly", "--bytecode_offsets", path],
                              check=False, capture_output=True, text=True)
    if done.returncode != 0:
        raise ReplayError(f"iree-dump-module failed: {done.stderr.strip()[:500]}")
    return done.stdout


# ---------------------------------------------------------------------------------------
# The disassembly, parsed into functions of blocks of instructions.

@dataclass
class _Function:
    name: str
    blocks: dict[str, int] = field(default_factory=dict)
    """block label -> index of its first instruction."""
    code: list[tuple[int, str]] = field(default_factory=list)
    """(bytecode offset, text) per instruction."""


_LINE = re.compile(r"^\[([0-9A-F]{8})\](.*)$")


def _functions(text: str) -> list[_Function]:
    funcs: list[_Function] = []
    current = None
    for line in text.splitlines():
        if line.startswith("vm.func @"):
            current = _Function(line[len("vm.func @"):line.index("(")])
            funcs.append(current)
            continue
        if current is None:
            continue
        if line.startswith("}"):
            current = None
            continue
        m = _LINE.match(line)
        if not m:
            continue
        body = m.group(2).strip()
        if body.startswith("^bb") and body.endswith(":"):
            current.blocks[body[:-1]] = len(current.code)
        else:
            current.code.append((int(m.group(1), 16), body))
    return funcs




_TOKEN = re.compile(r"%([irR])(\d+)(:\d+)?")


def _reg(token: str):
    """('i', n, wide) | ('r', n, move)."""
    token = token.strip()
    m = _TOKEN.fullmatch(token)
    if not m:
        raise ReplayError(f"not a register: {token!r}")
    kind, n = m.group(1), int(m.group(2))
    if kind == "i":
        return ("i", n, m.group(3) is not None)
    return ("r", n, kind == "R")


def _regs(text: str) -> list:
    text = text.strip()
    return [_reg(t) for t in text.split(",")] if text else []


def _cconv(cconv: str) -> tuple[list, str]:
    """('0rIiCiD_r') -> ([arg types, a variadic span as a list], results)."""
    if not cconv.startswith("0"):
        raise ReplayError(f"calling convention {cconv!r}")
    args_text, _, results = cconv[1:].partition("_")
    args, i = [], 0
    while i < len(args_text):
        ch = args_text[i]
        if ch == "C":
            end = args_text.index("D", i)
            args.append(list(args_text[i + 1:end]))
            i = end + 1
        else:
            if ch != "v":
                args.append(ch)
            i += 1
    return args, results.replace("v", "")


# ---------------------------------------------------------------------------------------
# The recording HAL: objects the program holds refs to.

@dataclass(eq=False)
class Root:
    """A buffer IREE's program allocates or is given: kind 'input' | 'output' | 'transient' |
    'import' (constant bytes) | 'alloc' (an initializer's allocation); data for those two."""

    kind: str
    index: int = 0
    size: int | None = None
    data: bytearray | bytes | None = None

    def __repr__(self):
        return "transient" if self.kind == "transient" else f"{self.kind}{self.index}"


@dataclass(eq=False)
class Buffer:
    root: Root
    offset: int
    length: int | None


@dataclass(eq=False)
class View:
    buffer: Buffer
    shape: list[int]
    element_type: int = 0


@dataclass(eq=False)
class Executable:
    data: bytes
    format: str


@dataclass(eq=False)
class CommandBuffer:
    commands: list = field(default_factory=list)


@dataclass(eq=False)
class _Token:
    what: str


@dataclass
class Command:
    """One HAL command as IREE's program issued it, binding-table slots resolved.
    ranges: (root, offset, length) per buffer the command touches: for a dispatch its
    bindings in order, for a fill its target, for a copy source then target."""

    op: str
    ranges: list
    kernel: str = ""
    executable: Executable | None = None
    grid: tuple = ()
    constants: list = field(default_factory=list)
    pattern: int = 0
    pattern_bytes: int = 0


@dataclass
class Recording:
    """IREE's program for one call: load-time commands, main's, and main's results."""

    init: list[Command]
    main: list[Command]
    outputs: list[tuple[Root, int, int, list]]
    """(root, offset, bytes, shape) per result."""
    transient_bytes: int
    inputs: list[Root]
    constants: list[Root]
    queue_ops: list[str]
    """Queue operations other than execute, by phase and name (main must have none)."""


_ELEMENT_BITS = {"f16": 16, "bf16": 16, "f32": 32, "f64": 64, "i1": 8, "i8": 8, "i16": 16, "i32": 32,
                 "i64": 64, "ui8": 8, "si8": 8, "ui16": 16, "ui32": 32, "ui64": 64, "f8E4M3FN": 8, "f8E5M2": 8}


class _Hal:
    """The `hal` module's functions the program calls, recording commands; a function not
    here is a ReplayError naming it."""

    def __init__(self):
        self.device = _Token("device")
        self.allocator = _Token("allocator")
        self.functions: list[tuple[Executable, str]] = []
        self.phase = "init"
        self.commands = {"init": [], "main": []}
        self.queue_ops: list[str] = []
        self.constants: list[Root] = []

    # -- devices and queries
    def devices_count(self):
        return 1

    def devices_get(self, i):
        return self.device

    def device_allocator(self, device):
        return self.allocator

    def device_query_i64(self, device, category, key):
        category, key = bytes(category).decode(), bytes(key).decode()
        if category == "hal.device.id":
            return 1, int(fnmatch.fnmatch("cuda", key))
        if category == "hal.executable.format":
            return 1, int(key == "cuda-nvptx-fb")
        raise ReplayError(f"device query {category}::{key} (the replay answers only device id and "
                          "executable format)")

    # -- executables
    def executable_create(self, device, affinity, fmt, data, constants):
        if constants is not None:
            raise ReplayError("an executable created with constants")
        return Executable(bytes(data), bytes(fmt).decode())

    def executable_lookup_function(self, executable, name):
        self.functions.append((executable, bytes(name).decode()))
        return len(self.functions) - 1

    # -- buffers
    def allocator_import(self, allocator, is_try, affinity, memory_types, usage, source, offset, length):
        data = bytes(source)
        if length == -1 or length == (1 << 64) - 1:
            length = len(data) - offset
        root = Root("import", len(self.constants), length, data[offset:offset + length])
        self.constants.append(root)
        return Buffer(root, 0, length)

    def _allocate(self, size):
        if self.phase != "init":
            raise ReplayError("an allocation in main (the launch plan has one transient buffer)")
        root = Root("alloc", len(self.constants), size, bytearray(size))
        self.constants.append(root)
        return Buffer(root, 0, size)

    def allocator_allocate(self, allocator, affinity, memory_types, usage, size):
        return self._allocate(size)

    def device_queue_alloca(self, device, affinity, wait, signal, pool, memory_types, usage, size, flags):
        self.queue_ops.append(f"{self.phase}: queue.alloca")
        return self._allocate(size)

    def device_queue_dealloca(self, device, affinity, wait, signal, buffer, flags):
        self.queue_ops.append(f"{self.phase}: queue.dealloca")

    def device_queue_fill(self, device, affinity, wait, signal, target, offset, length, pattern, pattern_length,
                          flags):
        self.queue_ops.append(f"{self.phase}: queue.fill")
        root = target.root
        if root.kind != "alloc":
            raise ReplayError(f"a queue fill of {root}")
        chunk = (pattern & ((1 << (8 * pattern_length)) - 1)).to_bytes(pattern_length, "little")
        at = target.offset + offset
        root.data[at:at + length] = (chunk * (length // pattern_length + 1))[:length]

    def device_queue_copy(self, device, affinity, wait, signal, source, source_offset, target, target_offset, length,
                          flags):
        if self.phase == "main":  # a copy step of main, in order with its executes (as the launcher runs it)
            self.commands["main"].append(Command("copy", [(source.root, source.offset + source_offset, length),
                                                          (target.root, target.offset + target_offset, length)]))
            return
        self.queue_ops.append(f"{self.phase}: queue.copy")
        if target.root.kind != "alloc" or source.root.data is None:
            raise ReplayError(f"a queue copy from {source.root} to {target.root}")
        at, src = target.offset + target_offset, source.offset + source_offset
        target.root.data[at:at + length] = source.root.data[src:src + length]

    def buffer_assert(self, buffer, message, allocator, minimum_length, memory_types, usage):
        root = buffer.root
        if buffer.length is None:  # an output buffer: IREE's program says how large
            buffer.length = root.size = minimum_length
        elif buffer.length < minimum_length:
            raise ReplayError(f"hal.buffer.assert: {bytes(message).decode()} has {buffer.length} bytes, the program "
                              f"needs {minimum_length}")

    def buffer_length(self, buffer):
        if buffer.length is None:
            raise ReplayError(f"the length of {buffer.root} before the program states it")
        return buffer.length

    def buffer_subspan(self, buffer, offset, length):
        return Buffer(buffer.root, buffer.offset + offset, length)

    def buffer_view_create(self, buffer, offset, length, element_type, encoding, shape):
        return View(Buffer(buffer.root, buffer.offset + offset, length), list(shape), element_type)

    def buffer_view_assert(self, view, message, element_type, encoding, shape):
        if list(shape) != view.shape:
            raise ReplayError(f"hal.buffer_view.assert: {bytes(message).decode()} has shape {view.shape}, the "
                              f"program needs {list(shape)}")
        view.element_type = element_type

    def buffer_view_buffer(self, view):
        return view.buffer

    def buffer_view_dim(self, view, i):
        return view.shape[i]

    def buffer_view_rank(self, view):
        return len(view.shape)

    # -- command buffers and queues
    def command_buffer_create(self, device, mode, categories, affinity, binding_capacity):
        return CommandBuffer()

    def command_buffer_finalize(self, cb):
        pass

    def command_buffer_execution_barrier(self, cb, source_stage, target_stage, flags):
        cb.commands.append(("barrier",))

    def command_buffer_begin_debug_group(self, cb, label):
        pass

    def command_buffer_end_debug_group(self, cb):
        pass

    def command_buffer_fill_buffer(self, cb, target, offset, length, slot, pattern, pattern_length, flags):
        cb.commands.append(("fill", (target, slot, offset, length), pattern, pattern_length))

    def command_buffer_copy_buffer(self, cb, source_slot, target_slot, source, source_offset, target, target_offset,
                                   length, flags):
        cb.commands.append(("copy", (source, source_slot, source_offset, length),
                            (target, target_slot, target_offset, length)))

    def command_buffer_dispatch(self, cb, executable, function, x, y, z, flags, constants, bindings):
        exe, name = self.functions[function]
        if exe is not executable:
            raise ReplayError(f"a dispatch of function {name} with another executable")
        cb.commands.append(("dispatch", executable, name, (x, y, z), list(constants),
                            [(buffer, slot, offset, length) for _, slot, buffer, offset, length in bindings]))

    def device_queue_execute(self, device, affinity, wait, signal, cb, flags):
        self._execute(cb, [])

    def device_queue_execute_indirect(self, device, affinity, wait, signal, cb, flags, table):
        self._execute(cb, list(table))

    def _execute(self, cb, table):
        def resolve(ref):
            buffer, slot, offset, length = ref
            if buffer is None:
                if slot >= len(table):
                    raise ReplayError(f"binding-table slot {slot} of {len(table)}")
                buffer, slot_offset, _ = table[slot]
                buffer = Buffer(buffer.root, buffer.offset + slot_offset, None)
            return (buffer.root, buffer.offset + offset, length)

        out = self.commands[self.phase]
        for c in cb.commands:
            if c[0] == "fill":
                out.append(Command("fill", [resolve(c[1])], pattern=c[2], pattern_bytes=c[3]))
            elif c[0] == "copy":
                out.append(Command("copy", [resolve(c[1]), resolve(c[2])]))
            elif c[0] == "dispatch":
                _, exe, name, grid, constants, bindings = c
                out.append(Command("dispatch", [resolve(b) for b in bindings], kernel=name, executable=exe,
                                   grid=grid, constants=constants))

    # -- fences and files
    def fence_create(self, device, flags):
        return _Token("fence")

    def fence_join(self, flags, fences):
        return _Token("fence")

    def fence_await(self, timeout, flags, fences):
        return 0

    def fence_signal(self, fence):
        pass

    def ex_file_from_memory(self, device, affinity, access, buffer, offset, length, flags):
        raise ReplayError("a constant read from a file (the replay's import never fails, so IREE's "
                          "program took a path it takes only when the import fails)")


# ---------------------------------------------------------------------------------------
# The interpreter.

_M32, _M64 = (1 << 32) - 1, (1 << 64) - 1


def _s32(v):
    v &= _M32
    return v - (1 << 32) if v >> 31 else v


def _s64(v):
    v &= _M64
    return v - (1 << 64) if v >> 63 else v


def _tdiv(a, b):
    if b == 0:
        raise ReplayError("integer division by zero in IREE's program")
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


_BINARY = {
    "add": lambda a, b, s, u: a + b, "sub": lambda a, b, s, u: a - b, "mul": lambda a, b, s, u: a * b,
    "and": lambda a, b, s, u: a & b, "or": lambda a, b, s, u: a | b, "xor": lambda a, b, s, u: a ^ b,
    "div.s": lambda a, b, s, u: _tdiv(s(a), s(b)), "div.u": lambda a, b, s, u: _tdiv(u(a), u(b)),
    "rem.s": lambda a, b, s, u: s(a) - _tdiv(s(a), s(b)) * s(b),
    "rem.u": lambda a, b, s, u: u(a) - _tdiv(u(a), u(b)) * u(b),
    "min.s": lambda a, b, s, u: min(s(a), s(b)), "min.u": lambda a, b, s, u: min(u(a), u(b)),
    "max.s": lambda a, b, s, u: max(s(a), s(b)), "max.u": lambda a, b, s, u: max(u(a), u(b)),
}
_CMP = {"eq": lambda a, b: a == b, "ne": lambda a, b: a != b, "lt": lambda a, b: a < b, "lte": lambda a, b: a <= b}


class _Frame:
    def __init__(self, func: _Function, ordinal: int):
        self.func, self.ordinal = func, ordinal
        self.i32: dict[int, int] = {}
        self.ref: dict[int, object] = {}

    def word(self, n):
        return self.i32.get(n, 0)

    def get(self, reg, wide=None):
        kind, n, flag = reg
        if kind == "r":
            return self.ref.get(n)
        if wide if wide is not None else flag:
            return self.word(n) | (self.word(n + 1) << 32)
        return self.word(n)

    def set(self, reg, value, wide=None):
        kind, n, flag = reg
        if kind == "r":
            self.ref[n] = value
        elif wide if wide is not None else flag:
            value &= _M64
            self.i32[n], self.i32[n + 1] = value & _M32, value >> 32
        else:
            self.i32[n] = int(value) & _M32

    def release_moves(self, regs):
        for reg in regs:
            if reg[0] == "r" and reg[2]:
                self.ref.pop(reg[1], None)


class _Interpreter:
    def __init__(self, module: _Module, funcs: list[_Function], hal: _Hal):
        self.module, self.funcs, self.hal = module, funcs, hal
        if len(funcs) != len(module.code):
            raise ReplayError(f"the disassembly has {len(funcs)} functions, the module {len(module.code)}")
        self.globals_ref: dict[int, object] = {}
        self.globals_data: dict[tuple[int, int], int] = {}
        self.steps = 0

    # -- calls
    def call_export(self, name: str, args: list):
        ordinal = self.module.exports.get(name)
        if ordinal is None:
            raise ReplayError(f"the module exports no function {name}")
        cconv, _ = self.module.signatures[ordinal]
        arg_types, results = _cconv(cconv)
        frame = _Frame(self.funcs[ordinal], ordinal)
        i32 = refs = 0
        for t, value in zip(arg_types, args):
            if t == "r":
                frame.ref[refs] = value
                refs += 1
            elif t == "I":
                i32 += i32 % 2
                frame.set(("i", i32, True), value)
                i32 += 2
            else:
                frame.set(("i", i32, False), value)
                i32 += 1
        returned = self.run(frame)
        return [ref if t == "r" else (word if t == "i" else wide) for t, (word, ref, wide) in zip(results, returned)]

    def run(self, frame: _Frame):
        """Runs `frame` to its return: the returned registers' values as (i32, ref, i64) triples."""
        code, pc = frame.func.code, 0
        while True:
            self.steps += 1
            if self.steps > 2_000_000:
                raise ReplayError("the program runs too long (a loop?)")
            if pc >= len(code):
                raise ReplayError(f"fell off the end of @{frame.func.name}")
            offset, text = code[pc]
            jump = self.step(frame, offset, text)
            if jump is None:
                pc += 1
            elif jump[0] == "return":
                return jump[1]
            else:
                pc = frame.func.blocks[jump[1]]

    def _remap(self, frame: _Frame, text: str):
        """Block arguments: all read, then moved refs released, then all written (word for word)."""
        pairs = [[_reg(r) for r in p.split("->")] for p in split_top(text, "([", ")]") if p]
        values = [frame.get(src, False) for src, _ in pairs]
        frame.release_moves([src for src, _ in pairs])
        for (_, dst), value in zip(pairs, values):
            frame.set(dst, value, False)

    def _branch(self, frame, target: str):
        m = re.fullmatch(r"(\^bb\d+)\((.*)\)", target.strip())
        if not m:
            raise ReplayError(f"a branch target {target!r}")
        self._remap(frame, m.group(2))
        return ("jump", m.group(1))

    def step(self, frame: _Frame, offset: int, text: str):
        results, _, rhs = text.partition(" = vm.") if " = vm." in text.split("(")[0] else ("", "", text[3:])
        op, _, rest = rhs.partition(" ")
        dst = _regs(results) if results else []
        g = frame.get

        if op == "call" or op == "call.variadic" or op == "call.yieldable" or op == "call.variadic.yieldable":
            return self.call(frame, offset, op, rest, dst)
        if op == "br":
            return self._branch(frame, rest)
        if op == "cond_br":
            cond, _, targets = rest.partition(", ")
            true_t, false_t = split_top(targets, "([", ")]")
            return self._branch(frame, true_t if g(_reg(cond)) else false_t)
        if op == "br_table":
            m = re.fullmatch(r"(%i\d+) \{ default: (.*) \}", rest)
            index = _s32(g(_reg(m.group(1))))
            cases = split_top(m.group(2), "([", ")]")
            chosen = cases[0]
            for case in cases[1:]:
                k, _, target = case.partition(": ")
                if int(k) == index:
                    chosen = target
            return self._branch(frame, chosen)
        if op == "return":
            return ("return", [(None, frame.ref.get(r[1]), None) if r[0] == "r" else
                               (frame.word(r[1]), None, frame.get(r, True)) for r in _regs(rest)])
        if op == "fail":
            code, _, message = rest.partition(", ")
            raise ReplayError(f"IREE's program failed (vm.fail {_s32(g(_reg(code)))}): {message.strip(chr(34))}")
        if op == "discard.refs":
            for r in _regs(rest):
                frame.ref.pop(r[1], None)
            return None
        if op in ("const.i32", "const.i64"):
            frame.set(dst[0], int(rest.split()[0]))
            return None
        if op in ("const.i32.zero", "const.i64.zero"):
            frame.set(dst[0], 0)
            return None
        if op == "const.ref.zero":
            frame.set(dst[0], None)
            return None
        if op == "const.ref.rodata":
            frame.set(dst[0], self.module.rodata[int(rest.split()[0])])
            return None
        if op == "global.load.ref":
            frame.set(dst[0], self.globals_ref.get(int(re.match(r"\.refs\[(\d+)\]", rest).group(1))))
            return None
        if op == "global.store.ref":
            value, _, where = rest.partition(", ")
            frame_value = g(_reg(value))
            frame.release_moves([_reg(value)])
            self.globals_ref[int(re.match(r"\.refs\[(\d+)\]", where).group(1))] = frame_value
            return None
        m = re.fullmatch(r"global\.(load|store)\.(i32|i64)", op)
        if m:
            wide = m.group(2) == "i64"
            if m.group(1) == "load":
                at = int(re.match(r"\.rwdata\[(\d+)\]", rest).group(1))
                frame.set(dst[0], self.globals_data.get((at, wide), 0), wide)
            else:
                value, _, where = rest.partition(", ")
                at = int(re.match(r"\.rwdata\[(\d+)\]", where).group(1))
                self.globals_data[(at, wide)] = g(_reg(value), wide)
            return None
        if op.startswith("select."):
            m = re.fullmatch(r"(%\w+) \? (%[\w:]+) : (%[\w:]+)(?: -> .*)?", rest)
            chosen = _reg(m.group(2)) if g(_reg(m.group(1))) else _reg(m.group(3))
            value = g(chosen)
            frame.release_moves([_reg(m.group(2)), _reg(m.group(3))])
            frame.set(dst[0], value)
            return None
        m = re.fullmatch(r"cmp\.(eq|ne|nz)\.ref", op)
        if m:
            regs = _regs(rest)
            if m.group(1) == "nz":
                value = g(regs[0]) is not None
            else:
                same = g(regs[0]) is g(regs[1])
                value = same if m.group(1) == "eq" else not same
            frame.set(dst[0], int(value))
            return None
        m = re.fullmatch(r"cmp\.nz\.(i32|i64)", op)
        if m:
            frame.set(dst[0], int(g(_regs(rest)[0]) != 0))
            return None
        m = re.fullmatch(r"cmp\.(eq|ne|lt|lte)\.(i32|i64)(?:\.([su]))?", op)
        if m:
            a, b = (g(r) for r in _regs(rest))
            sign = _s64 if m.group(2) == "i64" else _s32
            if m.group(3) != "u":
                a, b = sign(a), sign(b)
            frame.set(dst[0], int(_CMP[m.group(1)](a, b)))
            return None
        m = re.fullmatch(r"(add|sub|mul|and|or|xor|div|rem|min|max)\.(i32|i64)(?:\.([su]))?", op)
        if m:
            name = m.group(1) + (f".{m.group(3)}" if m.group(3) else "")
            wide = m.group(2) == "i64"
            s, mask = (_s64, _M64) if wide else (_s32, _M32)
            a, b = (g(r) for r in _regs(rest))
            frame.set(dst[0], _BINARY[name](a, b, s, lambda v: v & mask) & mask)
            return None
        m = re.fullmatch(r"fma\.(i32|i64)", op)
        if m:
            a, b, c = (g(r) for r in _regs(rest))
            frame.set(dst[0], a * b + c)
            return None
        m = re.fullmatch(r"not\.(i32|i64)", op)
        if m:
            frame.set(dst[0], ~g(_regs(rest)[0]))
            return None
        m = re.fullmatch(r"(shl|shr)\.(i32|i64)(?:\.([su]))?", op)
        if m:
            value, amount = _regs(rest)
            v, k = g(value), g(amount) & (63 if m.group(2) == "i64" else 31)
            if m.group(1) == "shl":
                result = v << k
            else:
                result = ((_s64(v) if m.group(2) == "i64" else _s32(v)) if m.group(3) == "s" else v) >> k
            frame.set(dst[0], result)
            return None
        if op == "trunc.i64.i32":
            frame.set(dst[0], g(_regs(rest)[0]) & _M32)
            return None
        m = re.fullmatch(r"trunc\.i32\.i(8|16)", op)
        if m:
            frame.set(dst[0], g(_regs(rest)[0]) & ((1 << int(m.group(1))) - 1))
            return None
        m = re.fullmatch(r"ext\.i(8|16|32)\.i(32|64)\.([su])", op)
        if m:
            bits = int(m.group(1))
            v = g(_regs(rest)[0]) & ((1 << bits) - 1)
            if m.group(3) == "s" and v >> (bits - 1):
                v -= 1 << bits
            frame.set(dst[0], v)
            return None
        raise ReplayError(f"VM op vm.{op} (in @{frame.func.name}: {text[:120]})")

    def call(self, frame: _Frame, offset: int, op: str, rest: str, dst: list):
        m = re.fullmatch(r"@([\w.:$-]+)(?: segments\[([\d, ]*)\])?\((.*?)\)(?: -> (\^bb\d+)\((.*)\))?", rest)
        if not m:
            raise ReplayError(f"a call {rest[:120]!r}")
        callee, segments, operands, resume, yielded = m.groups()
        if resume:
            dst = _regs(yielded)
        args = _regs(operands)
        code = self.module.code[frame.ordinal]
        ordinal = struct.unpack_from("<I", code, offset + 1)[0]  # the opcode byte, then the callee
        if ordinal & 0x80000000:
            name, cconv = self.module.imports[ordinal & 0x7FFFFFFF]
            if name != callee:
                raise ReplayError(f"the bytecode at {offset:#x} of @{frame.func.name} calls {name}, the "
                                  f"disassembly says {callee}")
            values = self._import_args(frame, cconv, args, segments)
            frame.release_moves(args)
            results = self.import_call(name, values)
            _, result_types = _cconv(cconv)
            if len(result_types) == 1:
                results = [results]
            if len(dst) != len(result_types):
                raise ReplayError(f"a call of {name} into {len(dst)} registers; it returns {len(result_types)}")
            for t, reg, value in zip(result_types, dst, results or []):
                frame.set(reg, value, t == "I")
        else:
            if ordinal >= len(self.funcs) or callee.rpartition(".")[2] not in (self.funcs[ordinal].name, "") \
                    and not callee.endswith(f":{ordinal}"):
                raise ReplayError(f"the bytecode at {offset:#x} of @{frame.func.name} calls function {ordinal}, "
                                  f"the disassembly says {callee}")
            callee_frame = _Frame(self.funcs[ordinal], ordinal)
            i32 = refs = 0
            for reg in args:  # word for word (an i64 is listed as its two halves)
                if reg[0] == "r":
                    callee_frame.ref[refs] = frame.ref.get(reg[1])
                    refs += 1
                else:
                    callee_frame.i32[i32] = frame.word(reg[1])
                    i32 += 1
            frame.release_moves(args)
            returned = self.run(callee_frame)
            for reg, (word, ref, _) in zip(dst, returned):
                if reg[0] == "r":
                    frame.ref[reg[1]] = ref
                else:
                    frame.i32[reg[1]] = word
        return ("jump", resume) if resume else None

    def _import_args(self, frame, cconv, args, segments):
        types, _ = _cconv(cconv)
        sizes = [int(s) for s in segments.split(",")] if segments else [0xFFFF] * len(types)
        values, at = [], 0

        def one(t):
            nonlocal at
            reg = args[at]
            at += 1
            return frame.get(reg) if t == "r" else frame.get(reg, t == "I")

        for t, size in zip(types, sizes):
            if isinstance(t, list):
                values.append([one(t[0]) if len(t) == 1 else tuple(one(x) for x in t) for _ in range(size)])
            else:
                values.append(one(t))
        if at != len(args):
            raise ReplayError(f"a call passes {len(args)} registers, its calling convention {cconv} takes {at}")
        return values

    def import_call(self, name: str, values: list):
        module, _, fn = name.partition(".")
        handler = getattr(self.hal, fn.replace(".", "_"), None) if module == "hal" else None
        if handler is None:
            raise ReplayError(f"the replay does not model {name}")
        return handler(*values)


# ---------------------------------------------------------------------------------------
# Recording and comparing.

def _tensor_type(text: str) -> tuple[list, int]:
    """'tensor<4x?xf32>' -> ([4, None], 4 bytes an element)."""
    m = re.match(r"tensor<(.*)>$", text)
    if not m:
        raise ReplayError(f"main takes a {text}, not a tensor")
    parts = m.group(1).split(",")[0].split("x")
    bits = _ELEMENT_BITS.get(parts[-1])
    if bits is None:
        raise ReplayError(f"element type {parts[-1]}")
    return [None if d == "?" else int(d) for d in parts[:-1]], bits // 8


def _arguments(module: _Module) -> list[tuple[str, object]]:
    """main's arguments from IREE's ABI declaration: ('input', (dims, element bytes)) |
    ('output', None) | ('transient', None)."""
    ordinal = module.exports.get("main")
    if ordinal is None:
        raise ReplayError("the module exports no main")
    cconv, attrs = module.signatures[ordinal]
    decl = attrs.get("iree.abi.declaration", "")
    m = re.search(r"@main\((.*)\) ->", decl) or re.search(r"@main\((.*)\)", decl)
    if not m:
        raise ReplayError(f"main has no ABI declaration IREE's reflection names ({decl!r})")
    out = []
    for part in (p for p in split_top(m.group(1)) if p):  # types nest <>, () and {}
        _, _, type_text = part.partition(": ")
        if "iree.abi.transients" in type_text:
            out.append(("transient", None))
        elif type_text.startswith("!hal.buffer"):
            out.append(("output", None))
        else:
            out.append(("input", _tensor_type(type_text.split(" {")[0].strip())))
    if len(out) != len(_cconv(cconv)[0]):
        raise ReplayError(f"main's declaration '{decl}' does not match its calling convention {cconv}")
    return out


def record(vmfb: bytes, shapes: list | None = None) -> Recording:
    """IREE's HAL commands for one call of main (and the initializers before it) with inputs of
    `shapes` (needed where a dimension is dynamic; the declared shapes otherwise)."""
    module = _read_module(bytes(vmfb))
    hal = _Hal()
    interp = _Interpreter(module, _functions(_disassemble(_without_rodata(module))), hal)
    if "__init" in module.exports:
        interp.call_export("__init", [])
    kinds = _arguments(module)
    inputs = [(k, t) for k, t in kinds if k == "input"]
    if shapes is None:
        shapes = []
        for _, (dims, _) in inputs:
            if None in dims:
                raise ReplayError(f"an input has a dynamic dimension ({dims}): pass the call's shapes")
            shapes.append(dims)
    if len(shapes) != len(inputs):
        raise ReplayError(f"main takes {len(inputs)} tensors, {len(shapes)} shapes given")
    # An input tied to a result (`{iree.abi.output = N}`) holds that result: the output
    # arguments are the other results', in order.
    decl = module.signatures[module.exports["main"]][1].get("iree.abi.declaration", "")
    tied = {int(n) for n in re.findall(r"iree\.abi\.output = (\d+)", decl)}
    untied = iter(i for i in range(len(kinds) + len(tied)) if i not in tied)
    views, roots, n_in, n_out = [], [], 0, 0
    for kind, t in kinds:
        if kind == "input":
            shape, size = [int(d) for d in shapes[n_in]], t[1]
            for d in shape:
                size *= d
            root = Root("input", n_in, size)
            roots.append(root)
            views.append(View(Buffer(root, 0, size), shape))
            n_in += 1
        elif kind == "output":
            views.append(Buffer(Root("output", next(untied)), 0, None))
            n_out += 1
        else:
            views.append(None)  # the transient buffer, sized below
    transient = 0
    sizer = module.signatures[module.exports["main"]][1].get("iree.abi.transients.size")
    if any(k == "transient" for k, _ in kinds):
        if sizer not in module.exports:
            raise ReplayError("main takes a transient buffer and the module names no function that sizes it")
        transient = interp.call_export(sizer, views)[0]  # IREE's own function, on the call's inputs
    views = [Buffer(Root("transient", 0, transient), 0, transient) if v is None else v for v in views]
    hal.phase = "main"
    results = interp.call_export("main", views)
    outputs = []
    for r in results:
        if not isinstance(r, View):
            raise ReplayError("main returned something other than a buffer view")
        outputs.append((r.buffer.root, r.buffer.offset, r.buffer.length, r.shape))
    return Recording(hal.commands["init"], hal.commands["main"], outputs, transient, roots, hal.constants,
                     hal.queue_ops)


def _describe(c: Command) -> str:
    if c.op == "dispatch":
        return f"dispatch of {c.kernel}"
    return c.op


def compare(rec: Recording, plan: LaunchPlan, refs: dict | None = None) -> list[str]:
    """The differences between IREE's recorded program and `plan` (a concrete one), in words.
    `refs`, when given, receives the correspondence found: id(Root) -> the plan's Ref."""
    diffs: list[str] = []
    to_plan: dict[int, Ref] = {} if refs is None else refs
    from_plan: dict[Ref, object] = {}
    exe_to_plan: dict[int, int] = {}
    exe_from_plan: dict[int, object] = {}

    def same_root(root: Root, ref: Ref, where: str) -> bool:
        """Whether IREE's buffer `root` is the plan's `ref` (binding the two on first sight)."""
        if root.kind in ("input", "output", "transient"):
            want = to_plan[id(root)] = Ref(root.kind, root.index)
            if ref != want:
                diffs.append(f"{where}: the plan has {_ref(ref)}, IREE's program {_ref(want)}")
                return False
            return True
        if ref.kind != "constant":
            diffs.append(f"{where}: the plan has {_ref(ref)}, IREE's program a constant "
                         f"({root.size} bytes{', imported' if root.kind == 'import' else ', computed at load'})")
            return False
        if id(root) in to_plan or ref in from_plan:
            if to_plan.get(id(root)) != ref or from_plan.get(ref) is not root:
                other = to_plan.get(id(root))
                diffs.append(f"{where}: the plan has {_ref(ref)}, IREE's program the buffer the plan elsewhere "
                             f"calls {_ref(other) if other else 'nothing'}")
                return False
            return True
        data = bytes(plan.constants[ref.index]) if ref.index < len(plan.constants) else None
        if data is None or len(data) != root.size or (root.data is not None and bytes(root.data) != data):
            diffs.append(f"{where}: the plan has {_ref(ref)} ({'missing' if data is None else f'{len(data)} bytes'}), "
                         f"IREE's program a constant of {root.size} bytes "
                         f"{'with other contents' if data is not None and len(data) == root.size else ''}".rstrip())
            return False
        to_plan[id(root)], from_plan[ref] = ref, root
        return True

    def ranges(where, got: list, want: list) -> None:
        if len(got) != len(want):
            diffs.append(f"{where}: the plan has {len(want)} buffers, IREE's program {len(got)}")
            return
        for k, ((root, off, n), (ref, poff, pn)) in enumerate(zip(got, want)):
            here = f"{where}, buffer {k}"
            if same_root(root, ref, here) and (off, n) != (poff, pn):
                diffs.append(f"{here} ({_ref(ref)}): the plan has offset {poff} length {pn}, IREE's program "
                             f"offset {off} length {n}")
            if root.size is not None and off + n > root.size:
                diffs.append(f"{here}: IREE's range {off}+{n} passes the end of its {root.size}-byte buffer")

    def steps(phase: str, got: list[Command], want: list) -> None:
        for i, (c, s) in enumerate(zip(got, want)):
            where = f"{phase} step {i} ({_describe(c)})"
            if c.op != s.op:
                diffs.append(f"{where}: the plan has a {s.op}")
                continue
            if c.op == "fill":
                ranges(where, c.ranges, [(s.target, s.target_offset, s.length)])
                if (c.pattern, c.pattern_bytes) != (s.pattern, s.pattern_bytes):
                    diffs.append(f"{where}: the plan fills {s.pattern:#x} in {s.pattern_bytes}-byte units, IREE's "
                                 f"program {c.pattern:#x} in {c.pattern_bytes}")
            elif c.op == "copy":
                ranges(where, c.ranges, [(s.source, s.source_offset, s.length), (s.target, s.target_offset, s.length)])
            else:
                try:
                    kernel = plan.executables[s.executable].kernels[s.kernel]
                except IndexError:
                    diffs.append(f"{where}: the plan's kernel {s.kernel} of executable {s.executable} does not exist")
                    continue
                if kernel.name != c.kernel:
                    diffs.append(f"{where}: the plan launches {kernel.name}")
                known = exe_to_plan.get(id(c.executable))
                if known is None and s.executable not in exe_from_plan:
                    ptx = plan.executables[s.executable].ptx[kernel.module].encode()
                    if ptx not in c.executable.data:
                        diffs.append(f"{where}: the plan's executable {s.executable} is not IREE's (its PTX is not "
                                     f"in the executable IREE's program created)")
                    exe_to_plan[id(c.executable)], exe_from_plan[s.executable] = s.executable, c.executable
                elif known != s.executable or exe_from_plan.get(s.executable) is not c.executable:
                    diffs.append(f"{where}: the plan takes the kernel from executable {s.executable}, IREE's program "
                                 f"from the one the plan calls {known}")
                if tuple(c.grid) != tuple(s.grid):
                    diffs.append(f"{where}: the plan's grid is {tuple(s.grid)}, IREE's {tuple(c.grid)}")
                if [x & _M32 for x in c.constants] != [x & _M32 for x in s.constants]:
                    diffs.append(f"{where}: the plan's push constants are {list(s.constants)}, IREE's {c.constants}")
                ranges(where, c.ranges, s.bindings)
        if len(got) != len(want):
            extra = got[len(want):] if len(got) > len(want) else want[len(got):]
            names = [_describe(c) if isinstance(c, Command) else c.op for c in extra[:3]]
            diffs.append(f"{phase}: the plan has {len(want)} steps, IREE's program {len(got)} "
                         f"({'IREE' if len(got) > len(want) else 'the plan'} goes on with {', '.join(names)})")

    if plan.symbolic:
        raise ValueError("compare a concrete plan (plan.concrete(shapes))")
    steps("load", rec.init, plan.init_steps)
    steps("main", rec.main, plan.steps)
    main_queue = [q for q in rec.queue_ops if q.startswith("main:")]
    if main_queue:
        diffs.append(f"main: IREE's program uses queue operations the plan cannot express: {main_queue}")
    if rec.transient_bytes != plan.transient_bytes:
        diffs.append(f"the plan's transient buffer has {plan.transient_bytes} bytes, IREE's {rec.transient_bytes}")
    if plan.inputs != len(rec.inputs):
        diffs.append(f"the plan has {plan.inputs} inputs, IREE's main {len(rec.inputs)}")
    if len(rec.outputs) != len(plan.outputs):
        diffs.append(f"the plan has {len(plan.outputs)} results, IREE's main {len(rec.outputs)}")
    for i, ((root, off, n, shape), o) in enumerate(zip(rec.outputs, plan.outputs)):
        where = f"result {i}"
        if same_root(root, o.buffer, where) and (off, n) != (o.offset, o.nbytes):
            diffs.append(f"{where}: the plan has offset {o.offset} length {o.nbytes}, IREE's program offset {off} "
                         f"length {n}")
        if o.shape is not None and list(o.shape) != list(shape):
            diffs.append(f"{where}: the plan's shape is {o.shape}, IREE's {shape}")
    return diffs


def _ref(ref: Ref | None) -> str:
    if ref is None:
        return "no buffer"
    return "the transient buffer" if ref.kind == "transient" else f"{ref.kind} {ref.index}"


def check(vmfb: bytes, plan: LaunchPlan, shapes: list | None = None) -> list[str]:
    """The differences between `plan` and IREE's program `vmfb` for one call with inputs of
    `shapes` (a static build's own when None); [] when they agree."""
    rec = record(vmfb, shapes)
    if plan.symbolic:
        if shapes is None:
            raise ValueError("a dynamic plan needs the call's input shapes")
        plan = plan.concrete(shapes)
    return compare(rec, plan)
