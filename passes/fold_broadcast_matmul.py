"""fusion-fold-broadcast-matmul: turn a batch_matmul against one broadcast matrix into one matmul.

    %w3 = linalg.generic {(b, k, n) -> (k, n)} ins(%w : tensor<KxN>) -> tensor<BxKxN>   (broadcast)
    %c = linalg.batch_matmul ins(%a, %w3 : tensor<BxMxK>, tensor<BxKxN>) outs(%init : tensor<BxMxN>)
  ->
    %a2 = tensor.collapse_shape %a [[0, 1], [2]] : tensor<BxMxK> into tensor<(B*M)xK>
    %c2 = linalg.matmul ins(%a2, %w : tensor<(B*M)xK>, tensor<KxN>) outs(collapse(%init))
    %c = tensor.expand_shape %c2 [[0, 1], [2]] : tensor<(B*M)xN> into tensor<BxMxN>

torch-mlir lowers `F.linear` on a [L, B, E] tensor (torch's MultiheadAttention in-projection)
this way: B matmuls of a thin [M, K] slice against the same weight. As one matmul the shape is
[B*M, K] x [K, N], which IREE tiles well and fusion-configure-kernels can configure; the batch
form ran 2.0 ms on the H200 for TransformerEncoderLayer(768)'s in-projection. The sums are the
same sums in the same order (each output element is one K-long dot product either way).
"""

from __future__ import annotations

from dataclasses import dataclass

from braze._mlir import ir, tensor
from braze.irutil import all_ops

from .registry import ModulePass, decide, register
from .template import inline_template


@register
@dataclass(frozen=True)
class FoldBroadcastMatmulPass(ModulePass):
    name = "fusion-fold-broadcast-matmul"
    summary = "Rewrite a batch_matmul whose right operand is one broadcast matrix as a single matmul"

    def run(self, module: ir.Operation) -> None:
        found = []
        for op in all_ops(module, "linalg.batch_matmul", post_order=True):
            w = _broadcast_source(op.operands[1])
            if w is not None and _static(op):
                found.append((op, w))
        for op, w in found:
            if decide(self.name, f"batch_matmul {op.operands[0].type} x {op.operands[1].type} as one matmul"):
                _fold(op, w)


def _static(op: ir.Operation) -> bool:
    return all(isinstance(v.type, ir.RankedTensorType) and ir.RankedTensorType(v.type).has_static_shape
               for v in op.operands)


def _broadcast_source(value: ir.Value) -> ir.Value | None:
    """The [K, N] matrix a [B, K, N] value broadcasts along its first dimension, or None."""
    owner = value.owner if isinstance(value, ir.OpResult) else None
    if owner is None:
        return None
    if owner.name == "linalg.broadcast":
        dims = list(ir.DenseI64ArrayAttr(owner.attributes["dimensions"]))
        return owner.operands[0] if dims == [0] else None
    if owner.name != "linalg.generic" or len(owner.operands) != 2:
        return None
    g = owner.opview
    if any("parallel" not in str(it) for it in g.iterator_types) or len(list(g.iterator_types)) != 3:
        return None
    in_map, out_map = (ir.AffineMapAttr(m).value for m in g.indexing_maps)
    if str(in_map) != "(d0, d1, d2) -> (d1, d2)" or str(out_map) != "(d0, d1, d2) -> (d0, d1, d2)":
        return None
    body = [o.operation for o in owner.regions[0].blocks[0].operations]
    if len(body) != 1 or body[0].name != "linalg.yield" or body[0].operands[0] != owner.regions[0].blocks[0].arguments[0]:
        return None
    return owner.operands[0]


def _matmul(a: ir.Value, b: ir.Value, init: ir.Value, before: ir.Operation) -> ir.Value:
    """A linalg.matmul before `before`, from parsed IR (see template.py).

    The Python builder `linalg.matmul(...)` makes an op whose bytecode crashed IREE 3.13's
    reader (segmentation fault in iree-compile, in process); a parsed op serializes the way
    IREE expects.
    """
    ta, tb, tc = (str(v.type) for v in (a, b, init))
    text = (f"func.func @f(%a: {ta}, %b: {tb}, %c: {tc}) -> {tc} {{\n"
            f"  %0 = linalg.matmul ins(%a, %b : {ta}, {tb}) outs(%c : {tc}) -> {tc}\n"
            f"  return %0 : {tc}\n}}")
    return inline_template(text, [a, b, init], before)


def _fold(op: ir.Operation, w: ir.Value) -> None:
    a, _, init = op.operands
    at, it = ir.RankedTensorType(a.type), ir.RankedTensorType(init.type)
    b, m, k = at.shape
    n = it.shape[2]
    i64 = ir.IntegerType.get_signless(64)
    merge = ir.ArrayAttr.get([ir.ArrayAttr.get([ir.IntegerAttr.get(i64, 0), ir.IntegerAttr.get(i64, 1)]),
                              ir.ArrayAttr.get([ir.IntegerAttr.get(i64, 2)])])
    with op.location, ir.InsertionPoint(op):
        a2 = tensor.CollapseShapeOp(ir.RankedTensorType.get([b * m, k], at.element_type), a, merge).result
        init2 = tensor.CollapseShapeOp(ir.RankedTensorType.get([b * m, n], it.element_type), init, merge).result
        product = _matmul(a2, w, init2, op)
        out = tensor.ExpandShapeOp(it, product, merge, [], [b, m, n]).result
    op.results[0].replace_all_uses_with(out)
    op.erase()
