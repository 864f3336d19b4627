"""The model catalogue: the zoo of small models the tests run, and the bench's workloads.

    CASES       small models that exercise braze end to end: tests compare each against eager
                on the CPU, `bench/gpu_check.py` on a GPU host
    WORKLOADS   `braze bench`'s models at benchmark sizes, per device, with bf16 variants; the
                tuner (`braze tune`) and bench/experiments build their models from here

Needs only torch (no torch-mlir, no IREE): the GPU host imports this module to rebuild each
model and its inputs from a seed, so weights and inputs never travel with the artifacts. Every
model class is defined once and used by both tables.

    workload               what                                            memory-bound
    elementwise_chain      sigmoid(relu(x*2+1))*x-0.5 on one tensor         yes
    tiny_chain             the same on 256x256 (harness tests only)         yes
    gelu_mlp               Linear -> GELU -> Linear                         no
    layernorm_gelu         gelu(layer_norm(x + residual))                   yes
    attention              softmax(q k^T / sqrt(d)) v from plain ops        no
    transformer_encoder    nn.TransformerEncoderLayer(768, 12, 3072)        no
    conv_bn_relu           Conv2d 3x3 + BatchNorm2d + ReLU                  no
    resnet18               ResNet-18 (torchvision's shapes, built here)     no
    bert_layer             BERT-base encoder layer, no mask                 no
    gqa_decoder            Llama-style layer, GQA + RoPE, 2k-token prefill  no   (transformers)
    vit_layer              ViT-B/16 layer, batch 64                         no   (transformers)
    causal_lm_block        GPT-2-small block, causal, batch 32 x 512        no   (transformers)

Each workload has a `_bf16` variant where bfloat16 is meaningful (the same model cast to bfloat16).
`name@Nx` is a workload at N times its batch (`braze bench --batch-scale 1,8`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

import torch
import torch.nn.functional as F
from torch import nn

from braze.errors import UsageError

SEED = 0
"""Seed of the bench workloads' weights and inputs."""


# -- models ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    name: str
    build: Callable[[], tuple[nn.Module, tuple, dict]]
    """Returns (model in eval mode, example args, example kwargs)."""
    rtol: float
    """Allowed max |braze - eager| divided by max |eager| (0 means exact)."""
    description: str
    known: dict = field(default_factory=dict)
    """device -> (stage, why): failures of IREE 3.13 itself (the raw toolchain fails the same
    way) that braze cannot avoid yet; stage is 'compile' or 'numerics'. Tests expect them
    strictly (an unexpected pass fails, so the mark goes when IREE is fixed); the GPU check
    reports them apart from real failures. A 'device/unfused' key marks a failure of the
    unfused build only (one braze's passes avoid; the differential suite reads it)."""


class BroadcastChain(nn.Module):
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
    def __init__(self, cin: int = 3, cout: int = 16, bias: bool = True):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, 3, padding=1, bias=bias)
        self.bn = nn.BatchNorm2d(cout)

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


class InvertedResidual(nn.Module):
    """MobileNetV2's block: 1x1 expand, 3x3 depthwise, 1x1 project, each with BatchNorm."""

    def __init__(self, cin: int, cout: int, stride: int, expand: int):
        super().__init__()
        hidden = cin * expand
        self.residual = stride == 1 and cin == cout
        self.block = nn.Sequential(
            nn.Conv2d(cin, hidden, 1, bias=False), nn.BatchNorm2d(hidden), nn.ReLU6(),
            nn.Conv2d(hidden, hidden, 3, stride, 1, groups=hidden, bias=False), nn.BatchNorm2d(hidden), nn.ReLU6(),
            nn.Conv2d(hidden, cout, 1, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        return x + self.block(x) if self.residual else self.block(x)


class MobileNetSmall(nn.Module):
    """A MobileNetV2-style network: stem, four inverted residual blocks (depthwise convolutions,
    ReLU6, BatchNorm), global pooling, classifier."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, 2, 1, bias=False), nn.BatchNorm2d(16), nn.ReLU6())
        self.blocks = nn.Sequential(InvertedResidual(16, 16, 1, 1), InvertedResidual(16, 24, 2, 6),
                                    InvertedResidual(24, 24, 1, 6), InvertedResidual(24, 32, 2, 6))
        self.head = nn.Linear(32, 10)

    def forward(self, x):
        return self.head(self.blocks(self.stem(x)).mean((2, 3)))


def mobilenet(dtype=torch.float32):
    """MobileNetSmall (eval, seeded, BatchNorm statistics that are not the identity) and a
    2x3x32x32 input, in `dtype`."""
    torch.manual_seed(0)
    model = MobileNetSmall().eval()
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.running_mean.uniform_(-0.3, 0.3)
                m.running_var.uniform_(0.5, 1.5)
    return model.to(dtype), (torch.randn(2, 3, 32, 32).to(dtype),)


def mobilenet_bf16():
    return mobilenet(torch.bfloat16)


class ElementwiseChain(nn.Module):
    """The bench's memory-bound chain on one tensor."""

    def forward(self, x):
        return torch.sigmoid(torch.relu(x * 2 + 1)) * x - 0.5


class LayerNormGelu(nn.Module):
    def __init__(self, d: int):
        super().__init__()
        self.norm = nn.LayerNorm(d)

    def forward(self, x, residual):
        return F.gelu(self.norm(x + residual))


class Attention(nn.Module):
    """Scaled dot-product attention written with matmul/softmax, not the fused SDPA op."""

    def forward(self, q, k, v):
        scores = torch.matmul(q, k.transpose(-2, -1)) * (1.0 / math.sqrt(q.shape[-1]))
        return torch.matmul(torch.softmax(scores, dim=-1), v)


class BasicBlock(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.down = None
        if stride != 1 or cin != cout:
            self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + (x if self.down is None else self.down(x)))


class ResNet18(nn.Module):
    """torchvision.models.resnet18's layers and shapes (torchvision is not installable here)."""

    def __init__(self, classes: int = 1000):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.pool = nn.MaxPool2d(3, 2, 1)
        layers, cin = [], 64
        for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
            layers += [BasicBlock(cin, cout, stride), BasicBlock(cout, cout, 1)]
            cin = cout
        self.layers = nn.Sequential(*layers)
        self.fc = nn.Linear(512, classes)

    def forward(self, x):
        x = self.pool(F.relu(self.bn1(self.conv1(x))))
        x = self.layers(x)
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


class Bottleneck(nn.Module):
    """ResNet-50's block (torchvision's v1.5: the stride on the 3x3): 1x1 down to `width`, 3x3,
    1x1 up to 4x `width`, each with BatchNorm; a strided or widening block's shortcut is a 1x1
    convolution with BatchNorm."""

    def __init__(self, cin: int, width: int, stride: int):
        super().__init__()
        cout = 4 * width
        self.conv1, self.bn1 = nn.Conv2d(cin, width, 1, bias=False), nn.BatchNorm2d(width)
        self.conv2, self.bn2 = nn.Conv2d(width, width, 3, stride, 1, bias=False), nn.BatchNorm2d(width)
        self.conv3, self.bn3 = nn.Conv2d(width, cout, 1, bias=False), nn.BatchNorm2d(cout)
        self.down = None
        if stride != 1 or cin != cout:
            self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = F.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        return F.relu(out + (x if self.down is None else self.down(x)))


class ResNet50(nn.Module):
    """A ResNet-50-class network (braze's own construction of torchvision's resnet50 layers and
    shapes: 3, 4, 6 and 3 bottlenecks at widths 64 to 512, 25.6M parameters)."""

    def __init__(self, classes: int = 1000):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.pool = nn.MaxPool2d(3, 2, 1)
        layers, cin = [], 64
        for width, blocks, stride in ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)):
            for i in range(blocks):
                layers.append(Bottleneck(cin, width, stride if i == 0 else 1))
                cin = 4 * width
        self.layers = nn.Sequential(*layers)
        self.fc = nn.Linear(cin, classes)

    def forward(self, x):
        x = self.pool(F.relu(self.bn1(self.conv1(x))))
        x = self.layers(x)
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


class ConvNeXtBlock(nn.Module):
    """ConvNeXt's block as its reference code writes it: a 7x7 depthwise convolution, a permute
    to channels-last, LayerNorm, Linear to 4x, GELU, Linear back, a per-channel layer scale, the
    permute back and the residual."""

    def __init__(self, d: int):
        super().__init__()
        self.dwconv = nn.Conv2d(d, d, 7, padding=3, groups=d)
        self.norm = nn.LayerNorm(d, eps=1e-6)
        self.fc1, self.fc2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
        self.gamma = nn.Parameter(torch.full((d,), 0.5))

    def forward(self, x):
        y = self.dwconv(x).permute(0, 2, 3, 1)
        y = self.gamma * self.fc2(F.gelu(self.fc1(self.norm(y))))
        return x + y.permute(0, 3, 1, 2)


class ConvNeXtStage(nn.Module):
    """A ConvNeXt-class stage (braze's own construction, ConvNeXt-T's second stage): a
    LayerNorm over channels and a 2x2 stride-2 downsampling convolution, then `blocks` blocks."""

    def __init__(self, cin: int, d: int, blocks: int):
        super().__init__()
        self.norm = nn.LayerNorm(cin, eps=1e-6)
        self.down = nn.Conv2d(cin, d, 2, 2)
        self.blocks = nn.Sequential(*[ConvNeXtBlock(d) for _ in range(blocks)])

    def forward(self, x):
        x = self.norm(x.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)
        return self.blocks(self.down(x))


class RMSNorm(nn.Module):
    def __init__(self, d: int, eps: float = 1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d))
        self.eps = eps

    def forward(self, x):
        var = x.float().pow(2).mean(-1, keepdim=True)
        return (x.float() * torch.rsqrt(var + self.eps)).to(x.dtype) * self.weight


def _rotate_half(x):
    a, b = x.chunk(2, dim=-1)
    return torch.cat((-b, a), dim=-1)


class GQADecoderLayer(nn.Module):
    """A decoder layer as Llama-family models write their eager attention (braze's own
    construction): RMSNorm, q/k/v projections, rotary embeddings, grouped-query attention with
    k and v repeated to every head (repeat_kv), an additive causal mask from a buffer, the
    softmax in float32 cast back, the output projection, RMSNorm and a SwiGLU MLP, residuals."""

    def __init__(self, d: int, heads: int, kv_heads: int, ffn: int, max_len: int):
        super().__init__()
        self.h, self.kvh, self.hd = heads, kv_heads, d // heads
        self.norm1, self.norm2 = RMSNorm(d), RMSNorm(d)
        self.q = nn.Linear(d, d, bias=False)
        self.k = nn.Linear(d, kv_heads * self.hd, bias=False)
        self.v = nn.Linear(d, kv_heads * self.hd, bias=False)
        self.o = nn.Linear(d, d, bias=False)
        self.gate = nn.Linear(d, ffn, bias=False)
        self.up = nn.Linear(d, ffn, bias=False)
        self.down = nn.Linear(ffn, d, bias=False)
        inv = 1.0 / (10000 ** (torch.arange(0, self.hd, 2).float() / self.hd))
        freqs = torch.outer(torch.arange(max_len).float(), inv)
        emb = torch.cat((freqs, freqs), dim=-1)
        self.register_buffer("cos", emb.cos(), persistent=False)
        self.register_buffer("sin", emb.sin(), persistent=False)
        self.register_buffer("mask", torch.full((max_len, max_len), float("-inf")).triu(1), persistent=False)

    def _repeat(self, x):
        b, kvh, s, hd = x.shape
        g = self.h // kvh
        return x[:, :, None, :, :].expand(b, kvh, g, s, hd).reshape(b, kvh * g, s, hd)

    def forward(self, x):
        b, s, d = x.shape
        h = self.norm1(x)
        q = self.q(h).view(b, s, self.h, self.hd).transpose(1, 2)
        k = self.k(h).view(b, s, self.kvh, self.hd).transpose(1, 2)
        v = self.v(h).view(b, s, self.kvh, self.hd).transpose(1, 2)
        cos, sin = self.cos[:s].to(x.dtype), self.sin[:s].to(x.dtype)
        q = q * cos + _rotate_half(q) * sin
        k = k * cos + _rotate_half(k) * sin
        k, v = self._repeat(k), self._repeat(v)
        w = torch.matmul(q, k.transpose(2, 3)) * self.hd ** -0.5 + self.mask[:s, :s]
        w = torch.softmax(w, dim=-1, dtype=torch.float32).to(q.dtype)
        o = torch.matmul(w, v).transpose(1, 2).reshape(b, s, d)
        x = x + self.o(o)
        h = self.norm2(x)
        return x + self.down(F.silu(self.gate(h)) * self.up(h))


class ViTLayer(nn.Module):
    """A pre-norm vision transformer encoder layer (braze's own construction): LayerNorm, one
    qkv projection split into heads by reshape/permute/unbind, softmax(q k^T * scale), dropout
    (p=0), the output projection, LayerNorm and a GELU MLP, residuals."""

    def __init__(self, d: int, heads: int, mlp: int):
        super().__init__()
        self.h, self.hd = heads, d // heads
        self.norm1, self.norm2 = nn.LayerNorm(d, eps=1e-6), nn.LayerNorm(d, eps=1e-6)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.drop = nn.Dropout(0.0)
        self.fc1, self.fc2 = nn.Linear(d, mlp), nn.Linear(mlp, d)

    def forward(self, x):
        b, n, c = x.shape
        qkv = self.qkv(self.norm1(x)).reshape(b, n, 3, self.h, self.hd).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)
        a = self.drop((q @ k.transpose(-2, -1) * self.hd ** -0.5).softmax(dim=-1))
        x = x + self.proj((a @ v).transpose(1, 2).reshape(b, n, c))
        return x + self.fc2(F.gelu(self.fc1(self.norm2(x))))


class CausalLMBlock(nn.Module):
    """A GPT-2-style causal LM block (braze's own construction): LayerNorm, one qkv projection
    split by split/view/permute, scores divided by a 0-d tensor, the causal mask a boolean
    buffer applied with where(mask, w, finfo.min), softmax, the output projection, LayerNorm
    and a tanh-GELU MLP, residuals."""

    def __init__(self, d: int, heads: int, max_len: int):
        super().__init__()
        self.h, self.hd = heads, d // heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.c_attn, self.c_proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc, self.proj = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
        tril = torch.tril(torch.ones(max_len, max_len, dtype=torch.bool))
        self.register_buffer("bias", tril.view(1, 1, max_len, max_len), persistent=False)

    def forward(self, x):
        b, s, d = x.shape
        q, k, v = self.c_attn(self.ln1(x)).split(d, dim=2)
        q, k, v = (t.view(b, s, self.h, self.hd).permute(0, 2, 1, 3) for t in (q, k, v))
        w = torch.matmul(q, k.transpose(-1, -2))
        w = w / torch.full([], v.size(-1) ** 0.5, dtype=w.dtype, device=w.device)
        fill = torch.full([], torch.finfo(w.dtype).min, dtype=w.dtype, device=w.device)
        w = torch.where(self.bias[:, :, :s, :s], w, fill)
        w = F.softmax(w, dim=-1).type(v.dtype)
        x = x + self.c_proj(torch.matmul(w, v).permute(0, 2, 1, 3).reshape(b, s, d))
        return x + self.proj(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class BertLayer(nn.Module):
    """A BERT-base encoder layer (post-LayerNorm, GELU), attention from plain ops, no mask."""

    def __init__(self, hidden: int = 768, heads: int = 12, intermediate: int = 3072):
        super().__init__()
        self.heads = heads
        self.query = nn.Linear(hidden, hidden)
        self.key = nn.Linear(hidden, hidden)
        self.value = nn.Linear(hidden, hidden)
        self.attn_out = nn.Linear(hidden, hidden)
        self.attn_norm = nn.LayerNorm(hidden, eps=1e-12)
        self.inter = nn.Linear(hidden, intermediate)
        self.out = nn.Linear(intermediate, hidden)
        self.out_norm = nn.LayerNorm(hidden, eps=1e-12)

    def forward(self, x):
        b, s, h = x.shape
        d = h // self.heads

        def split(t):
            return t.view(b, s, self.heads, d).transpose(1, 2)

        q, k, v = split(self.query(x)), split(self.key(x)), split(self.value(x))
        scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(d)
        ctx = torch.matmul(torch.softmax(scores, dim=-1), v).transpose(1, 2).reshape(b, s, h)
        x = self.attn_norm(x + self.attn_out(ctx))
        return self.out_norm(x + self.out(F.gelu(self.inter(x))))


# -- the zoo ----------------------------------------------------------------------------


def _seeded(fn):
    def build():
        torch.manual_seed(0)
        model, args, kwargs = fn()
        return model.eval(), args, kwargs

    return build


def _encoder():
    return nn.TransformerEncoderLayer(64, 4, 128, batch_first=True), (torch.randn(2, 8, 64),), {}


CASES = [
    Case("elementwise_chain", _seeded(lambda: (BroadcastChain(), (torch.randn(8, 64), torch.randn(64), torch.randn(8, 1)), {})),
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
    Case("mobilenet", lambda: (*mobilenet(), {}), 1e-4, "MobileNetV2-style: depthwise convolutions, ReLU6, BatchNorm"),
    Case("mobilenet_bf16", lambda: (*mobilenet_bf16(), {}), 3e-2, "the same in bfloat16",
         known={"cuda/unfused": ("numerics", "IREE 3.13's CUDA code for a 16-bit 1x1 convolution is wrong "
                                             "(bench/repro/bf16_ops.py); braze's conv-to-matmul avoids it"),
                "vulkan/llvmpipe": ("compile", "IREE 3.13's SPIR-V for llvmpipe cannot load bf16 in a matmul's "
                                               "epilogue (\"failed to legalize 'vector.bitcast'\"); the GPU targets can")}),
    Case("transformer_encoder_256", _seeded(lambda: (nn.TransformerEncoderLayer(256, 4, batch_first=True),
                                                     (torch.randn(2, 16, 256),), {})),
         1e-4, "torch.nn.TransformerEncoderLayer(256, 4) with its default 2048-wide feed-forward"),
]

BY_NAME = {c.name: c for c in CASES}


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


# -- the table -------------------------------------------------------------------------


@dataclass(frozen=True)
class Workload:
    name: str
    description: str
    make: Callable[[dict], nn.Module]
    """Builds the float32 model (eval mode) from the size parameters."""
    inputs: Callable[[dict], list[tuple[int, ...]]]
    """Input shapes for the size parameters."""
    sizes: dict[str, dict]
    """Size parameters per device ('cpu', 'cuda'; 'vulkan' uses 'cuda')."""
    memory_bound: bool = False
    """Report achieved bandwidth against the device's copy bandwidth."""
    dtype: str = "float32"
    quick: bool = False
    """Part of `--quick`."""
    tags: tuple[str, ...] = field(default_factory=tuple)

    def params(self, device: str) -> dict:
        return self.sizes.get(device) or self.sizes["cuda"]

    def shapes(self, device: str) -> list[tuple[int, ...]]:
        return self.inputs(self.params(device))

    def build(self, device: str = "cpu") -> tuple[nn.Module, list[torch.Tensor]]:
        """Model (on the CPU, eval mode, seeded weights) and its example inputs (CPU tensors)."""
        torch.manual_seed(SEED)
        params = self.params(device)
        model = self.make(params).eval()
        _quantize_weights(model)
        gen = torch.Generator().manual_seed(SEED + 1)
        args = [torch.randn(shape, generator=gen) for shape in self.inputs(params)]
        if self.dtype != "float32":
            dt = getattr(torch, self.dtype)
            model = model.to(dt)
            args = [a.to(dt) for a in args]
        return model, args

    def describe_shapes(self, device: str) -> str:
        return ", ".join("x".join(map(str, s)) for s in self.shapes(device)) + f" {self.dtype}"


def _quantize_weights(model: nn.Module) -> None:
    """Give every weight matrix or kernel 16 distinct values (k/4 of its init std, k in -8..7).

    Kernel times do not depend on weight values (no sparsity or denormals here), but the
    GPU artifacts carry their weights as constants and must cross a 64 MiB transfer: with 4
    bits of entropy per float they compress about 7x (see bench/NOTES.md).
    """
    gen = torch.Generator().manual_seed(SEED + 2)
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() >= 2:
                std = float(p.std()) or 1.0
                p.copy_(torch.randint(-8, 8, p.shape, generator=gen).to(p.dtype) * (std / 4))


def pool_weights(model: nn.Module, scale: float = 0.02, seed: int = SEED + 3, pool: int = 1_048_573) -> None:
    """Fill every weight matrix with a window of one pool of `pool` normal values (times `scale`,
    in the model's dtype), each window starting at its own random offset.

    For models whose weights are gigabytes (a 1.5B-parameter decoder): the values are normal
    with the init's spread, and every matrix holds different bytes (so no constant is merged
    with another and a decode step reads every one from memory), yet the weights are one pool
    repeated, so an artifact carrying them as constants compresses to a few MiB for the GPU
    host, which rebuilds the same weights from the same seed. Kernel times do not depend on
    the values. Vectors (norm weights, biases) are left as they are.

    The pool's length is a prime, so no two rows of a matrix are the same window (row r starts
    at start + r * columns modulo the pool). With 2**20 values, every 2**20 / gcd(2**20, columns)
    rows repeated: a Qwen2-0.5B-class embedding (896 columns, tied to the output) had each row
    18-19 times, the greedy token was a tie of 18-37 logits, and the first token where two
    implementations differ said which tied token an argmax took, not how far they drifted.
    """
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        params = [p for p in model.parameters() if p.dim() >= 2]
        if not params:
            return
        values = (torch.randn(pool, generator=gen) * scale).to(params[0].dtype)
        for p in params:
            start = int(torch.randint(0, pool, (1,), generator=gen))
            reps = (start + p.numel() + pool - 1) // pool
            flat = values.repeat(reps)[start:start + p.numel()] if reps > 1 else values[start:start + p.numel()]
            p.copy_(flat.to(p.dtype).view(p.shape))


def min_bytes(inputs: list[torch.Tensor], outputs: list[torch.Tensor], model: nn.Module) -> int:
    """Bytes a perfect kernel moves: read every input and parameter once, write every output once."""
    params = sum(p.numel() * p.element_size() for p in model.parameters())
    params += sum(b.numel() * b.element_size() for b in model.buffers())
    return (sum(t.numel() * t.element_size() for t in inputs)
            + sum(t.numel() * t.element_size() for t in outputs) + params)


def checksum(tensors) -> float:
    """A cheap fingerprint of weights or inputs, to check the GPU host rebuilt the same ones."""
    total = 0.0
    for i, t in enumerate(tensors):
        t = t.detach().float().flatten()
        total += float(t.sum()) + float((t[:: max(1, t.numel() // 997)] * (i + 1)).sum())
    return total


def _base() -> list[Workload]:
    return [
        Workload(
            "elementwise_chain", "sigmoid(relu(x*2+1))*x-0.5",
            lambda p: ElementwiseChain(), lambda p: [(p["n"], p["n"])],
            {"cpu": {"n": 4096}, "cuda": {"n": 4096}}, memory_bound=True, quick=True,
        ),
        Workload(
            "tiny_chain", "the elementwise chain on 256x256: a smoke test for the harness",
            lambda p: ElementwiseChain(), lambda p: [(p["n"], p["n"])],
            {"cpu": {"n": 256}, "cuda": {"n": 256}}, memory_bound=True, tags=("test",),
        ),
        Workload(
            "gelu_mlp", "Linear(d, h) -> GELU -> Linear(h, d)",
            lambda p: GeluMLP(p["d"], p["h"]), lambda p: [(p["m"], p["d"])],
            {"cpu": {"m": 64, "d": 512, "h": 2048}, "cuda": {"m": 256, "d": 1024, "h": 4096}}, quick=True,
        ),
        Workload(
            "layernorm_gelu", "gelu(layer_norm(x + residual))",
            lambda p: LayerNormGelu(p["d"]), lambda p: [(p["b"], p["s"], p["d"])] * 2,
            {"cpu": {"b": 8, "s": 512, "d": 768}, "cuda": {"b": 8, "s": 512, "d": 1024}}, memory_bound=True,
        ),
        Workload(
            "attention", "softmax(q k^T / sqrt(d)) v, plain ops",
            lambda p: Attention(), lambda p: [(p["b"], p["h"], p["s"], p["d"])] * 3,
            {"cpu": {"b": 1, "h": 12, "s": 128, "d": 64}, "cuda": {"b": 8, "h": 12, "s": 512, "d": 64}},
        ),
        Workload(
            "transformer_encoder", "nn.TransformerEncoderLayer(768, 12, 3072), batch_first",
            lambda p: nn.TransformerEncoderLayer(768, 12, 3072, batch_first=True),
            lambda p: [(p["b"], p["s"], 768)],
            {"cpu": {"b": 1, "s": 128}, "cuda": {"b": 8, "s": 128}},
        ),
        Workload(
            "conv_bn_relu", "Conv2d(c, c, 3) + BatchNorm2d + ReLU",
            lambda p: ConvBnRelu(p["c"], p["c"], bias=False), lambda p: [(p["b"], p["c"], p["hw"], p["hw"])],
            {"cpu": {"b": 1, "c": 64, "hw": 56}, "cuda": {"b": 8, "c": 64, "hw": 56}},
        ),
        Workload(
            "resnet18", "ResNet-18 (torchvision layout)",
            lambda p: ResNet18(), lambda p: [(p["b"], 3, p["hw"], p["hw"])],
            {"cpu": {"b": 1, "hw": 112}, "cuda": {"b": 8, "hw": 224}},
        ),
        Workload(
            "bert_layer", "BERT-base encoder layer (768, 12 heads, 3072, GELU)",
            lambda p: BertLayer(), lambda p: [(p["b"], p["s"], 768)],
            {"cpu": {"b": 1, "s": 128}, "cuda": {"b": 8, "s": 128}},
        ),
        # vision at the sizes people serve (issue 38): batch 8, and 16 and 64 with --batch-scale 2,8
        Workload(
            "resnet50", "ResNet-50-class network (bottlenecks 3/4/6/3), 224x224",
            lambda p: ResNet50(), lambda p: [(p["b"], 3, p["hw"], p["hw"])],
            {"cpu": {"b": 1, "hw": 112}, "cuda": {"b": 8, "hw": 224}}, tags=("vision",),
        ),
        Workload(
            "convnext_stage", "ConvNeXt-T-class stage: LayerNorm, 2x2 downsample 96->192, 3 blocks at 28x28",
            lambda p: ConvNeXtStage(96, 192, 3), lambda p: [(p["b"], 96, p["hw"], p["hw"])],
            {"cpu": {"b": 1, "hw": 56}, "cuda": {"b": 8, "hw": 56}}, tags=("vision",),
        ),
        # transformers at the sizes people serve (issue 37), attention written as their families write it
        Workload(
            "gqa_decoder", "decoder layer: RMSNorm, RoPE, GQA 32/4 heads via repeat_kv, causal, SwiGLU; 2k prefill",
            lambda p: GQADecoderLayer(p["d"], p["h"], p["kvh"], p["f"], p["s"]), lambda p: [(p["b"], p["s"], p["d"])],
            {"cpu": {"b": 1, "s": 128, "d": 256, "h": 8, "kvh": 2, "f": 704},
             "cuda": {"b": 1, "s": 2048, "d": 2048, "h": 32, "kvh": 4, "f": 5632}}, tags=("transformer",),
        ),
        Workload(
            "vit_layer", "ViT-B/16 encoder layer (768, 12 heads, 3072), 197 tokens, batch 64",
            lambda p: ViTLayer(768, 12, 3072), lambda p: [(p["b"], 197, 768)],
            {"cpu": {"b": 2}, "cuda": {"b": 64}}, tags=("transformer",),
        ),
        Workload(
            "causal_lm_block", "GPT-2-small block (768, 12 heads), causal bool buffer, batch 32 x 512",
            lambda p: CausalLMBlock(768, 12, p["s"]), lambda p: [(p["b"], p["s"], 768)],
            {"cpu": {"b": 1, "s": 128}, "cuda": {"b": 32, "s": 512}}, tags=("transformer",),
        ),
    ]


BF16 = ("elementwise_chain", "gelu_mlp", "layernorm_gelu", "transformer_encoder", "bert_layer", "gqa_decoder",
        "vit_layer", "causal_lm_block", "resnet18", "resnet50", "convnext_stage")
"""Workloads with a bfloat16 variant (on the GPU; the CPU suite keeps float32 by default)."""


def _all() -> dict[str, Workload]:
    table: dict[str, Workload] = {}
    for w in _base():
        table[w.name] = w
        if w.name in BF16:
            bf = Workload(w.name + "_bf16", w.description, w.make, w.inputs, w.sizes,
                          w.memory_bound, "bfloat16", False, ("bf16",) + w.tags)
            table[bf.name] = bf
    return table


WORKLOADS: dict[str, Workload] = _all()

CPU_DEFAULT = [n for n, w in WORKLOADS.items()
               if w.dtype == "float32" and not {"test", "transformer", "vision"} & set(w.tags)] + [
    "elementwise_chain_bf16"]
"""The CPU suite: every float32 workload plus one bfloat16 one (2-core CPUs take minutes)."""
GPU_DEFAULT = [n for n, w in WORKLOADS.items() if not {"test", "transformer", "vision"} & set(w.tags)]
TRANSFORMERS = [n for n, w in WORKLOADS.items() if "transformer" in w.tags]
"""`--workloads transformers`: the production-size transformer layers (issue 37), apart from the
default suites (each takes minutes to compile and to tune torch.compile's modes for)."""
VISION = [n for n, w in WORKLOADS.items() if "vision" in w.tags or n.startswith("resnet18")]
"""`--workloads vision`: the convolution networks at the sizes people serve (issue 38), float32
and bfloat16; run with --batch-scale 1,2,8 for batch 8, 16 and 64."""
QUICK = [n for n, w in WORKLOADS.items() if w.quick]


def default_names(device: str, quick: bool = False) -> list[str]:
    if quick:
        return list(QUICK)
    return list(CPU_DEFAULT if device == "cpu" else GPU_DEFAULT)


def scaled(w: Workload, factor: int) -> Workload:
    """`w` at `factor` times its batch (parameter 'b' on every device), named 'name@{factor}x'."""
    if factor == 1:
        return w
    sizes = {dev: dict(p, b=p.get("b", 1) * factor) for dev, p in w.sizes.items()}
    if any("b" not in p for p in w.sizes.values()):
        raise UsageError(f"workload {w.name} has no batch to scale")
    return Workload(f"{w.name}@{factor}x", w.description + f", {factor}x the batch", w.make, w.inputs, sizes,
                    w.memory_bound, w.dtype, False, w.tags)


def _known(name: str) -> bool:
    base, _, scale = name.partition("@")
    return base in WORKLOADS and (not scale or scale.endswith("x") and scale[:-1].isdigit() and int(scale[:-1]) > 0)


def _unknown(names: list[str]) -> UsageError:
    return UsageError(f"unknown workload(s) {', '.join(names)}; known: {', '.join(WORKLOADS)} "
                      "(name@Nx: N times its batch; transformers: the production-size transformer layers)")


def workload(name: str) -> Workload:
    """A workload by name, 'name@Nx' for one at N times its batch."""
    if not _known(name):
        raise _unknown([name])
    base, _, scale = name.partition("@")
    return scaled(WORKLOADS[base], int(scale[:-1])) if scale else WORKLOADS[base]


def select(names: list[str] | None, device: str, quick: bool = False, scales: tuple[int, ...] = (1,)) -> list[Workload]:
    """The named workloads ('transformers' names the production-size transformer layers), each
    at every batch scale."""
    if not names:
        names = default_names(device, quick)
    names = [m for n in names for m in {"transformers": TRANSFORMERS, "vision": VISION}.get(n, [n])]
    unknown = [n for n in names if not _known(n)]
    if unknown:
        raise _unknown(unknown)
    found = [workload(n) for n in names]
    return [scaled(w, f) for w in found for f in scales]
