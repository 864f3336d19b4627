"""Finding row programs for fusion-generate-kernels: a reduction over the last dimension with the
elementwise work around it (LayerNorm, RMSNorm, softmax), as one RowSpec.

torch-mlir writes GPT-2's LayerNorm as 20 generics over [B, S, C] and [B, S, 1]: the input
widened, a mean in f32, a variance in f64 (two sums), rsqrt, the normalisation, weight and bias,
the cast back. The region grows from one reduction generic of the last dimension:

  forward  every reader of a region value that is a generic over the same rows (elementwise
           over [..., C] or over the per-row [..., 1], or another reduction of the last dimension);
  backward every producer of a region operand that is such a generic, when all its readers are in
           the region, or when it reads nothing of the region's space (a cast of the input: the
           kernel computes it again and IREE keeps it for its other readers); the zero fills
           that initialise the reductions.

What the region reads from outside is the kernel's inputs (read whole, per column, per row or as
a scalar); the one value it leaves for others to read is its result. A region that leaves two
(a LayerNorm whose mean a later op reads too) stays IREE's, with the reason on the reduction.
"""

from __future__ import annotations

from braze._mlir import ir
from braze.irutil import captured_values, op_id, short_location
from braze.kernels.gemm import EPILOGUE_OPS
from braze.kernels.spec import MAX_ROW, Input, RowSpec

from .matchers import element_type, float_literal, int_literal, map_results, owner

COMBINERS = {"arith.addf": "sum", "arith.maximumf": "max", "arith.maxnumf": "maxnum"}
FLOATS = ("f32", "bf16", "f16", "f64")
MAX_POWER = 4
"""math.fpowi exponents a row kernel writes as products (x * x for torch's pow(2))."""


def _shape(v: ir.Value) -> list[int] | None:
    try:
        t = ir.RankedTensorType(v.type)
    except ValueError:
        return None
    return list(t.shape) if t.has_static_shape else None


def _maps(g: ir.Operation) -> list[list[str]]:
    return [map_results(str(m)) for m in ir.ArrayAttr(g.attributes["indexing_maps"])]


def _iterators(g: ir.Operation) -> list[str]:
    return [str(x).split("<")[-1].rstrip(">").strip('"') for x in ir.ArrayAttr(g.attributes["iterator_types"])]


class _Space:
    """The rows a region works on: `shape` [..., C] (rows = the product of all but C)."""

    def __init__(self, shape: list[int]):
        self.shape = shape
        self.n = len(shape)
        self.per_row = [shape[:-1] + [1], shape[:-1]]

    @property
    def rows(self) -> int:
        r = 1
        for d in self.shape[:-1]:
            r *= d
        return r

    def kind_of(self, shape: list[int] | None) -> str | None:
        """'full' for a value over the space, 'perrow' for one value a row, else None."""
        if shape == self.shape:
            return "full"
        return "perrow" if shape in self.per_row else None

    def access(self, results: list[str], operand_shape: list[int] | None, space_kind: str) -> str | None:
        """How a generic over `space_kind` reads an operand through a map with these results:
        full, perrow (the region's own broadcast), row ([C], per column), scalar; None otherwise."""
        if operand_shape is None:
            return None
        if all(r == "0" for r in results):
            return "scalar"
        if space_kind == "full":
            ident = [f"d{i}" for i in range(self.n)]
            if results == ident and operand_shape == self.shape:
                return "full"
            if (results in (ident[:-1], ident[:-1] + ["0"])) and operand_shape in self.per_row:
                return "perrow"
            if results[-1] == f"d{self.n - 1}" and all(r == "0" for r in results[:-1]) \
                    and operand_shape[-1] == self.shape[-1] and all(d == 1 for d in operand_shape[:-1]):
                return "row"
            return None
        if results == [f"d{i}" for i in range(len(results))] and operand_shape in self.per_row:
            return "perrow"
        return None


class _Reduction:
    """A generic reducing its input's last dimension into one value a row: `space`, the result
    `k` read after it (torch-mlir's max also yields the argmax, which nothing reads), its
    `combiner` (sum, max, maxnum), its initial value, its inputs `n_in`."""

    def __init__(self, space: _Space, k: int, combiner: str, init: float, n_in: int):
        self.space, self.k, self.combiner, self.init, self.n_in = space, k, combiner, init, n_in


def _reduction(g: ir.Operation) -> _Reduction | str:
    """The reduction a generic is, or why it is not one."""
    if g.name != "linalg.generic" or not len(g.results):
        return "not a generic"
    its = _iterators(g)
    if its[-1:] != ["reduction"] or any(i != "parallel" for i in its[:-1]):
        return "it reduces other than the last dimension"
    n_res = len(g.results)
    n_in = len(g.operands) - n_res
    used = [i for i, r in enumerate(g.results) if list(r.uses)]
    if len(used) != 1 or n_in < 1:
        return "it has more than one result read" if used else "nothing reads it"
    k = used[0]
    maps = _maps(g)
    n = len(its)
    ident = [f"d{i}" for i in range(n)]
    shape = _shape(g.operands[0])
    if shape is None:
        return "its sizes are not static"
    if any(m != ident or _shape(v) != shape for m, v in zip(maps[:n_in], list(g.operands)[:n_in])):
        return "it reads an operand other than element by element"
    if any(m not in (ident[:-1], ident[:-1] + ["0"]) for m in maps[n_in:]):
        return "it writes a layout other than one value a row"
    if shape[-1] > MAX_ROW:
        return f"its rows hold {shape[-1]} elements, more than a row kernel keeps in registers ({MAX_ROW})"
    fill = owner(g.operands[n_in + k])
    init = float_literal(fill.operands[0]) if fill is not None and fill.name == "linalg.fill" else None
    if init is None:
        return "its initial value is not a constant fill"
    body = g.regions[0].blocks[0]
    ops = [o.operation for o in body.operations]
    acc = body.arguments[n_in + k]
    last = owner(ops[-1].operands[k])
    if last is None or last.name not in COMBINERS or list(last.operands).count(acc) != 1:
        return "its body is not a sum or a maximum into the accumulator"
    if any(acc in list(o.operands) for o in _slice(body, ops[-1].operands[k]) if o != last):
        return "its body reads the accumulator other than to combine"
    return _Reduction(_Space(shape), k, COMBINERS[last.name], init, n_in)


def _slice(body: ir.Block, v: ir.Value) -> list:
    """The body's ops `v` is computed from, in block order."""
    wanted, todo = set(), [v]
    while todo:
        o = owner(todo.pop())
        if o is None or o.parent != body.owner or op_id(o) in wanted:
            continue
        wanted.add(op_id(o))
        todo.extend(o.operands)
    return [o.operation for o in body.operations if op_id(o.operation) in wanted]


VIEWS = ("tensor.expand_shape", "tensor.collapse_shape")


def _in_space(g: ir.Operation, space: _Space) -> str | None:
    """'full', 'perrow' (an elementwise generic over the space or one value a row), 'reduction'
    (a reduction of the same rows), 'view' (a reshape between the two per-row shapes, [R] and
    [R, 1]: the kernel holds both alike), or None."""
    if g.name in VIEWS:
        ok = space.kind_of(_shape(g.operands[0])) == "perrow" == space.kind_of(_shape(g.results[0]))
        return "view" if ok else None
    if g.name != "linalg.generic" or not len(g.results):
        return None
    red = _reduction(g)
    if not isinstance(red, str):
        return "reduction" if red.space.shape == space.shape else None
    if len(g.results) != 1:
        return None
    its = _iterators(g)
    if any(i != "parallel" for i in its):
        return None
    kind = space.kind_of(_shape(g.results[0]))
    if kind is None:
        return None
    maps = _maps(g)
    if maps[-1] != [f"d{i}" for i in range(len(its))]:
        return None
    n_in = len(g.operands) - 1
    for m, v in zip(maps[:n_in], list(g.operands)[:n_in]):
        if space.access(m, _shape(v), kind) is None:
            return None
    return kind


def _readers(p: ir.Operation) -> set:
    return {op_id(u.owner) for r in p.results for u in r.uses}


def grow(seed: ir.Operation, space: _Space) -> tuple[list, set]:
    """The region's ops (generics, per-row reshapes, fills) and the keys of those the kernel
    computes again while IREE keeps them for other readers."""
    region: dict[int, ir.Operation] = {op_id(seed): seed}
    shared: set = set()
    changed = True
    while changed:
        changed = False
        for o in list(region.values()):
            if op_id(o) in shared:
                continue
            for r in o.results:
                for u in r.uses:
                    reader = u.owner
                    if op_id(reader) not in region and _in_space(reader, space):
                        region[op_id(reader)] = reader
                        changed = True
            kind = _in_space(o, space)
            outs = list(o.operands)[_reduction(o).n_in:] if kind == "reduction" else []
            for v in o.operands:
                p = owner(v)
                if p is None or op_id(p) in region:
                    continue
                if p.name == "linalg.fill" and v in outs:  # a reduction's init: cloned, maybe shared
                    region[op_id(p)] = p
                    shared.add(op_id(p))
                    changed = True
                    continue
                p_kind = _in_space(p, space)
                if not p_kind:
                    continue
                if _readers(p) <= set(region):
                    region[op_id(p)] = p
                    shared.discard(op_id(p))
                    changed = True
                elif p_kind in ("full", "perrow") and all(
                        owner(x) is None or not _in_space(owner(x), space) for x in list(p.operands)[:-1]):
                    region[op_id(p)] = p  # reads nothing of the region's space: computed again
                    shared.add(op_id(p))
                    changed = True
    for key in list(shared):  # a shared op all of whose readers joined later is the region's own
        p = region[key]
        if p.name != "linalg.fill" and _readers(p) <= set(region):
            shared.discard(key)
    return list(region.values()), shared


class _Program:
    """The RowSpec being written: its inputs (and the values they are), its ops, the name of
    each region value."""

    def __init__(self, space: _Space):
        self.space = space
        self.names: dict = {}
        self.args: list = []
        self.inputs: list = []
        self.ops: list = []

    def input(self, v: ir.Value, access: str) -> str:
        for j, (w, inp) in enumerate(zip(self.args, self.inputs)):
            if w == v and inp.access == access:
                return f"in{j}"
        self.args.append(v)
        self.inputs.append(Input(element_type(v), access))
        return f"in{len(self.inputs) - 1}"

    def emit(self, op: str, operands: list, ty: str, extra=None) -> str:
        dst = f"%{len(self.ops)}"
        self.ops.append((dst, op, operands, ty, extra))
        return dst

    def generic(self, g: ir.Operation, kind: str) -> str | None:
        """Append the generic's body (the part its read result is computed from); None, or why not."""
        red = _reduction(g) if kind == "reduction" else None
        k, n_in = (red.k, red.n_in) if red else (0, len(g.operands) - 1)
        maps = _maps(g)
        body = g.regions[0].blocks[0]
        local: dict = {}
        for i in range(n_in):
            v = g.operands[i]
            if v in self.names:
                local[body.arguments[i]] = self.names[v]
                continue
            access = self.space.access(maps[i], _shape(v), "full" if red else kind)
            access = {"perrow": "col"}.get(access, access)
            if access is None or element_type(v) not in FLOATS:
                return f"it reads a {element_type(v)} operand the kernel cannot load"
            local[body.arguments[i]] = self.input(v, access)
        for v in captured_values(g):
            if float_literal(v) is None and int_literal(v) is None:
                return "its body reads a value from outside that is not a constant"
        yielded = [o.operation for o in body.operations][-1].operands[k]
        acc = body.arguments[n_in + k]
        part = _slice(body, yielded)
        if not red and any(a in list(o.operands) for o in part for a in list(body.arguments)[n_in:]):
            return "its body reads its output tensor"
        combiner = owner(yielded) if red else None
        for o in part:
            if combiner is not None and o == combiner:  # reduce the other operand over the row
                x = [v for v in o.operands if v != acc][0]
                x = local[x] if x in local else float_literal(x)
                if x is None:
                    return "its combiner reads a value the kernel does not hold"
                local[o.results[0]] = self.emit(red.combiner, [x], str(o.results[0].type), red.init)
                continue
            if o.name == "arith.constant":
                lit = float_literal(o.results[0])
                if lit is None:
                    return "its body holds a constant that is not a float"
                local[o.results[0]] = lit
                continue
            dialect_op = o.name.split(".", 1)[1]
            extra = None
            if o.name == "math.fpowi":
                power = int_literal(o.operands[1])
                if power is None or abs(power) > MAX_POWER:
                    return "it raises to a power that is not a small integer constant"
                extra, operands_in = power, [o.operands[0]]
            elif dialect_op in EPILOGUE_OPS and o.name.startswith(("arith.", "math.")) and len(o.results) == 1:
                operands_in = list(o.operands)
            else:
                return f"its body holds {o.name}"
            if o.name == "arith.cmpf":
                extra = ir.IntegerAttr(o.attributes["predicate"]).value
            operands = []
            for v in operands_in:
                if v in local:
                    operands.append(local[v])
                elif (lit := float_literal(v)) is not None:
                    operands.append(lit)
                else:
                    return "its body reads a value the kernel does not hold"
            ty = str(o.results[0].type)
            if ty not in FLOATS + ("i1",) or (ty == "i1" and o.name != "arith.cmpf"):
                return f"its body computes in {ty}"
            local[o.results[0]] = self.emit(dialect_op, operands, ty, extra)
        if yielded not in local:
            return "it yields a value the kernel does not hold"
        value = local[yielded]
        if not isinstance(value, str):  # a constant result: make it a value of the row
            value = self.emit("addf", [value, 0.0], element_type(g.results[k]))
        self.names[g.results[k]] = value
        return None


def match_rows(seed: ir.Operation, block_order: dict):
    """(spec, args, ops, result, last) for the row program grown from the reduction `seed`, or
    why there is none. `block_order`: op key -> position in the function's block."""
    red = _reduction(seed)
    if isinstance(red, str):
        return red
    space = red.space
    ops, shared = grow(seed, space)
    keys = {op_id(o) for o in ops}
    if any(op_id(o) not in block_order for o in ops):
        return "the region spans blocks"
    ops.sort(key=lambda o: block_order[op_id(o)])
    outputs = [r for o in ops if op_id(o) not in shared and o.name != "linalg.fill" for r in o.results
               if any(op_id(u.owner) not in keys for u in r.uses)]
    if len(outputs) != 1:
        return (f"the row program leaves {len(outputs)} values for other ops to read (a row kernel writes one)"
                if outputs else "the row program's result is never read")
    result = outputs[0]
    last = owner(result)
    if space.kind_of(_shape(result)) != "full" or element_type(result) not in ("f32", "bf16", "f16"):
        return "the row program's result is one value a row or not a float tensor over the rows"
    if any(block_order[op_id(o)] > block_order[op_id(last)] for o in ops):
        return "the row program has ops after its result"
    program = _Program(space)
    for o in ops:
        kind = _in_space(o, space)
        if kind == "view":
            if o.operands[0] not in program.names:
                return "it reshapes a value the kernel does not hold"
            program.names[o.results[0]] = program.names[o.operands[0]]
            continue
        if o.name != "linalg.generic":
            continue
        why = program.generic(o, kind)
        if why:
            return f"{why} ({o.name} at {short_location(str(o.location))})"
    if not program.args:
        return "the row program reads no tensor"
    spec = RowSpec(rows=space.rows, cols=space.shape[-1], out=element_type(result), inputs=tuple(program.inputs),
                   ops=tuple(tuple(o) for o in program.ops), result=program.names[result])
    try:
        spec.check()
    except ValueError as e:
        return str(e)
    return spec, program.args, ops, result, last
