"""A zoo of small PyTorch models that exercise braze end to end.

Used by the tests (numerics against eager on CPU), by the GPU check (`braze.tools.gpu_check`)
and by the benchmarks. Each entry builds a fresh model with seeded random weights and
random example inputs of the shapes it was written for.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import torch
from torch import nn
import torch.nn.functional as F


@dataclass(frozen=True)
class Case:
    name: str
    build: Callable[[], tuple[nn.Module, tuple, dict]]
    """Returns (model in eval mode, example args, example kwargs)."""
    rtol: float
    """Allowed max |braze - eager| divided by max |eager| (0 means exact)."""
    description: str


class ElementwiseChain(nn.Module):
    """Broadcasting elementwise chain: row scale, column bias, activations, a cast."""

    def forward(self, x, scale, bias):
        y = torch.sigmoid(torch.relu(x * scale + bias)) * x - 0.5
        z = torch.tanh(y) + torch.exp(-y.abs())
        return (z * 2.0).to(torch.float32) + x


class GeluMLP(nn.Module):
    def __init__(self, d=64, hidden=256):
        super().__init__()
        self.fc1 = nn.Linear(d, hidden)
        self.fc2 = nn.Linear(hidden, d)

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(x)))


class ConvBnRelu(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 16, 3, padding=1)
        self.bn = nn.BatchNorm2d(16)

    def forward(self, x):
        return F.relu(self.bn(self.conv(x)))


class LayerNormResidual(nn.Module):
    def __init__(self, d=64):
        super().__init__()
        self.norm = nn.LayerNorm(d)
        self.proj = nn.Linear(d, d)

    def forward(self, x):
        return self.norm(x + F.silu(self.proj(x)))


class PlainAttention(nn.Module):
    """softmax(Q K^T / sqrt(d)) V written with plain ops."""

    def __init__(self, d=32):
        super().__init__()
        self.q = nn.Linear(d, d)
        self.k = nn.Linear(d, d)
        self.v = nn.Linear(d, d)
        self.scale = 1.0 / math.sqrt(d)

    def forward(self, x):
        q, k, v = self.q(x), self.k(x), self.v(x)
        scores = torch.matmul(q, k.transpose(-2, -1)) * self.scale
        scores = scores - scores.amax(dim=-1, keepdim=True)
        weights = torch.exp(scores)
        weights = weights / weights.sum(dim=-1, keepdim=True)
        return torch.matmul(weights, v)


class EmbeddingLinear(nn.Module):
    def __init__(self, vocab=100, d=32):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.out = nn.Linear(d, vocab)

    def forward(self, ids):
        return self.out(torch.tanh(self.emb(ids)))


class ResidualBlock(nn.Module):
    """A ResNet basic block: conv-bn-relu-conv-bn plus the identity, relu."""

    def __init__(self, c=16):
        super().__init__()
        self.conv1 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(c)
        self.conv2 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(c)

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        return F.relu(self.bn2(self.conv2(y)) + x)


class MultiOutput(nn.Module):
    """Several outputs in a nested structure, from nested inputs and a keyword argument."""

    def forward(self, pair, extra, *, gain):
        a, b = pair
        s = a + b
        return {"sum": s, "stats": (s.mean(dim=1), (a * b).amax(dim=0))}, torch.relu(extra) * gain


class IntegerArithmetic(nn.Module):
    def forward(self, a, b):
        c = a * 3 + b - 7
        d = torch.where(c > 0, c, -c)
        return d % 5, (a * b).to(torch.int64) + 1


class HalfPrecision(nn.Module):
    def __init__(self, d=32):
        super().__init__()
        self.fc = nn.Linear(d, d)

    def forward(self, x):
        return torch.sigmoid(self.fc(x)) * x + 1.0


class BFloat16Chain(nn.Module):
    def forward(self, x, y):
        return torch.relu(x * y + 0.5) - torch.tanh(x)


class MaskedFill(nn.Module):
    def forward(self, x, mask):
        return torch.where(mask, x * 2.0, torch.zeros_like(x)), mask.logical_not()


def _seeded(fn):
    def build():
        torch.manual_seed(0)
        model, args, kwargs = fn()
        return model.eval(), args, kwargs

    return build


def _encoder():
    return nn.TransformerEncoderLayer(64, 4, 128, batch_first=True), (torch.randn(2, 8, 64),), {}


CASES = [
    Case("elementwise_chain", _seeded(lambda: (ElementwiseChain(), (torch.randn(8, 64), torch.randn(64), torch.randn(8, 1)), {})),
         1e-5, "broadcast row scale and column bias, sigmoid/relu/tanh/exp chain"),
    Case("gelu_mlp", _seeded(lambda: (GeluMLP(), (torch.randn(16, 64),), {})), 1e-5, "Linear-GELU-Linear"),
    Case("conv_bn_relu", _seeded(lambda: (ConvBnRelu(), (torch.randn(2, 3, 16, 16),), {})), 1e-5, "Conv2d + BatchNorm2d (eval) + ReLU"),
    Case("layernorm_residual", _seeded(lambda: (LayerNormResidual(), (torch.randn(4, 8, 64),), {})), 1e-5, "LayerNorm(x + SiLU(Linear(x)))"),
    Case("plain_attention", _seeded(lambda: (PlainAttention(), (torch.randn(2, 16, 32),), {})), 1e-5, "softmax(QK^T/sqrt d)V from plain ops"),
    Case("transformer_encoder", _seeded(_encoder), 1e-4, "torch.nn.TransformerEncoderLayer(64, 4, 128)"),
    Case("embedding_linear", _seeded(lambda: (EmbeddingLinear(), (torch.randint(0, 100, (4, 12)),), {})), 1e-5, "Embedding -> tanh -> Linear, int64 ids"),
    Case("residual_block", _seeded(lambda: (ResidualBlock(), (torch.randn(2, 16, 8, 8),), {})), 1e-5, "ResNet basic block"),
    Case("multi_output", _seeded(lambda: (MultiOutput(), ((torch.randn(4, 6), torch.randn(4, 6)), torch.randn(5)), {"gain": torch.randn(5)})),
         1e-5, "nested tuple/dict inputs and outputs, keyword argument"),
    Case("integer_arithmetic", _seeded(lambda: (IntegerArithmetic(), (torch.randint(-50, 50, (8, 8), dtype=torch.int32), torch.randint(-50, 50, (8, 8), dtype=torch.int32)), {})),
         0.0, "int32/int64 arithmetic, where, remainder"),
    Case("float16_linear", _seeded(lambda: (HalfPrecision().half(), (torch.randn(8, 32).half(),), {})), 1e-2, "float16 Linear + sigmoid chain"),
    Case("bfloat16_chain", _seeded(lambda: (BFloat16Chain(), (torch.randn(16, 32).bfloat16(), torch.randn(16, 32).bfloat16()), {})),
         2e-2, "bfloat16 elementwise chain"),
    Case("masked_fill_bool", _seeded(lambda: (MaskedFill(), (torch.randn(6, 10), torch.rand(6, 10) > 0.5), {})), 0.0, "bool mask input and output"),
]

BY_NAME = {c.name: c for c in CASES}


def max_rel_error(got, expected) -> float:
    """max |got - expected| / max |expected| over all leaves (exact comparison for ints/bools)."""
    from torch.utils._pytree import tree_leaves

    worst = 0.0
    for g, e in zip(tree_leaves(got), tree_leaves(expected), strict=True):
        g = g.to(e.device)
        if g.shape != e.shape or g.dtype != e.dtype:
            return float("inf")
        if not e.dtype.is_floating_point:
            worst = max(worst, 0.0 if torch.equal(g, e) else float("inf"))
            continue
        diff = (g.double() - e.double()).abs().max().item() if e.numel() else 0.0
        scale = max(e.double().abs().max().item(), 1e-30) if e.numel() else 1.0
        worst = max(worst, diff / scale)
    return worst


def fresh_like(tree, seed: int = 1):
    """New random tensors with the shapes and dtypes of `tree`'s (ints within the same range)."""
    from torch.utils._pytree import tree_map

    gen = torch.Generator().manual_seed(seed)

    def fresh(t):
        if not isinstance(t, torch.Tensor):
            return t
        if t.dtype == torch.bool:
            return torch.rand(t.shape, generator=gen) > 0.5
        if t.dtype.is_floating_point:
            return torch.randn(t.shape, generator=gen).to(t.dtype)
        lo, hi = int(t.min()), int(t.max()) + 1
        return torch.randint(lo, hi, t.shape, generator=gen, dtype=t.dtype)

    return tree_map(fresh, tree)
