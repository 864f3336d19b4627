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


def extra_decompositions() -> dict:
    import torch

    return {torch.ops.aten._transformer_encoder_layer_fwd.default: transformer_encoder_layer_fwd,
            torch.ops.aten.gelu.default: gelu, torch.ops.aten.log10.default: log10}
