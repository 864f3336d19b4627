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
    """Native SDPA kept whole (causal, custom scale, a 2-D mask braze gives its leading unit
    dimensions), and a form torch-mlir's attention lowering lacks (2-D inputs) imported
    decomposed instead of failing."""

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
    assert compiled.report.attention == {"rewritten": 0, "fused": 1}
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


# --- the forms models write (transformers' eager attention, GPT-2, ViT, Whisper) --------------


def _repeat_kv(x, n):
    b, h, s, d = x.shape
    return x[:, :, None, :, :].expand(b, h, n, s, d).reshape(b, h * n, s, d)


class Forms(torch.nn.Module):
    """Attention over heads split off [B, L, H*E] inputs, written as the named model family does."""

    def __init__(self, form: str, heads=4, kv_heads=2, length=12):
        super().__init__()
        self.form, self.h, self.kvh = form, heads, kv_heads
        tril = torch.ones(length, length, dtype=torch.bool).tril()
        self.register_buffer("bias", tril[None, None], persistent=False)  # GPT-2's causal buffer
        noise = torch.rand(length, length, generator=torch.Generator().manual_seed(5)) > 0.3  # the same on every host
        self.register_buffer("noise", noise, persistent=False)

    def forward(self, q, k, v, mask=None):
        b, l, _ = q.shape
        s = k.shape[1]
        e = q.shape[-1] // self.h
        kvh = self.kvh if self.form == "llama" else 1 if self.form == "mqa" else self.h
        q = q.view(b, l, self.h, e).transpose(1, 2)
        k = k.view(b, s, kvh, e).transpose(1, 2)
        v = v.view(b, s, kvh, e).transpose(1, 2)
        if self.form == "llama":  # transformers' eager_attention_forward with repeat_kv
            k, v = _repeat_kv(k, self.h // kvh), _repeat_kv(v, self.h // kvh)
            w = torch.matmul(q, k.transpose(2, 3)) * e ** -0.5 + mask[:, :, :, :s]
            w = F.softmax(w, dim=-1, dtype=torch.float32).to(q.dtype)
            w = F.dropout(w, p=0.0, training=False)
        elif self.form == "mqa":  # one k/v head repeated with repeat_interleave-free expand
            k, v = k.expand(b, self.h, s, e), v.expand(b, self.h, s, e)
            w = torch.softmax(q @ k.transpose(-1, -2) / e ** 0.5, -1)
        elif self.form == "gpt2":  # a bool buffer, a 0-d divisor and finfo.min
            w = torch.matmul(q, k.transpose(-1, -2))
            w = w / torch.full([], v.size(-1) ** 0.5, dtype=w.dtype)
            w = torch.where(self.bias[:, :, :l, :s], w, torch.full([], torch.finfo(w.dtype).min, dtype=w.dtype))
            w = F.softmax(w, dim=-1).type(v.dtype)
        elif self.form == "padding":  # a runtime boolean padding mask, masked_fill with -inf
            w = (q @ k.transpose(-2, -1)) * 0.3
            w = w.masked_fill(~mask, float("-inf")).float().softmax(-1).to(q.dtype)
        elif self.form == "noise":  # a constant mask that is no causal one stays a mask
            w = torch.softmax((q @ k.transpose(-2, -1)).masked_fill(~self.noise, torch.finfo(q.dtype).min), -1)
        elif self.form == "whisper":  # q scaled before the product, bmm over [B*H, L, E]
            q = (q * e ** -0.5).reshape(b * self.h, l, e)
            w = torch.softmax(torch.bmm(q, k.reshape(b * self.h, s, e).transpose(1, 2)), -1)
            return torch.bmm(w, v.reshape(b * self.h, s, e)).view(b, self.h, l, e).transpose(1, 2).reshape(b, l, -1)
        return torch.matmul(w, v).transpose(1, 2).contiguous().reshape(b, l, -1)


def _form_args(form, dtype=torch.float32, b=2, l=12, d=32):
    g = torch.Generator().manual_seed(3)
    kvd = d // 2 if form == "llama" else d // 4 if form == "mqa" else d  # 2 k/v heads, 1, 4
    args = [torch.randn(b, l, d, generator=g), torch.randn(b, l, kvd, generator=g), torch.randn(b, l, kvd, generator=g)]
    args = [a.to(dtype) for a in args]
    if form == "llama":
        m = torch.full((l, l), torch.finfo(dtype).min).triu(1).to(dtype)
        # transformers' causal mask, 3 keys longer than the sequence (the model slices it to S)
        args.append(torch.cat([m, torch.zeros(l, 3, dtype=dtype)], 1).expand(b, 1, l, l + 3).contiguous())
    if form == "padding":
        keep = torch.ones(b, 1, 1, l, dtype=torch.bool)
        keep[1, ..., 9:] = False  # the second sequence's last 3 keys are padding
        args.append(keep)
    return args


FORMS = {  # form -> what the report says it recognised
    "llama": "additive mask, dropout p=0",  # in bf16, also "softmax in float32"
    "mqa": "plain",
    "gpt2": "boolean mask, causal (from a mask known at compile time)",
    "padding": "boolean mask",
    "noise": "boolean mask",
    "whisper": "plain",
}


@pytest.mark.parametrize("form", list(FORMS))
def test_model_forms_become_one_sdpa_with_the_same_function(form):
    """Each form is found (the record names what was recognised), rewritten to one SDPA call,
    and the rewritten program computes what the model does (float32, torch's own SDPA)."""
    model, args = Forms(form).eval(), _form_args(form)
    ep = torch.export.export(model, tuple(args), strict=False)
    count, records = fuse_attention(ep, F32)
    assert count == 1 and records == [dict(records[0], attention=True, form=FORMS[form])], records
    assert records[0]["source"].endswith(".py:" + records[0]["source"].rsplit(":", 1)[1])
    (call,) = sdpa_calls(ep.graph)
    assert not any(n.target in (torch.ops.aten.softmax.int, torch.ops.aten._softmax.default) for n in ep.graph.nodes)
    causal = call.kwargs.get("is_causal", False)
    assert causal == (form == "gpt2") and (len(call.args) == 4) == (form in ("llama", "padding", "noise"))
    torch.testing.assert_close(ep.module()(*args), model(*args), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("form", ["llama", "gpt2", "padding"])
def test_model_forms_compiled_on_cpu_against_float64(form):
    """End to end on the CPU (IREE's attention op): the compiled form against the model in
    float64 on new inputs; in the padding form a whole row of the second sequence's keys is
    masked only partly, and the llama mask keys past L (sliced to S) are read."""
    model, args = Forms(form).eval(), _form_args(form)
    compiled = braze.compile(model, *args, attention=True)
    assert compiled.report.attention == {"rewritten": 1, "fused": 1}
    assert [r["form"] for r in compiled.report.softmaxes] == [FORMS[form]]
    assert f"attention ({FORMS[form]})" in str(compiled.report)
    new = [a * 1.5 if a.is_floating_point() and a.dim() == 3 else a for a in _form_args(form)]
    want = model.double()(*[a.double() if a.is_floating_point() else a for a in new])
    got = compiled(*new)
    assert torch.isfinite(got).all()
    assert (got.double() - want).abs().max().item() < 1e-5 * want.abs().max().item()


class _Refused(torch.nn.Module):
    def __init__(self, how):
        super().__init__()
        self.how = how

    def forward(self, q, k, v, m):
        s = q @ k.transpose(-2, -1)
        if self.how == "scale after mask":
            p = torch.softmax((s + m) * 0.5, -1)
        elif self.how == "small fill":
            p = torch.softmax(s.masked_fill(m < 0, -1e4), -1)
        elif self.how == "returned":
            p = torch.softmax(s + m, -1)
            return p @ v, p
        elif self.how == "scores reused":
            return torch.softmax(s, -1) @ v + s.mean()
        else:  # a tensor scale
            p = torch.softmax(s * m, -1)
        return p @ v


@pytest.mark.parametrize("how,why", [
    ("scale after mask", "a scale applied after the mask"),
    ("small fill", "a select with fill -10000"),
    ("returned", "the probabilities are used elsewhere too"),
    ("scores reused", "the scores are used elsewhere too"),
    ("tensor scale", "multiplied by a tensor"),
])
def test_softmaxes_left_alone_say_why(how, why):
    """What would change the function (or leave the scores needed) is not rewritten, and the
    record of that softmax says why."""
    args = _qkv(2, 3, 8, 4) + [torch.randn(2, 3, 8, 8)]
    ep = torch.export.export(_Refused(how), tuple(args), strict=False)
    count, (record,) = fuse_attention(ep, F32)
    assert count == 0 and not record["attention"] and why in record["why"], record
    assert not sdpa_calls(ep.graph)


def test_a_row_masked_everywhere_by_a_finite_fill_stays_uniform():
    """where(keep, s, finfo.min) with a row of no kept key: eager's softmax gives that row the
    mean of v (every score equal); the additive mask the rewrite makes keeps that, as the fill
    absorbs the score it is added to."""
    model = Forms("noise").eval()
    model.noise[5] = False
    args = _form_args("noise")
    compiled = braze.compile(model, *args, attention=True)
    assert compiled.report.attention == {"rewritten": 1, "fused": 1}
    got, want = compiled(*args), model.double()(*[a.double() for a in args])
    assert (got.double() - want).abs().max().item() < 1e-5 * want.abs().max().item()


@pytest.mark.cuda
@pytest.mark.parametrize("form", ["llama", "gpt2", "padding", "whisper"])
def test_model_forms_on_the_gpu(form):
    """The forms in bf16 on the GPU: one generated flash-attention kernel each, against the
    model in float64 within 4x the error of eager bf16 on the GPU."""
    dtype = torch.bfloat16
    model, args = Forms(form, heads=4, length=77).eval().to(dtype), _form_args(form, dtype, b=3, l=77, d=256)
    compiled = braze.compile(model, *args, device="cuda")
    assert [r["attention"] for r in compiled.report.softmaxes] == [True], compiled.report.softmaxes
    assert any(k["generated"] and k["kernel"].startswith("attention") for k in compiled.report.kernels)
    got = compiled(*(a.cuda() for a in args)).cpu()
    with torch.no_grad():
        want = Forms(form, heads=4, length=77).eval().double()(*[a.double() if a.is_floating_point() else a for a in args])
        eager = model.cuda()(*(a.cuda() for a in args)).cpu()
    err = (got.double() - want).abs().max().item()
    own = (eager.double() - want).abs().max().item()
    assert err <= 4 * own + 1e-6, (err, own)


class _SdpaMask(torch.nn.Module):
    def forward(self, q, k, v, m):
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=m)


@pytest.mark.parametrize("mask_dims", [4, 3, 2])
def test_the_models_own_sdpa_calls_are_reported_and_any_mask_rank_kept(mask_dims):
    """An SDPA call the model makes itself has its record in the report, and stays one attention
    op whatever its mask's rank (a 2-D or 3-D mask made torch-mlir's attention lowering fail, and
    braze imported the module again decomposed without a word): the compiled call against SDPA in
    float64."""
    from braze.compiler import lower

    torch.manual_seed(3)
    q, k, v = (torch.randn(2, 3, 5, 16) for _ in range(3))
    mask = torch.randn((2, 1, 5, 5)[-mask_dims:] if mask_dims != 3 else (1, 5, 5))
    report = lower(_SdpaMask().eval().bfloat16(), q.bfloat16(), k.bfloat16(), v.bfloat16(), mask.bfloat16(),
                   device="cuda", target="sm_90").report
    (record,) = report.softmaxes
    assert "test_attention" in record["source"]
    assert record["attention"] and record["form"] == "scaled_dot_product_attention", record
    assert report.attention == {"rewritten": 0, "fused": 1}
    compiled = braze.compile(_SdpaMask().eval(), q, k, v, mask, attention=True, cache=False)
    assert compiled.report.attention == {"rewritten": 0, "fused": 1}
    want = torch.nn.functional.scaled_dot_product_attention(q.double(), k.double(), v.double(), attn_mask=mask.double())
    assert (compiled(q, k, v, mask).double() - want).abs().max().item() < 1e-5 * want.abs().max().item()


def test_an_sdpa_torch_mlir_cannot_lower_is_reported(monkeypatch):
    """Where torch-mlir's attention lowering fails, braze imports the module again decomposed
    and the record of the model's SDPA call says so, with torch-mlir's reason."""
    from braze.compiler import frontend, lower
    from braze.errors import UnsupportedOpError

    real = frontend._run_lowering

    def failing(module, context, pipeline, *rest):
        if pipeline == frontend.TORCH_TO_BACKEND_KEEP_SDPA:
            raise UnsupportedOpError("torch-mlir failed to lower it (a form its attention lowering lacks)")
        return real(module, context, pipeline, *rest)

    monkeypatch.setattr(frontend, "_run_lowering", failing)
    q, k, v = (torch.randn(1, 2, 5, 16).bfloat16() for _ in range(3))
    report = lower(_SdpaMask().eval(), q, k, v, torch.randn(1, 1, 5, 5).bfloat16(), device="cuda",
                   target="sm_90").report
    (record,) = report.softmaxes
    assert not record["attention"] and "form" not in record
    assert record["why"] == ("torch-mlir's attention lowering failed on it; imported decomposed (torch-mlir "
                             "failed to lower it (a form its attention lowering lacks))"), record
    assert "kept: torch-mlir's attention lowering failed" in str(report) and not report.attention
