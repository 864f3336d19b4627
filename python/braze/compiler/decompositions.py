"""Decompositions braze adds to torch-mlir's table: fused aten ops of PyTorch's fast paths,
written out in the ops they fuse.

`nn.TransformerEncoderLayer` in eval mode under no_grad (as torch.compile's Dynamo traces it for
inference) calls `aten._transformer_encoder_layer_fwd`, one op torch-mlir cannot lower; as
standard ops it is the layer's own math: self-attention (one in-projection, heads, scaled dot
products, out-projection), two residual layer norms, and the feed-forward block.

`aten.gelu(approximate='tanh')` is written out too: torch-mlir's lowering of it is inexact; and
`aten.log10`, which IREE's CPU runtime library lacks.
"""

from __future__ import annotations

import math


def transformer_encoder_layer_fwd(src, embed_dim, num_heads, qkv_weight, qkv_bias, proj_weight, proj_bias,
                                  use_gelu, norm_first, eps, norm_weight_1, norm_bias_1, norm_weight_2,
                                  norm_bias_2, ffn_weight_1, ffn_bias_1, ffn_weight_2, ffn_bias_2, mask=None,
                                  mask_type=None):
    import torch
    import torch.nn.functional as F

    if mask is not None or src.dim() != 3:
        return NotImplemented  # masks and nested tensors keep the fused op (and its error)
    batch, seq, _ = src.shape
    head = embed_dim // num_heads

    def attention(x):
        q, k, v = F.linear(x, qkv_weight, qkv_bias).chunk(3, dim=-1)
        q, k, v = (t.reshape(batch, seq, num_heads, head).transpose(1, 2) for t in (q, k, v))
        out = F.scaled_dot_product_attention(q, k, v)
        return F.linear(out.transpose(1, 2).reshape(batch, seq, embed_dim), proj_weight, proj_bias)

    def feed_forward(x):
        hidden = F.linear(x, ffn_weight_1, ffn_bias_1)
        hidden = F.gelu(hidden) if use_gelu else torch.relu(hidden)
        return F.linear(hidden, ffn_weight_2, ffn_bias_2)

    norm1 = lambda x: F.layer_norm(x, (embed_dim,), norm_weight_1, norm_bias_1, eps)  # noqa: E731
    norm2 = lambda x: F.layer_norm(x, (embed_dim,), norm_weight_2, norm_bias_2, eps)  # noqa: E731
    if norm_first:
        x = src + attention(norm1(src))
        return x + feed_forward(norm2(x))
    x = norm1(src + attention(src))
    return norm2(x + feed_forward(x))


def gelu(x, approximate: str = "none"):
    """GELU's tanh form written out: torch-mlir 20261001 lowers aten.gelu(approximate='tanh')
    with 0.797724 for sqrt(2/pi) = 0.7978846 (and x**3 as math.fpowi), which put a relative
    error of 5e-5 into every result in float32, 100x eager's (braze.testing.conformance's
    gelu_tanh). The exact form keeps torch-mlir's own lowering."""
    import torch

    if approximate != "tanh":
        return NotImplemented
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * (x * x * x))))


def log10(x):
    """log(x) / ln(10): IREE 3.13's CPU code generator emits a call to log10f that its runtime
    library lacks ("undefined symbol: log10f", torch-mlir's ElementwiseLog10Module), in float32 too."""
    import torch

    return torch.log(x) * (1.0 / math.log(10.0))


def _integer(x) -> bool:
    import torch

    if isinstance(x, torch.Tensor):
        return not x.dtype.is_floating_point and not x.dtype.is_complex and x.dtype != torch.bool
    return isinstance(x, int) and not isinstance(x, bool)


def _floor_divide(a, b):
    """Integer floor division as truncating division and a correction: torch-mlir 20261001
    lowers it through floating point, so int64 quotients above 2^53 came back wrong
    (9223372036854775806 // 2^30 gave 8589934592 for 8589934591; torch-mlir's
    ElementwiseDivScalarRoundingModeFloorInt64Module)."""
    import torch

    q = torch.div(a, b, rounding_mode="trunc")
    inexact = q * b != a
    if isinstance(b, torch.Tensor):
        return q - (inexact & ((a < 0) != (b < 0))).to(q.dtype)
    return q - (inexact & ((a >= 0) if b < 0 else (a < 0))).to(q.dtype)


def _int64_operands(a, b) -> bool:
    """Both integers, at least one an int64 tensor (narrower ones are exact through float64, and
    fxfix computes 8-bit ones in int32)."""
    import torch

    return _integer(a) and _integer(b) and any(isinstance(v, torch.Tensor) and v.dtype == torch.int64 for v in (a, b)) \
        and isinstance(a, torch.Tensor)


def div_mode(a, b, *, rounding_mode=None):
    if rounding_mode != "floor" or not _int64_operands(a, b):
        return NotImplemented
    return _floor_divide(a, b)


def floor_divide(a, b):
    if not _int64_operands(a, b):
        return NotImplemented
    return _floor_divide(a, b)


def threshold_backward(grad_output, self, threshold):
    """where(self <= threshold, 0, grad) in the promoted dtype: torch-mlir's lowering keeps the
    gradient's dtype, an int64 gradient with a float32 input came back int64 where eager's
    result is float32 (ThresholdBackward2dMixedModule)."""
    import torch

    dtype = torch.result_type(grad_output, self)
    if dtype == grad_output.dtype:
        return NotImplemented
    return torch.where(self <= threshold, 0, grad_output).to(dtype)


def isfinite(x):
    """|x| < inf (false for NaN and +-inf): torch-mlir 20261001 cannot lower aten.isfinite."""
    import torch

    if x.dtype.is_complex:
        return NotImplemented
    if not x.dtype.is_floating_point:
        return torch.ones_like(x, dtype=torch.bool)
    return torch.abs(x) < math.inf


def _float(x) -> bool:
    import torch

    return isinstance(x, torch.Tensor) and x.dtype.is_floating_point


def clamp(x, min=None, max=None):
    """An integer tensor clamped to float bounds is promoted first, as eager does: torch-mlir
    20261001 compares the integers with arith.cmpf (ElementwiseClampIntToFloatModule). (NaN
    through float clamps: frontend._keep_nan_in_clamps.)"""
    import torch

    floats = [b for b in (min, max) if isinstance(b, float)]
    if not (_integer(x) and floats):
        return NotImplemented
    return torch.clamp(x.to(torch.result_type(x, floats[0])), min, max)


def hardtanh(x, min_val=-1.0, max_val=1.0):
    """As clamp (relu6 too): torch-mlir 20261001 lowers hardtanh as maximum and minimum with
    0-d constant tensors, `select(x > lo, x, lo)`, which turns NaN into the bound; its clamp
    keeps NaN once frontend._keep_nan_in_clamps has ordered its compares, and compares with
    scalars (a generated CUDA kernel's epilogue takes it)."""
    import torch

    return torch.clamp(x, min_val, max_val) if _float(x) else NotImplemented


def _nan_first(x, y, pick):
    """pick(x, y) where neither is NaN, else NaN: torch-mlir 20261001 lowers maximum as
    select(x > y, x, y), which returns y when x is NaN (maximum(nan, 1) gave 1)."""
    import torch

    return torch.where(torch.isnan(x), x, torch.where(pick, x, y))


def maximum(x, y):
    if not (_float(x) and _float(y)) or x.dtype != y.dtype:
        return NotImplemented
    return _nan_first(x, y, x > y)


def minimum(x, y):
    if not (_float(x) and _float(y)) or x.dtype != y.dtype:
        return NotImplemented
    return _nan_first(x, y, x < y)


def clamp_tensor(x, min=None, max=None):
    """clamp with tensor bounds as maximum and minimum (NaN in x or a bound gives NaN, as in eager)."""
    import torch

    if not _float(x) or not all(isinstance(b, torch.Tensor) and b.dtype == x.dtype for b in (min, max) if b is not None):
        return NotImplemented
    if min is not None:
        x = maximum(x, min)
    if max is not None:
        x = minimum(x, max)
    return x


def avg_pool2d(x, kernel_size, stride=(), padding=0, ceil_mode=False, count_include_pad=True, divisor_override=None):
    """An unbatched (C, H, W) input pooled as a batch of one: torch-mlir 20261001 lowers the
    4-D form only (AvgPool2dCHWModule)."""
    import torch

    if x.dim() != 3:
        return NotImplemented
    return torch.ops.aten.avg_pool2d.default(x.unsqueeze(0), kernel_size, stride, padding, ceil_mode,
                                             count_include_pad, divisor_override).squeeze(0)


def conv_tbc(x, weight, bias, pad=0):
    """conv_tbc (time, batch, channels) as conv1d on (batch, channels, time): torch-mlir
    20261001's lowering returns the wrong shape (ConvTbcModule)."""
    import torch

    out = torch.nn.functional.conv1d(x.permute(1, 2, 0), weight.permute(2, 1, 0), bias, padding=pad)
    return out.permute(2, 0, 1)


def _arg_extreme(x, dim, keepdim, largest: bool):
    """The index of the first maximum (minimum) along `dim`, or of the first NaN where there is
    one, as in eager: torch-mlir 20261001's comparisons skip NaN (argmax of [0.1, nan, 0.5] gave
    2 for 1; max(dim).indices likewise). The first True of a uint8 mask, by an integer max."""
    import torch

    nan = torch.isnan(x)
    extreme = (torch.amax if largest else torch.amin)(x, dim, keepdim=True)  # NaN where the row has one
    hit = torch.where(torch.any(nan, dim, keepdim=True), nan, x == extreme)
    out = torch.max(hit.to(torch.uint8), dim, keepdim=True).indices
    return out if keepdim else out.squeeze(dim)


def argmax(x, dim=None, keepdim=False):
    if not _float(x):
        return NotImplemented
    if dim is None:  # over all elements; keepdim keeps every dimension, as size 1
        out = _arg_extreme(x.reshape(-1), 0, False, True)
        return out.reshape([1] * x.dim()) if keepdim else out
    return _arg_extreme(x, dim, keepdim, True)


def argmin(x, dim=None, keepdim=False):
    if not _float(x):
        return NotImplemented
    if dim is None:  # over all elements; keepdim keeps every dimension, as size 1
        out = _arg_extreme(x.reshape(-1), 0, False, False)
        return out.reshape([1] * x.dim()) if keepdim else out
    return _arg_extreme(x, dim, keepdim, False)


def max_dim(x, dim, keepdim=False):
    import torch

    if not _float(x):
        return NotImplemented
    return torch.amax(x, dim, keepdim=keepdim), _arg_extreme(x, dim, keepdim, True)


def min_dim(x, dim, keepdim=False):
    import torch

    if not _float(x):
        return NotImplemented
    return torch.amin(x, dim, keepdim=keepdim), _arg_extreme(x, dim, keepdim, False)


def extra_decompositions() -> dict:
    import torch

    aten = torch.ops.aten
    return {aten._transformer_encoder_layer_fwd.default: transformer_encoder_layer_fwd, aten.gelu.default: gelu,
            aten.log10.default: log10, aten.div.Tensor_mode: div_mode, aten.div.Scalar_mode: div_mode,
            aten.floor_divide.default: floor_divide, aten.threshold_backward.default: threshold_backward,
            aten.isfinite.default: isfinite, aten.clamp.default: clamp, aten.clamp.Tensor: clamp_tensor,
            aten.hardtanh.default: hardtanh, aten.maximum.default: maximum, aten.minimum.default: minimum,
            aten.argmax.default: argmax, aten.argmin.default: argmin,
            aten.max.dim: max_dim, aten.min.dim: min_dim, aten.avg_pool2d.default: avg_pool2d,
            aten.conv_tbc.default: conv_tbc}
