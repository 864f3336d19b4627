"""What makes a linalg op elementwise, and one iteration space for a set of them.

Shared by fusion-form-groups (which ops may join a group), fusion-lower-to-linalg (the fused
op's loops and maps) and the GPU passes (element widths). Nothing here changes the input IR:
named ops are generalized in a scratch module.

Elementwise ops are all-parallel `linalg.generic`s whose output maps are permutations and
whose input maps are projected permutations (dims, or constant 0 for a size-1 broadcast), with
a body of arith/math/linalg.index ops only; plus the named ops torch-mlir emits that generalize
to such a generic (linalg.add/.../exp, linalg.elementwise, linalg.map, linalg.broadcast,
linalg.transpose, linalg.fill, linalg.copy). Everything else (reductions, contractions,
tensor.pad / expand_shape / collapse_shape / extract_slice, bodies with tensor.extract) is not.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from braze._mlir import func, ir, passmanager
from braze.irutil import captured_values, op_id, remap_operands

MATH_OP_FLOPS = 4
"""Weight of one math-dialect op (exp, tanh, erf, ...) in an op's flops; arith ops weigh 1."""

_BODY_DIALECTS = ("arith", "math", "complex")


# ---------------------------------------------------------------------------
# Indexing maps as tuples: a dim position d >= 0, or -1 - c for the constant c.


def map_tuple(amap: ir.AffineMap) -> tuple[int, ...] | None:
    """Results of a map as ints (dims) / negative ints (constants); None when any is compound."""
    out = []
    for e in amap.results:
        if isinstance(e, ir.AffineDimExpr):
            out.append(ir.AffineDimExpr(e).position)
        elif isinstance(e, ir.AffineConstantExpr) and ir.AffineConstantExpr(e).value >= 0:
            out.append(-1 - ir.AffineConstantExpr(e).value)
        else:
            return None
    return tuple(out)


def is_permutation(m: tuple[int, ...], loops: int) -> bool:
    return len(m) == loops and sorted(m) == list(range(loops))


def affine_map(m: tuple[int, ...], loops: int) -> ir.AffineMap:
    exprs = [ir.AffineDimExpr.get(d) if d >= 0 else ir.AffineConstantExpr.get(-1 - d) for d in m]
    return ir.AffineMap.get(loops, 0, exprs)


def compose(m: tuple[int, ...], t: tuple[int, ...]) -> tuple[int, ...]:
    """`m` (over a member's dims) rewritten over fused dims, where member dim j is fused dim t[j]."""
    return tuple(t[d] if d >= 0 else d for d in m)


# ---------------------------------------------------------------------------
# Generalizing named ops (in a scratch module, so the input IR is untouched).


@dataclass
class Generalized:
    """A linalg.generic equivalent to a named op; `module` keeps it alive."""

    generic: ir.Operation
    module: ir.Module | None
    outer: dict = field(default_factory=dict)
    """Scratch function argument -> the real value it stands for."""



def generalize(op: ir.Operation) -> Generalized | None:
    """The linalg.generic for a linalg op (the op itself when it is one); None if not linalg."""
    op = op.operation
    if op.name == "linalg.generic":
        return Generalized(op, None)
    if not op.name.startswith("linalg.") or op.name in ("linalg.yield", "linalg.index"):
        return None
    values = list(op.operands) + captured_values(op)
    module = ir.Module.create(loc=op.location)
    with ir.InsertionPoint(module.body), op.location:
        fn = func.FuncOp("scratch", ([v.type for v in values], [r.type for r in op.results]))
        block = fn.add_entry_block()
    remap = dict(zip(values, block.arguments))
    with ir.InsertionPoint(block), op.location:
        clone = op.clone(ip=ir.InsertionPoint(block))
        remap_operands(clone, remap)
        func.ReturnOp(list(clone.results))
    try:
        passmanager.PassManager.parse(
            "builtin.module(func.func(linalg-generalize-named-ops))"
        ).run(module.operation)
    except ir.MLIRError:
        return None
    ops = [o for o in block.operations if o.operation.name == "linalg.generic"]
    if len(ops) != 1:
        return None
    return Generalized(ops[0].operation, module, dict(zip(block.arguments, values)))



# ---------------------------------------------------------------------------
# What makes an op elementwise.


@dataclass
class Elementwise:
    """An elementwise op, seen through its (possibly generalized) linalg.generic."""

    op: ir.Operation
    gen: Generalized
    loops: int
    in_maps: list[tuple[int, ...]]
    out_maps: list[tuple[int, ...]]
    sizes: tuple[int, ...]
    flops: int
    n_inputs: int

    @property
    def elements(self) -> int:
        n = 1
        for s in self.sizes:
            n *= s
        return n

    def operand_map(self, index: int) -> tuple[int, ...]:
        """The map through which operand `index` (ins then outs) is read."""
        if index < self.n_inputs:
            return self.in_maps[index]
        return self.out_maps[index - self.n_inputs]

    def reads_operand(self, index: int) -> bool:
        """Whether operand `index` is read (an `outs` operand only if its block arg is used)."""
        if index < self.n_inputs:
            return True
        arg = self.gen.generic.regions[0].blocks[0].arguments[index]
        return any(True for _ in arg.uses)


def _static_tensor(t: ir.Type) -> bool:
    return isinstance(t, ir.RankedTensorType) and ir.RankedTensorType(t).has_static_shape


def byte_width(t: ir.Type) -> int:
    """Bytes of one element of a tensor type (or of a scalar type)."""
    if isinstance(t, ir.ShapedType):
        t = ir.ShapedType(t).element_type
    if isinstance(t, ir.IntegerType):
        return max(1, ir.IntegerType(t).width // 8)
    if isinstance(t, ir.IndexType):
        return 8
    for cls, width in ((ir.F16Type, 2), (ir.BF16Type, 2), (ir.F32Type, 4), (ir.F64Type, 8)):
        if isinstance(t, cls):
            return width
    if isinstance(t, ir.ComplexType):
        return 2 * byte_width(ir.ComplexType(t).element_type)
    return 4


def tensor_bytes(t: ir.Type) -> int:
    if not isinstance(t, ir.ShapedType):
        return byte_width(t)
    n = 1
    for s in ir.ShapedType(t).shape:
        n *= s
    return n * byte_width(t)


def classify(op: ir.Operation) -> tuple[Elementwise | None, str]:
    """(the elementwise view of `op`, "") or (None, why it is not elementwise)."""
    op = op.operation
    if not op.name.startswith("linalg.") or op.name == "linalg.yield":
        return None, op.name
    gen = generalize(op)
    if gen is None:
        return None, op.name
    g = gen.generic.opview
    what = op.name
    iterators = [str(a) for a in g.iterator_types]
    if any("parallel" not in it for it in iterators):
        return None, f"{what} (reduction)"
    loops = len(iterators)
    maps = [map_tuple(ir.AffineMapAttr(a).value) for a in g.indexing_maps]
    if any(m is None for m in maps):
        return None, f"{what} (non-projected indexing map)"
    n_in = len(g.inputs)
    for v in list(g.inputs):
        if isinstance(v.type, ir.ShapedType) and not _static_tensor(v.type):
            return None, f"{what} (dynamic or non-tensor operand)"
    for v in list(g.outputs):
        if not _static_tensor(v.type):
            return None, f"{what} (dynamic or non-tensor operand)"
    in_maps, out_maps = maps[:n_in], maps[n_in:]
    if not all(is_permutation(m, loops) for m in out_maps):
        return None, f"{what} (non-permutation output map)"
    sizes = [0] * loops
    for m, v in zip(out_maps, g.outputs):
        for k, d in enumerate(m):
            sizes[d] = ir.RankedTensorType(v.type).shape[k]
    flops = 0
    for body_op in g.regions[0].blocks[0].operations:
        name = body_op.operation.name
        dialect = name.split(".", 1)[0]
        if name in ("linalg.yield", "linalg.index"):
            continue
        if dialect not in _BODY_DIALECTS or len(body_op.operation.regions):
            return None, f"{what} ({name} in body)"
        if name != "arith.constant":
            flops += MATH_OP_FLOPS if dialect == "math" else 1
    return Elementwise(op, gen, loops, in_maps, out_maps, tuple(sizes), flops, n_in), ""


# ---------------------------------------------------------------------------
# One iteration space for a set of ops (shared with fusion-lower-to-linalg).


def solve_iteration_space(
    members: list[Elementwise], producer_of, key=lambda v: v
) -> tuple[dict, tuple[int, ...]] | None:
    """Map every member's loops onto one fused iteration space, or None when none exists.

    Returns ({op_id(member op): t}, fused loop sizes) where member dim j is fused dim t[j].
    `producer_of(value)` gives (member Elementwise, result number) for a value computed
    inside the set, else None. Producer->consumer reads inside the set must be
    permutations (and they fix the relation); members connected only through a shared
    input are related through the first permutation read of that input (siblings).
    """
    if not members:
        return None
    loops = members[0].loops
    if any(m.loops != loops for m in members):
        return None
    edges = []
    shared: dict = {}
    for c in members:
        operands = list(c.op.operands)
        for i, v in enumerate(operands[: c.n_inputs + len(c.out_maps)]):
            if not c.reads_operand(i):
                continue
            src = producer_of(v)
            m = c.operand_map(i)
            if src is not None:
                p, r = src
                if not is_permutation(m, loops):
                    return None
                edges.append((p, p.out_maps[r], c, m))
            elif i < c.n_inputs and is_permutation(m, loops):
                shared.setdefault(key(v), []).append((c, m))
    t: dict = {op_id(members[0].op): tuple(range(loops))}
    while True:
        changed = True
        while changed:
            changed = False
            for p, pm, c, cm in edges:
                tp, tc = t.get(op_id(p.op)), t.get(op_id(c.op))
                if tc is not None:
                    want = [0] * loops
                    for k in range(loops):
                        want[pm[k]] = tc[cm[k]]
                    if tp is None:
                        t[op_id(p.op)] = tuple(want)
                        changed = True
                    elif tuple(want) != tp:
                        return None
                elif tp is not None:
                    want = [0] * loops
                    for k in range(loops):
                        want[cm[k]] = tp[pm[k]]
                    t[op_id(c.op)] = tuple(want)
                    changed = True
        if len(t) == len(members):
            break
        seeded = False
        for readers in shared.values():
            known = [(c, m) for c, m in readers if op_id(c.op) in t]
            if not known:
                continue
            c0, m0 = known[0]
            for c, m in readers:
                if op_id(c.op) not in t:
                    want = [0] * loops
                    for k in range(loops):
                        want[m[k]] = t[op_id(c0.op)][m0[k]]
                    t[op_id(c.op)] = tuple(want)
                    seeded = True
                    break
            if seeded:
                break
        if not seeded:
            return None
    sizes = [-1] * loops
    for m in members:
        for j, d in enumerate(t[op_id(m.op)]):
            if sizes[d] == -1:
                sizes[d] = m.sizes[j]
            elif sizes[d] != m.sizes[j]:
                return None
    return t, tuple(sizes)
