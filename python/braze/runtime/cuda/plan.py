"""The CUDA launch plan: everything braze needs to run a compiled module's kernels itself, on
torch's current stream, without IREE's runtime.

A plan is read off IREE's own output for the module (compiler/cuda_plan.py: the HAL-level program,
before IREE turns it into VM bytecode) and saved beside the .vmfb in the artifact:

    executables   each executable's PTX modules and kernels (name, block size, dynamic shared
                  memory, push-constant and binding counts), from IREE's CUDA flatbuffer
    constants     the weights and other constant buffers, as bytes
    steps         main's command buffer in order: fill, copy and dispatch (kernel, grid, 32-bit
                  constants, bindings as buffer + offset + length)
    buffers       what a buffer reference means: an input, an output, the transient buffer
                  (of `transient_bytes`) or a constant
    outputs       which buffer and offset each result is (and, in a dynamic build, its shape)
    exprs         a dynamic build's sizes: the index arithmetic IREE's program does on the inputs'
                  dimensions, as a list of nodes; a number of the plan that depends on them is
                  Sym(i), node i's value. `concrete(shapes)` evaluates them for one call's input
                  shapes into a plan of plain numbers (braze.runtime.cuda.launch runs one per shape).

Needs only the standard library: it is read on the GPU host, where there is no compiler.
"""

from __future__ import annotations

import struct
from dataclasses import asdict, dataclass, field, fields, replace

PLAN_VERSION = 3
READS_VERSIONS = (1, 2, 3)
"""Version 2 may refer to a constant or a module's PTX by its offset in the artifact's vmfb
instead of a file of its own (IREE keeps both there already: copies doubled ResNet-18's
artifact, 45 -> 90 MiB). Version 3 adds symbolic sizes (`exprs`, Sym) and output shapes."""


@dataclass(frozen=True)
class Sym:
    """A number known per call: the value of node `sym` of the plan's `exprs`."""

    sym: int


_MASK64 = (1 << 64) - 1
_CMP = {0: lambda a, b: a == b, 1: lambda a, b: a != b, 2: lambda a, b: a < b, 3: lambda a, b: a <= b,
        4: lambda a, b: a > b, 5: lambda a, b: a >= b}
"""arith.cmpi predicates (eq, ne, slt, sle, sgt, sge; 6-9, the unsigned ones, compare the
values as unsigned 64-bit)."""


def _trunc_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def apply(op: str, args: list[int]) -> int:
    """The value of one node: IREE's host-side index arithmetic (arith dialect semantics on
    64-bit integers), for the interpreter's folding and for `evaluate` alike."""
    if op == "add":
        return args[0] + args[1]
    if op == "sub":
        return args[0] - args[1]
    if op == "mul":
        return args[0] * args[1]
    if op == "divs":
        return _trunc_div(args[0], args[1])
    if op == "divu":
        return (args[0] & _MASK64) // (args[1] & _MASK64)
    if op == "ceildivs":
        q = _trunc_div(args[0], args[1])
        return q + 1 if q * args[1] != args[0] and (args[0] >= 0) == (args[1] >= 0) else q
    if op == "ceildivu":
        a, b = args[0] & _MASK64, args[1] & _MASK64
        return -(-a // b)
    if op == "rems":
        return args[0] - _trunc_div(args[0], args[1]) * args[1]
    if op == "remu":
        return (args[0] & _MASK64) % (args[1] & _MASK64)
    if op == "min":
        return min(args[0], args[1])
    if op == "max":
        return max(args[0], args[1])
    if op == "minu":
        return min(args[0] & _MASK64, args[1] & _MASK64)
    if op == "maxu":
        return max(args[0] & _MASK64, args[1] & _MASK64)
    if op == "shl":
        return (args[0] << args[1]) & _MASK64
    if op == "shru":
        return (args[0] & _MASK64) >> args[1]
    if op == "shrs":
        return args[0] >> args[1]
    if op == "and":
        return args[0] & args[1]
    if op == "or":
        return args[0] | args[1]
    if op == "xor":
        return args[0] ^ args[1]
    if op == "trunc":  # to args[1] bits
        return args[0] & ((1 << args[1]) - 1)
    if op == "cmp":  # predicate, a, b
        pred, a, b = args
        if pred >= 6:
            a, b, pred = a & _MASK64, b & _MASK64, pred - 4
        return int(_CMP[pred](a, b))
    if op == "select":
        return args[1] if args[0] else args[2]
    raise ValueError(f"unknown plan expression op '{op}'")


_OPS = {"add", "sub", "mul", "divs", "divu", "ceildivs", "ceildivu", "rems", "remu", "min", "max", "minu", "maxu",
        "shl", "shru", "shrs", "and", "or", "xor", "trunc", "cmp", "select"}


def evaluate(exprs: list, shapes: list, outputs: list | None = None) -> list[int]:
    """Every node's value for one call: `shapes` are the program inputs' shapes (node
    ['dim', input, axis]); node ['outlen', i] is output i's byte count (`outputs`, the plan's)."""
    values: list = [None] * len(exprs)

    def value(x):
        if isinstance(x, Sym):
            if values[x.sym] is None:
                node = exprs[x.sym]
                if node[0] == "dim":
                    values[x.sym] = int(shapes[node[1]][node[2]])
                elif node[0] == "outlen":
                    values[x.sym] = -1  # a cycle reads -1 and fails below
                    values[x.sym] = value(outputs[node[1]].nbytes)
                else:
                    values[x.sym] = apply(node[0], [value(a) for a in node[1:]])
            return values[x.sym]
        return int(x)

    return [value(Sym(i)) for i in range(len(exprs))]


@dataclass(frozen=True)
class Ref:
    """A buffer a step reads or writes: kind 'input' | 'output' | 'transient' | 'constant',
    index (input/output/constant number; 0 for the transient buffer)."""

    kind: str
    index: int = 0


@dataclass
class Kernel:
    name: str
    module: int
    block: tuple[int, int, int]
    shared_memory: int
    constants: int
    bindings: int


@dataclass
class Executable:
    ptx: list[str]
    kernels: list[Kernel]


@dataclass
class Step:
    """One command: op 'fill' | 'copy' | 'dispatch'."""

    op: str
    target: Ref | None = None
    target_offset: int = 0
    length: int = 0
    source: Ref | None = None
    source_offset: int = 0
    pattern: int = 0
    pattern_bytes: int = 1
    executable: int = 0
    kernel: int = 0
    grid: tuple[int, int, int] = (1, 1, 1)
    constants: list[int] = field(default_factory=list)
    bindings: list[tuple[Ref, int, int]] = field(default_factory=list)
    """(buffer, offset, length) per binding, in the kernel's order."""


@dataclass
class Output:
    buffer: Ref
    offset: int
    nbytes: int
    shape: list | None = None
    """The result's sizes (ints or Sym) in a dynamic build; None: the signature's."""


@dataclass
class LaunchPlan:
    executables: list[Executable]
    constants: list[bytes]
    steps: list[Step]
    outputs: list[Output]
    transient_bytes: int
    inputs: int
    init_steps: list[Step] = field(default_factory=list)
    """Commands that compute constants once, at load (IREE hoists constant work into initializers)."""
    exprs: list = field(default_factory=list)
    """A dynamic build's size arithmetic (see the module docstring); [] for a static build."""
    checks: list = field(default_factory=list)
    """[condition, message] per `cf.assert` of IREE's program on the sizes (a broadcast's sizes
    agree): `concrete` raises ValueError with the message where one fails."""
    version: int = PLAN_VERSION

    def __deepcopy__(self, memo) -> "LaunchPlan":
        """A copy whose steps and lists are its own; the constants' bytes are shared (read-only,
        often views of the program's: gigabytes of weights are not copied, and views cannot be)."""
        import copy

        shallow = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "constants"}
        return LaunchPlan(constants=list(self.constants), **copy.deepcopy(shallow, memo))

    @property
    def symbolic(self) -> bool:
        """Whether some number of the plan depends on the call's input shapes."""
        return bool(self.exprs)

    def concrete(self, shapes: list) -> "LaunchPlan":
        """The plan of plain numbers for one call whose program inputs have `shapes`."""
        if not self.exprs:
            return self
        values = evaluate(self.exprs, shapes, self.outputs)
        num = lambda x: values[x.sym] if isinstance(x, Sym) else x  # noqa: E731
        for condition, message in self.checks:
            if not num(condition):
                raise ValueError(f"the program's check on its input sizes failed: {message}")

        def step(s: Step) -> Step:
            return replace(s, target_offset=num(s.target_offset), length=num(s.length),
                           source_offset=num(s.source_offset), grid=tuple(num(g) for g in s.grid),
                           constants=[num(c) & 0xFFFFFFFF for c in s.constants],
                           bindings=[(b, num(o), num(n)) for b, o, n in s.bindings])

        outputs = [Output(o.buffer, num(o.offset), num(o.nbytes), [num(d) for d in o.shape] if o.shape else None)
                   for o in self.outputs]
        return replace(self, steps=[step(s) for s in self.steps], outputs=outputs,
                       transient_bytes=num(self.transient_bytes), exprs=[], checks=[])

    def _bulk(self) -> dict[str, bytes]:
        """The plan's bulk by file name inside the artifact: each module's PTX, each constant."""
        out = {}
        for i, e in enumerate(self.executables):
            for j, ptx in enumerate(e.ptx):
                out[f"cuda/executable{i}.module{j}.ptx"] = ptx.encode()
        for i, c in enumerate(self.constants):
            out[f"cuda/constant{i}.bin"] = c
        return out

    def shared_with(self, vmfb: bytes) -> dict[str, int]:
        """File name -> offset in `vmfb` of the bulk whose bytes occur there: IREE's program
        holds the weights and the PTX already (a copy doubled ResNet-18's artifact)."""
        found = {name: _find(vmfb, data) for name, data in self._bulk().items()}
        return {name: at for name, at in found.items() if at is not None}

    def to_json(self, shared: dict[str, int] | None = None) -> dict:
        """The plan without its bulk: each piece is a file of its own, or its offset in the
        vmfb where `shared` (shared_with) has one."""
        shared = shared or {}
        bulk = {name: len(data) for name, data in self._bulk().items()}

        def piece(name: str) -> dict:
            return {"nbytes": bulk[name], "vmfb_offset": shared.get(name)}

        data = asdict(replace(self, constants=[], executables=[]))  # asdict would deep-copy the bulk
        data["executables"] = [{"kernels": [asdict(k) for k in e.kernels], "modules": len(e.ptx),
                                "ptx": [piece(f"cuda/executable{i}.module{j}.ptx") for j in range(len(e.ptx))]}
                               for i, e in enumerate(self.executables)]
        data["constants"] = [piece(f"cuda/constant{i}.bin") for i in range(len(self.constants))]
        return data

    def blobs(self, shared: dict[str, int] | None = None) -> dict[str, bytes]:
        """The files the plan's bulk needs inside the artifact: the pieces not in `shared`."""
        return {name: bytes(data) for name, data in self._bulk().items() if name not in (shared or {})}

    @classmethod
    def from_json(cls, data: dict, blobs: dict[str, bytes], vmfb: bytes | None = None) -> "LaunchPlan":
        if data.get("version") not in READS_VERSIONS:
            raise ValueError(f"launch plan version {data.get('version')} (this braze reads "
                             f"{', '.join(map(str, READS_VERSIONS))})")
        ref = lambda r: Ref(str(r["kind"]), int(r["index"])) if r is not None else None  # noqa: E731
        n_exprs = len(data.get("exprs", []))

        def num(v):
            """A plan number: an int, or {"sym": i} (a node of exprs)."""
            if isinstance(v, dict):
                if not 0 <= int(v["sym"]) < n_exprs:
                    raise ValueError(f"the plan refers to expression {v['sym']} of {n_exprs}")
                return Sym(int(v["sym"]))
            return int(v)

        def piece(name: str, entry):
            """A piece of bulk: its file, or (version 2) its bytes in the vmfb."""
            if isinstance(entry, dict) and entry.get("vmfb_offset") is not None:
                start, n = int(entry["vmfb_offset"]), int(entry["nbytes"])
                if vmfb is None or start < 0 or start + n > len(vmfb):
                    raise ValueError(f"{name} lies outside the program ({start} + {n} bytes)")
                return memoryview(vmfb)[start:start + n]
            return blobs[name]

        executables = []
        for i, e in enumerate(data["executables"]):
            entries = e.get("ptx") or [None] * int(e["modules"])
            ptx = [bytes(piece(f"cuda/executable{i}.module{j}.ptx", entries[j])).decode()
                   for j in range(int(e["modules"]))]
            kernels = [Kernel(str(k["name"]), int(k["module"]), tuple(int(b) for b in k["block"]),
                              int(k["shared_memory"]), int(k["constants"]), int(k["bindings"])) for k in e["kernels"]]
            executables.append(Executable(ptx, kernels))
        constants = [piece(f"cuda/constant{i}.bin", c) for i, c in enumerate(data["constants"])]

        exprs = [[str(node[0]), *(num(a) for a in node[1:])] for node in data.get("exprs", [])]

        def step(s) -> Step:
            return Step(
                str(s["op"]), ref(s["target"]), num(s["target_offset"]), num(s["length"]), ref(s["source"]),
                num(s["source_offset"]), int(s["pattern"]), int(s["pattern_bytes"]), int(s["executable"]),
                int(s["kernel"]), tuple(num(g) for g in s["grid"]), [num(c) for c in s["constants"]],
                [(ref(b[0]), num(b[1]), num(b[2])) for b in s["bindings"]])

        outputs = [Output(ref(o["buffer"]), num(o["offset"]), num(o["nbytes"]),
                          [num(d) for d in o["shape"]] if o.get("shape") is not None else None)
                   for o in data["outputs"]]
        plan = cls(executables, constants, [step(s) for s in data["steps"]], outputs, num(data["transient_bytes"]),
                   int(data["inputs"]), [step(s) for s in data.get("init_steps", [])], exprs,
                   [[num(c[0]), str(c[1])] for c in data.get("checks", [])])
        plan.validate()
        return plan

    def validate(self) -> None:
        """ValueError when a step refers to something the plan does not have."""
        def check(r: Ref | None) -> None:
            if r is None:
                return
            limit = {"input": self.inputs, "output": len(self.outputs), "transient": 1,
                     "constant": len(self.constants)}.get(r.kind)
            if limit is None or not 0 <= r.index < limit:
                raise ValueError(f"the plan refers to {r}, which it does not have")

        for s in self.init_steps:
            for r in [s.target, s.source] + [b for b, _, _ in s.bindings]:
                if r is not None and r.kind != "constant":
                    raise ValueError(f"a load-time step touches {r}")
        for s in self.init_steps + self.steps:
            if s.op not in ("fill", "copy", "dispatch"):
                raise ValueError(f"unknown plan step '{s.op}'")
            check(s.target)
            check(s.source)
            for b, _, _ in s.bindings:
                check(b)
            if s.op == "dispatch":
                kernel = self.executables[s.executable].kernels[s.kernel]
                if len(s.constants) != kernel.constants or len(s.bindings) != kernel.bindings:
                    raise ValueError(f"dispatch of {kernel.name} passes {len(s.constants)} constants and "
                                     f"{len(s.bindings)} bindings; the kernel takes {kernel.constants} and {kernel.bindings}")
        for o in self.outputs:
            check(o.buffer)
        for i, node in enumerate(self.exprs):
            op, args = node[0], node[1:]
            if op == "dim":
                if not (len(args) == 2 and 0 <= args[0] < self.inputs and args[1] >= 0):
                    raise ValueError(f"expression {i} reads a dimension of an input the plan does not have: {node}")
            elif op == "outlen":
                if not (len(args) == 1 and 0 <= args[0] < len(self.outputs)):
                    raise ValueError(f"expression {i} reads the size of an output the plan does not have: {node}")
            elif op not in _OPS or any(isinstance(a, Sym) and a.sym >= i for a in args):
                raise ValueError(f"expression {i} ({node}) is not an op of earlier expressions")
        for s in self.init_steps:
            if any(isinstance(x, Sym) for x in (s.target_offset, s.length, s.source_offset, *s.grid, *s.constants)):
                raise ValueError("a load-time step has a size known only per call")


def split_top(text: str, opening: str = "<([{", closing: str = ">)]}") -> list[str]:
    """`text` split at the commas outside every bracket pair, each part stripped (empty ones
    kept). The brackets are MLIR's by default; IREE's disassembly passes "([" and ")]", since its
    block arguments are written `%a->%b`."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch in opening:
            depth += 1
        elif ch in closing:
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    parts.append(text[start:].strip())
    return parts


# ---------------------------------------------------------------------------
# IREE's CUDA executable format: a 64-byte header ('CDA1', version, size), then a flatbuffer
# (runtime/src/iree/schemas/cuda_executable_def.fbs):
#   ExecutableDef { exports: [ExportDef]; modules: [ModuleDef]; source_files: [...] }
#   ExportDef { module_ordinal: u32; kernel_name: string; block_dims: {x, y, z: u32};
#               block_shared_memory_size: u32; constant_count: u32; binding_flags: [u64]; ... }
#   ModuleDef { ptx_image: string }

HEADER_BYTES = 64
IDENTIFIER = b"CDA1"


class FlatbufferTable:
    """A flatbuffer table: fields by index through its vtable (IREE's CUDA executables here,
    its VM bytecode modules in braze.runtime.cuda.plan_check). `buf`: bytes or a memoryview."""

    def __init__(self, buf, pos: int):
        self.buf, self.pos = buf, pos
        self.vtable = pos - struct.unpack_from("<i", buf, pos)[0]
        self.vsize = struct.unpack_from("<H", buf, self.vtable)[0]

    def _field(self, index: int) -> int | None:
        slot = 4 + 2 * index
        if slot >= self.vsize:
            return None
        offset = struct.unpack_from("<H", self.buf, self.vtable + slot)[0]
        return self.pos + offset if offset else None

    def scalar(self, index: int, fmt: str, default=0):
        """A scalar field of struct format `fmt` ('I', 'i', 'Q', ...)."""
        at = self._field(index)
        return default if at is None else struct.unpack_from("<" + fmt, self.buf, at)[0]

    def u32(self, index: int, default: int = 0) -> int:
        return self.scalar(index, "I", default)

    def struct_u32s(self, index: int, count: int) -> tuple[int, ...]:
        at = self._field(index)
        return (0,) * count if at is None else struct.unpack_from(f"<{count}I", self.buf, at)

    def _indirect(self, index: int) -> int | None:
        at = self._field(index)
        return None if at is None else at + struct.unpack_from("<I", self.buf, at)[0]

    def string(self, index: int) -> str:
        at = self._indirect(index)
        if at is None:
            return ""
        n = struct.unpack_from("<I", self.buf, at)[0]
        return bytes(self.buf[at + 4: at + 4 + n]).decode("utf-8")

    def table(self, index: int) -> "FlatbufferTable | None":
        at = self._indirect(index)
        return None if at is None else FlatbufferTable(self.buf, at)

    def vector(self, index: int) -> tuple[int, int]:
        """(where the elements start, how many)."""
        at = self._indirect(index)
        return (0, 0) if at is None else (at + 4, struct.unpack_from("<I", self.buf, at)[0])

    def vector_length(self, index: int) -> int:
        return self.vector(index)[1]

    def tables(self, index: int) -> list["FlatbufferTable"]:
        start, n = self.vector(index)
        elements = [start + 4 * i for i in range(n)]
        return [FlatbufferTable(self.buf, e + struct.unpack_from("<I", self.buf, e)[0]) for e in elements]


def read_cuda_executable(data: bytes) -> Executable:
    """The PTX modules and kernels of an IREE CUDA executable binary (ValueError if it is not one)."""
    if data[:4] != IDENTIFIER:
        raise ValueError("not an IREE CUDA executable (no CDA1 header)")
    version, size = struct.unpack_from("<IQ", data, 4)
    if version != 0 or HEADER_BYTES + size > len(data):
        raise ValueError(f"IREE CUDA executable header version {version}, size {size}: not one this braze reads")
    buf = data[HEADER_BYTES:HEADER_BYTES + size]
    if buf[4:8] != IDENTIFIER:
        raise ValueError("IREE CUDA executable flatbuffer has another identifier")
    root = FlatbufferTable(buf, struct.unpack_from("<I", buf, 0)[0])
    modules = [m.string(0) for m in root.tables(1)]
    kernels = []
    for e in root.tables(0):
        kernels.append(Kernel(e.string(1), e.u32(0), e.struct_u32s(2, 3), e.u32(3), e.u32(4), e.vector_length(5)))
    return Executable(modules, kernels)


def _find(vmfb: bytes | None, data) -> int | None:
    """Offset of `data` in `vmfb`, None when it does not occur (or is empty: nothing to share)."""
    if vmfb is None or not len(data):
        return None
    at = vmfb.find(data)
    return at if at >= 0 else None
