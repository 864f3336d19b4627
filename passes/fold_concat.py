"""fusion-fold-concat: a concatenation of equal slices of tensors (or of elementwise functions of
such slices) becomes one elementwise linalg.generic that reads each piece where it lies.

rotate_half, as Llama-family models write RoPE (`torch.cat((-x[..., 32:], x[..., :32]), -1)`):

    %a = tensor.extract_slice %x[0, 0, 0, 0] [1, 8, 256, 32] [1, 1, 1, 1]
    %b = tensor.extract_slice %x[0, 0, 0, 32] [1, 8, 256, 32] [1, 1, 1, 1]
    %n = linalg.generic {parallel} ins(%b) { negf }
    %c = tensor.concat dim(3) %n, %a : (...x32xf32, ...x32xf32) -> tensor<1x8x256x64xf32>
  ->
    %xe = tensor.expand_shape %x [[0], [1], [2], [3, 4]] : ...x64xf32 into ...x2x32xf32
    %g = linalg.generic {parallel x5} ins(%xe [block 1], %xe [block 0])      // block: a constant in
         { %i = linalg.index 3; select(%i == 0, negf(%in0), %in1) }       // the map, per piece
         -> tensor<1x8x256x2x32xf32>
    %c = tensor.collapse_shape %g [[0], [1], [2], [3, 4]] into tensor<1x8x256x64xf32>

IREE 3.13 turns a `tensor.concat` into one copy per piece into the result (on CUDA a
`slow_memcpy` dispatch each, bench/results/copy-audit-sm90-2026-12-07.txt), and the slices and
the negation into dispatches of their own: q's and k's RoPE in a decoder layer took a transpose,
a negation, two copies and the multiply-add, five launches each. As one generic it is an
elementwise op IREE fuses with the transpose before it and the multiply-add after it.

The same holds for a concat of computed tensors (`torch.cat((a(x), b(x)), -1)`: two
slow_memcpy dispatches after the producers, and the consumer's own): each piece is read whole by
a map without the block dimension, and the one generic joins the producers' and the consumer's
dispatch where IREE fuses them.

Concats it takes (anything else is left as it is): 2 to MAX_PIECES operands of one static size
`s` along the concat dimension, which is not the outermost of the result (there the pieces are
whole blocks of it, which IREE writes in place or copies by DMA). Each operand is
  - a `tensor.extract_slice` of a tensor, unit strides, no rank change, whole along every other
    dimension, at an offset along the concat dimension that is a multiple of `s` in a dimension
    that is one too;
  - a `linalg.generic` with one result, all loops parallel, whose body does not read its output
    or its indices, whose inputs are such slices (read with identity maps) or tensors it reads
    without the concat dimension (broadcasts: maps of dims and constants), with no other user
    than the concat: its body is cloned into the new generic; or
  - anything else of static shape, read whole.
Every output element reads one value of each piece (the select keeps one), hence the limit.
"""

from __future__ import annotations

from dataclasses import dataclass

from braze._mlir import ir
from braze.irutil import all_ops, remap_operands

from .registry import ModulePass, decide, register
from .elementwise import map_tuple
from .template import inline_template, map_text


@register
@dataclass(frozen=True)
class FoldConcatPass(ModulePass):
    name = "fusion-fold-concat"
    summary = ("Rewrite a concat of 2-4 equal pieces (slices, elementwise functions of slices as rotate_half's "
               "cat(-x2, x1), or computed tensors) into one elementwise generic that reads each piece where it "
               "lies, which IREE fuses with its neighbours instead of copying each piece")

    def run(self, module: ir.Operation) -> None:
        for op in all_ops(module, "tensor.concat"):
            pieces = _pieces(op)
            if pieces is None:
                continue
            t = ir.RankedTensorType(op.results[0].type)
            if not decide(self.name, f"concat of {len(pieces)} pieces into {t} as one elementwise generic"):
                continue
            with op.location:
                _rewrite(op, pieces)


@dataclass
class _Slice:
    source: ir.Value
    block: int
    """Which block of size s along the concat dimension the slice reads."""


@dataclass
class _Whole:
    value: ir.Value
    """A piece read as it is (a computed tensor, an argument): every block of the concat reads it
    at its own position within the block, and the select keeps it in its block only."""


@dataclass
class _Piece:
    generic: ir.Operation | None
    """The elementwise generic computing the piece, or None for a bare slice."""
    inputs: list
    """Per input of the generic (or the one piece): a _Slice, a _Whole, or (value, its map as an
    elementwise.map_tuple over the concat's rank, without the concat dimension) for a broadcast read."""


def _static(t) -> ir.RankedTensorType | None:
    if not isinstance(t, ir.RankedTensorType):
        return None
    t = ir.RankedTensorType(t)
    return t if t.has_static_shape else None


def _ints(attr) -> list[int]:
    return [int(x) for x in ir.DenseI64ArrayAttr(attr)]


def _slice(value: ir.Value, dim: int, size: int) -> _Slice | None:
    """The slice `value` is (see the module's docstring), or None."""
    if not isinstance(value, ir.OpResult) or value.owner.name != "tensor.extract_slice":
        return None
    op = value.owner
    if len(op.operands) != 1:  # dynamic offsets, sizes or strides
        return None
    src, res = _static(op.operands[0].type), _static(op.results[0].type)
    if src is None or res is None or src.rank != res.rank:
        return None
    offsets, sizes = _ints(op.attributes["static_offsets"]), _ints(op.attributes["static_sizes"])
    strides = _ints(op.attributes["static_strides"])
    if any(s != 1 for s in strides):
        return None
    for d in range(src.rank):
        if d == dim:
            if sizes[d] != size or offsets[d] % size or src.shape[d] % size:
                return None
        elif offsets[d] != 0 or sizes[d] != src.shape[d]:
            return None
    return _Slice(op.operands[0], offsets[dim] // size)


def _piece(value: ir.Value, dim: int, size: int, rank: int) -> _Piece | None:
    s = _slice(value, dim, size)
    if s is not None:
        return _Piece(None, [s])
    if not isinstance(value, ir.OpResult) or value.owner.name != "linalg.generic":
        return None
    g = value.owner
    if len(g.results) != 1 or sum(1 for _ in g.results[0].uses) != 1:
        return None
    if not all("parallel" in str(k) for k in g.attributes["iterator_types"]):
        return None
    maps = [ir.AffineMapAttr(m).value for m in g.attributes["indexing_maps"]]
    n_in = len(g.operands) - 1
    if len(maps) != len(g.operands) or maps[-1] != ir.AffineMap.get_identity(rank) or n_in == 0:
        return None
    body = g.regions[0].blocks[0]
    if any(True for _ in body.arguments[n_in].uses):
        return None  # reads its output
    if any(o.name == "linalg.index" for o in all_ops(g)[1:]):
        return None  # index arithmetic would have to be rewritten for the split dimension
    inputs = []
    for v, m in zip(list(g.operands)[:n_in], maps[:n_in]):
        if m == ir.AffineMap.get_identity(rank):
            s = _slice(v, dim, size)
            if s is None:
                return None
            inputs.append(s)
        elif m.n_dims == rank and (t := map_tuple(m)) is not None and dim not in t:
            inputs.append((v, t))
        else:
            return None
    return _Piece(g, inputs)


def _pieces(op: ir.Operation) -> list[_Piece] | None:
    t = _static(op.results[0].type)
    if t is None or len(op.operands) < 2:
        return None
    dim = int(ir.IntegerAttr(op.attributes["dim"]).value)
    types = [_static(v.type) for v in op.operands]
    if any(x is None for x in types):
        return None
    size = types[0].shape[dim]
    if size == 0 or any(x.shape[dim] != size for x in types):
        return None
    if len(op.operands) > MAX_PIECES or all(n == 1 for n in t.shape[:dim]):
        return None  # (pieces that are whole blocks of the result: IREE writes them in place or by DMA)
    pieces = [_piece(v, dim, size, t.rank) or _Piece(None, [_Whole(v)]) for v in op.operands]
    if all(p.generic is None and isinstance(p.inputs[0], _Slice) for p in pieces) \
            and len({p.inputs[0].source for p in pieces}) == 1 \
            and [p.inputs[0].block for p in pieces] == list(range(len(pieces))):
        return None  # the source itself, in order: canonicalization's business
    return pieces


MAX_PIECES = 4
"""Every output element reads one value of each piece (the select keeps one): more pieces than
this would read more than they save."""


def _rewrite(op: ir.Operation, pieces: list[_Piece]) -> None:
    t = ir.RankedTensorType(op.results[0].type)
    dim = int(ir.IntegerAttr(op.attributes["dim"]).value)
    rank, n = t.rank, len(pieces)
    size = t.shape[dim] // n
    element = str(t.element_type)
    loops = rank + 1

    def loop(d: int) -> str:  # the loop of dimension d of the concat's rank (d != dim)
        return f"d{d if d < dim else d + 1}"

    args: list[ir.Value] = []
    arg_of: dict = {}

    def arg(v: ir.Value) -> str:
        if v not in arg_of:
            arg_of[v] = len(args)
            args.append(v)
        return f"%a{arg_of[v]}"

    lines, ins = [], []  # ins: (operand text, type text, map text)
    expanded: dict = {}
    split_shape = list(t.shape[:dim]) + [n, size] + list(t.shape[dim + 1:])
    for p in pieces:
        for i in p.inputs:
            if isinstance(i, _Slice):
                src = ir.RankedTensorType(i.source.type)
                if i.source not in expanded:
                    shape = list(src.shape[:dim]) + [src.shape[dim] // size, size] + list(src.shape[dim + 1:])
                    et = ir.RankedTensorType.get(shape, src.element_type)
                    groups = [[d] for d in range(dim)] + [[dim, dim + 1]] + [[d + 1] for d in range(dim + 1, rank)]
                    name = f"%x{len(expanded)}"
                    lines.append(f"  {name} = tensor.expand_shape {arg(i.source)} {groups} output_shape "
                                 f"{shape} : {src} into {et}")
                    expanded[i.source] = (name, str(et))
                name, et = expanded[i.source]
                results = [f"d{d}" for d in range(dim)] + [str(i.block), f"d{dim + 1}"] + \
                          [f"d{d + 1}" for d in range(dim + 1, rank)]
                ins.append((name, et, map_text(loops, results)))
            elif isinstance(i, _Whole):
                results = [loop(d) if d != dim else f"d{dim + 1}" for d in range(rank)]
                ins.append((arg(i.value), str(i.value.type), map_text(loops, results)))
            else:
                v, read = i
                results = [loop(d) if d >= 0 else str(-1 - d) for d in read]
                ins.append((arg(v), str(v.type), map_text(loops, results)))
    out_t = ir.RankedTensorType.get(split_shape, t.element_type)
    identity = map_text(loops, [f"d{d}" for d in range(loops)])
    parallel = ", ".join(['"parallel"'] * loops)
    block_args = [f"%in{k}: {_element(et_)}" for k, (_, et_, _) in enumerate(ins)]
    body, k = [], 0
    values = []
    for j, p in enumerate(pieces):
        if p.generic is None:
            values.append(f"%in{k}")
        else:
            body.append(f"    %p{j} = builtin.unrealized_conversion_cast to {element}")
            values.append(f"%p{j}")
        k += len(p.inputs)
    body.append(f"    %i = linalg.index {dim} : index")
    v = values[-1]
    for j in range(n - 2, -1, -1):
        body.append(f"    %c{j} = arith.constant {j} : index")
        body.append(f"    %e{j} = arith.cmpi eq, %i, %c{j} : index")
        body.append(f"    %s{j} = arith.select %e{j}, {values[j]}, {v} : {element}")
        v = f"%s{j}"
    groups = [[d] for d in range(dim)] + [[dim, dim + 1]] + [[d + 1] for d in range(dim + 1, rank)]
    sig = ", ".join(f"%a{i}: {v_.type}" for i, v_ in enumerate(args))
    text = "\n".join([
        f"func.func @f({sig}) -> {t} {{",
        *lines,
        f"  %o = tensor.empty() : {out_t}",
        f"  %g = linalg.generic {{indexing_maps = [{', '.join(m for _, _, m in ins)}, {identity}], "
        f"iterator_types = [{parallel}]}} ins({', '.join(x for x, _, _ in ins)} : {', '.join(y for _, y, _ in ins)}) "
        f"outs(%o : {out_t}) {{",
        f"  ^bb0({', '.join(block_args)}, %out: {element}):",
        *body,
        f"    linalg.yield {v} : {element}",
        f"  }} -> {out_t}",
        f"  %r = tensor.collapse_shape %g {groups} : {out_t} into {t}",
        f"  return %r : {t}",
        "}",
    ])
    result = inline_template(text, args, op)
    generic = result.owner.operands[0].owner
    _fill_bodies(generic, pieces)
    operands = list(op.operands)
    op.results[0].replace_all_uses_with(result)
    op.erase()
    for p, v in zip(pieces, operands):
        if p.generic is not None:  # the concat was its only reader
            sources = list(p.generic.operands)
            p.generic.erase()
            _erase_dead(sources)
        elif isinstance(p.inputs[0], _Slice):
            _erase_dead([v])


def _element(tensor_type: str) -> str:
    return str(ir.RankedTensorType(ir.Type.parse(tensor_type)).element_type)


def _fill_bodies(generic: ir.Operation, pieces: list[_Piece]) -> None:
    """Clone each elementwise piece's body into the new generic where its placeholder stands,
    its block arguments bound to the new generic's arguments for its inputs."""
    block = generic.regions[0].blocks[0]
    holders = [o for o in all_ops(generic) if o.name == "builtin.unrealized_conversion_cast"]
    k, h = 0, 0
    for p in pieces:
        if p.generic is not None:
            holder = holders[h]
            h += 1
            body = p.generic.regions[0].blocks[0]
            mapping = {body.arguments[a]: block.arguments[k + a] for a in range(len(p.inputs))}
            result = None
            with ir.InsertionPoint(holder):
                for o in body.operations:
                    o = o.operation
                    if o.name == "linalg.yield":
                        result = mapping.get(o.operands[0], o.operands[0])
                        break
                    clone = o.clone()
                    remap_operands(clone, mapping)
                    for old, new in zip(o.results, clone.results):
                        mapping[old] = new
            holder.results[0].replace_all_uses_with(result)
            holder.erase()
        k += len(p.inputs)


def _erase_dead(values: list) -> None:
    """Erase the extract_slices among `values`'s producers that nothing reads any more."""
    for v in values:
        if isinstance(v, ir.OpResult) and v.owner.name == "tensor.extract_slice" \
                and not any(True for _ in v.uses):
            v.owner.erase()
