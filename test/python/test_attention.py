"""Attention as one op: the FX rewrite, the import policy, numerics against eager on random data."""

import math

import pytest
import torch
import torch.nn.functional as F

import braze
from braze.compiler.fx_attention import fuse_attention, sdpa_calls

F32 = frozenset({torch.float32})


class Plain(torch.nn.Module):
    """softmax(q k^T * c) v written out, in the forms models use."""

    def __init__(self, form: str = "mul"):
        super().__init__()
        self.form = form

    def forward(self, q, k, v):
        kt = k.transpose(-2, -1) if self.form != "permute" else k.permute(0, 1, 3, 2)
        s = torch.matmul(q, kt)
        if self.form == "div":
            s = s / math.sqrt(q.shape[-1])
        elif self.form in ("mul", "permute"):
            s = s * 0.3
        return torch.matmul(torch.softmax(s, dim=-1), v)


class ScoresReturned(torch.nn.Module):
    def forward(self, q, k, v):
        p = torch.softmax(q @ k.transpose(-2, -1), dim=-1)
        return p @ v, p


class SoftmaxOverQueries(torch.nn.Module):
    def forward(self, q, k, v):
        return torch.softmax(q @ k.transpose(-2, -1), dim=-2) @ v


def _qkv(*shape, dtype=torch.float32):
    g = torch.Generator().manual_seed(7)
    return [torch.randn(*shape, generator=g).to(dtype) for _ in range(3)]


@pytest.mark.parametrize("form", ["mul", "div", "none", "permute"])
def test_rewrite_finds_the_pattern_and_keeps_the_function(form):
    args = _qkv(2, 3, 16, 8)
    ep = torch.export.export(Plain(form), tuple(args), strict=False)
    assert fuse_attention(ep.graph_module, F32)[0] == 1
    calls = sdpa_calls(ep.graph)
    assert list(calls.values()) == [torch.float32]
    assert not any(n.target in (torch.ops.aten.softmax.int, torch.ops.aten.matmul.default) for n in ep.graph.nodes)
    torch.testing.assert_close(ep.module()(*args), Plain(form)(*args), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("model", [ScoresReturned(), SoftmaxOverQueries()], ids=lambda m: type(m).__name__)
def test_rewrite_leaves_other_patterns_alone(model):
    args = _qkv(2, 3, 16, 8)
    ep = torch.export.export(model, tuple(args), strict=False)
    assert fuse_attention(ep.graph_module, F32)[0] == 0
    assert not sdpa_calls(ep.graph)


def test_rewrite_only_for_the_given_dtypes():
    args = _qkv(2, 3, 16, 8)
    ep = torch.export.export(Plain(), tuple(args), strict=False)
    assert fuse_attention(ep.graph_module, frozenset({torch.bfloat16}))[0] == 0


@pytest.mark.parametrize("form", ["div", "permute"])
def test_plain_attention_as_one_op_on_cpu(form):
    args = _qkv(2, 4, 32, 16)
    compiled = braze.compile(Plain(form), *args, attention=True)
    assert compiled.report.attention == {"rewritten": 1, "fused": 1}
    assert compiled.report.dispatch_count == 1
    new = _qkv(2, 4, 32, 16)
    new = [a * 2 for a in new]
    torch.testing.assert_close(compiled(*new), Plain(form)(*new), rtol=1e-5, atol=1e-5)
    assert "attention as one op" in str(compiled.report)


def test_sdpa_forms_on_cpu():
    """Native SDPA kept whole (causal, custom scale), and forms torch-mlir's attention lowering
    lacks (2-D inputs, a 2-D mask) imported decomposed instead of failing."""

    class Sdpa(torch.nn.Module):
        def forward(self, q, k, v, mask=None):
            if mask is not None:
                return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
            return F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=0.3)

    args = _qkv(2, 3, 16, 8)
    compiled = braze.compile(Sdpa(), *args, attention=True)
    assert compiled.report.attention == {"rewritten": 0, "fused": 1}
    torch.testing.assert_close(compiled(*args), Sdpa()(*args), rtol=1e-5, atol=1e-5)

    masked = args + [torch.randn(16, 16)]
    compiled = braze.compile(Sdpa(), *masked, attention=True)
    assert compiled.report.attention == {}
    torch.testing.assert_close(compiled(*masked), Sdpa()(*masked), rtol=1e-5, atol=1e-5)

    flat = _qkv(16, 8)
    compiled = braze.compile(Sdpa(), *flat, attention=True)
    assert compiled.report.attention == {}
    torch.testing.assert_close(compiled(*flat), Sdpa()(*flat), rtol=1e-5, atol=1e-5)


def test_transformer_layer_with_attention_as_one_op_on_cpu():
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(32, 4, 64, batch_first=True).eval()
    x = torch.randn(2, 16, 32)
    compiled = braze.compile(layer, x, attention=True)
    assert compiled.report.attention == {"rewritten": 0, "fused": 1}
    x2 = torch.randn(2, 16, 32)
    with torch.no_grad():
        torch.testing.assert_close(compiled(x2), layer(x2), rtol=1e-4, atol=1e-4)


def test_default_policy_per_device_and_dtype():
    """None: one op on cuda for 16-bit floats, and for float32 where braze generates the kernel
    (IREE's own float32 attention kernel measured slower than three dispatches), never on the
    CPU; compiled here for sm_90 (no GPU needed)."""
    args = _qkv(2, 4, 64, 32)
    assert braze.compile(Plain(), *args).report.attention == {}
    f32 = braze.compile(Plain(), *args, device="cuda", target="sm_90")
    assert f32.report.attention == {"rewritten": 1, "fused": 1}
    assert any(k["generated"] and k["kernel"].startswith("attention") for k in f32.report.kernels)
    iree = braze.compile(Plain(), *args, device="cuda", target="sm_90",
                         pipeline="fusion-cuda-pipeline{target=sm_90 kernels=off}")
    assert iree.report.attention == {"rewritten": 0, "fused": 0}  # IREE's float32 kernel: not one op
    bf16 = braze.compile(Plain(), *[a.bfloat16() for a in args], device="cuda", target="sm_90")
    assert bf16.report.attention == {"rewritten": 1, "fused": 1}
    assert bf16.report.dispatch_count < iree.report.dispatch_count
    off = braze.compile(Plain(), *[a.bfloat16() for a in args], device="cuda", target="sm_90", attention=False)
    assert off.report.attention == {} and off.report.dispatch_count == iree.report.dispatch_count
