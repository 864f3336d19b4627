"""Reading GPU kernels off the IR: a matmul's shape and signature, an elementwise kernel's
signature, and which operands torch-mlir fed through casts or transposes.

The shared vocabulary of the GPU passes and the tuner (`braze tune` compiles a model and asks
for the signatures of the kernels braze configured).
"""

from __future__ import annotations

from braze._mlir import ir
from braze.irutil import all_ops

from .configs import CONFIG_ATTRS, KERNEL_CONFIG_ATTR, MATMUL_CONFIG_ATTR, ElementwiseSignature, MatmulSignature
from .cost_model import MATMUL_CANDIDATES

MATMULS = ("linalg.matmul", "linalg.batch_matmul")

def owner(v: ir.Value):
    """The op that defines v, None for a block argument."""
    return v.owner if isinstance(v, ir.OpResult) else None


def element_type(v: ir.Value) -> str:
    return str(ir.ShapedType(v.type).element_type)


def float_literal(v: ir.Value) -> float | None:
    """The value of a float arith.constant v, else None."""
    o = owner(v)
    if o is None or o.name != "arith.constant":
        return None
    try:
        return float(ir.FloatAttr(o.attributes["value"]).value)
    except (ValueError, TypeError):
        return None


def int_literal(v: ir.Value) -> int | None:
    """The value of an integer arith.constant v, else None."""
    o = owner(v)
    if o is None or o.name != "arith.constant":
        return None
    try:
        return ir.IntegerAttr(o.attributes["value"]).value
    except (ValueError, TypeError):
        return None


def map_results(map_text: str) -> list[str]:
    """The results of an affine map's text: 'affine_map<(d0, d1) -> (d1, 0)>' -> ['d1', '0']."""
    body = map_text.split("->", 1)[1].strip().removesuffix(">").strip().strip("()").replace(" ", "")
    return [d for d in body.split(",") if d]


def matmul_shape(op: ir.Operation) -> MatmulSignature | None:
    """The signature of a static (batch) matmul whose element type braze tiles, else None (also
    for one with a zero-size dimension: it has no work to tile, and padding it made an out-of-bounds
    extract_slice)."""
    if op.name not in MATMULS:
        return None
    lhs, rhs = list(op.operands)[:2]
    a, b = ir.RankedTensorType(lhs.type), ir.RankedTensorType(rhs.type)
    if not (a.has_static_shape and b.has_static_shape):
        return None
    element = source_element_type(lhs)
    if element not in MATMUL_CANDIDATES or source_element_type(rhs) != element:
        return None
    batched = op.name == "linalg.batch_matmul"
    if batched:
        (batch, m, k), n = a.shape, b.shape[2]
    else:
        (m, k), n, batch = a.shape, b.shape[1], 1
    if 0 in (batch, m, n, k):
        return None
    return MatmulSignature(batch, m, n, k, element, batched, rhs_transposed(op))


def source_element_type(value: ir.Value) -> str:
    """The element type a matmul operand really has: torch-mlir feeds bf16 matmuls through an
    `arith.extf` generic to f32, which IREE fuses back into a bf16 MMA matmul."""
    owner = value.owner if isinstance(value, ir.OpResult) else None
    if owner is not None and owner.name == "linalg.generic" and is_extf(owner):
        return str(ir.ShapedType(owner.operands[0].type).element_type)
    return str(ir.ShapedType(value.type).element_type)


def rhs_transposed(op: ir.Operation) -> bool:
    """Whether the matmul's right operand is a linalg.transpose swapping its last two dimensions
    (seen through torch-mlir's bf16 -> f32 extf generic): IREE folds it into the matmul, whose
    tiles then read B along K."""
    value = list(op.operands)[1]
    owner = value.owner if isinstance(value, ir.OpResult) else None
    if owner is not None and owner.name == "linalg.generic" and is_extf(owner):
        value = owner.operands[0]
        owner = value.owner if isinstance(value, ir.OpResult) else None
    if owner is None or owner.name != "linalg.transpose":
        return False
    perm = list(ir.DenseI64ArrayAttr(owner.attributes["permutation"]))
    return perm[-2:] == [len(perm) - 1, len(perm) - 2] and perm[:-2] == list(range(len(perm) - 2))


def is_extf(op: ir.Operation) -> bool:
    """A one-input generic whose body is only `arith.extf` (torch-mlir's upcast of an operand)."""
    body = [o.operation.name for o in op.regions[0].blocks[0].operations]
    return len(op.operands) == 2 and body == ["arith.extf", "linalg.yield"]


def elementwise_signature(op: ir.Operation) -> ElementwiseSignature:
    """The signature of a 1-D elementwise generic: element count, operand dtypes and body ops."""
    body = op.regions[0].blocks[0]
    ops = tuple(o.operation.name.split(".", 1)[1] for o in body.operations if o.operation.name != "linalg.yield")
    types = tuple(str(ir.ShapedType(v.type).element_type) for v in op.operands)
    return ElementwiseSignature(ir.ShapedType(op.results[0].type).shape[0], types, ops)


def configured_signatures(module_op: ir.Operation) -> list[str]:
    """Signatures of the 1-D elementwise kernels fusion-configure-kernels configured in a module."""
    return [elementwise_signature(op).text() for op in all_ops(module_op, "linalg.generic")
            if KERNEL_CONFIG_ATTR in op.attributes and ir.ShapedType(op.results[0].type).rank == 1]


def configured_matmul_signatures(module_op: ir.Operation, configured_only: bool = True) -> list[str]:
    """Signatures of the matmuls fusion-configure-kernels configured in a module (or of every
    matmul it could tile, configured_only=False), in order, without repeats."""
    found = []
    for op in all_ops(module_op, MATMULS):
        shape = matmul_shape(op)
        if shape is not None and (MATMUL_CONFIG_ATTR in op.attributes or not configured_only):
            found.append(shape.text())
    return list(dict.fromkeys(found))


def kernel_configs(module_op: ir.Operation) -> list[dict]:
    """The configurations the GPU passes attached, as the report lists them: op, operand types, text."""
    found = []
    for op in all_ops(module_op):
        for attr in CONFIG_ATTRS:
            if attr in op.attributes:
                shape = " x ".join(str(v.type) for v in list(op.operands)[:2])
                found.append({"op": op.name, "shape": shape, "config": ir.StringAttr(op.attributes[attr]).value})
    return found


def conv_ints(op: ir.Operation, name: str) -> list[int]:
    if name not in op.attributes:
        return [1, 1]
    return [int(v) for v in ir.DenseIntElementsAttr(op.attributes[name])]


NHWC_CONV = "linalg.conv_2d_nhwc_fhwc"
"""The convolution fusion-channels-last makes of an NCHW one (input [N, H, W, C], weight [F, KH,
KW, C], result [N, OH, OW, F])."""


def zero_padding(x: ir.Value, nhwc: bool = False):
    """(unpadded tensor, (top, left)) when `x` is a static tensor.pad with zeros of the spatial
    dimensions only (torch-mlir's form of Conv2d's padding; H and W are dimensions 1 and 2 of an
    NHWC tensor), else None."""
    pad = x.owner if isinstance(x, ir.OpResult) else None
    if pad is None or pad.name != "tensor.pad" or "static_low" not in pad.attributes:
        return None
    low = list(ir.DenseI64ArrayAttr(pad.attributes["static_low"]))
    high = list(ir.DenseI64ArrayAttr(pad.attributes["static_high"]))
    spatial = (1, 2) if nhwc else (2, 3)
    if len(low) != 4 or any(low[i] or high[i] for i in range(4) if i not in spatial) or min(low + high) < 0:
        return None
    body = [o.operation for o in pad.regions[0].blocks[0].operations]
    if len(body) != 1 or body[0].name != "tensor.yield":
        return None
    value = body[0].operands[0]
    const = value.owner if isinstance(value, ir.OpResult) else None
    if const is None or const.name != "arith.constant":
        return None
    attr = const.attributes["value"]
    if not isinstance(attr, ir.FloatAttr) or ir.FloatAttr(attr).value != 0.0:
        return None
    source = pad.operands[0]
    if not ir.RankedTensorType(source.type).has_static_shape:
        return None
    return source, (low[spatial[0]], low[spatial[1]])


def conv_init_bias(init: ir.Value, nhwc: bool = False) -> tuple[str, ir.Value | None, ir.Operation | None] | None:
    """What a convolution accumulates onto: ('zero', None, fill) for a zero fill, ('bias', the
    [F] bias, broadcast) for torch-mlir's broadcast of a Conv2d bias (along dimension 1, or 3 of
    an NHWC result), else None."""
    owner = init.owner if isinstance(init, ir.OpResult) else None
    if owner is None:
        return None
    if owner.name == "linalg.fill":
        c = owner.operands[0].owner if isinstance(owner.operands[0], ir.OpResult) else None
        if c is not None and c.name == "arith.constant":
            try:
                if ir.FloatAttr(c.attributes["value"]).value == 0.0:
                    return "zero", None, owner
            except (ValueError, TypeError):
                return None
        return None
    if owner.name == "linalg.broadcast":
        dims = list(ir.DenseI64ArrayAttr(owner.attributes["dimensions"]))
        src = owner.operands[0]
        if dims == ([0, 1, 2] if nhwc else [0, 2, 3]) and ir.RankedTensorType(src.type).rank == 1:
            return "bias", src, owner
    return None


def generated_conv(op: ir.Operation, element_types: tuple[str, ...], name: str = "linalg.conv_2d_nchw_fchw") -> bool:
    """Whether fusion-generate-kernels takes this convolution (`name`: one group, or
    linalg.depthwise_conv_2d_nchw_chw) as a generated kernel (static NCHW, operands of one of
    `element_types`, accumulating in f32 from zero or a bias); fusion-conv-to-matmul leaves
    such convolutions alone."""
    if op.name != name:
        return False
    types = [v.type for v in op.operands]
    if not all(isinstance(t, ir.RankedTensorType) and ir.RankedTensorType(t).has_static_shape for t in types):
        return False
    tx, tw, to = (str(ir.RankedTensorType(t).element_type) for t in types)
    return tx == tw and tx in element_types and to == "f32" and \
        conv_init_bias(op.operands[2], name == NHWC_CONV) is not None
