"""What arithmetic the generated kernels do, checked where Triton's interpreter cannot see it.

- float32 (braze.kernels.precision): Triton's interpreter ignores `tl.dot`'s input_precision,
  so the template tests cannot tell 3xTF32 from TF32. The PTX can: each float32 template's
  tf32x3 kernel holds the split (cvt.rna.tf32.f32) and three times the TF32 MMAs of the same
  tile's tf32 kernel; the build refuses a kernel whose PTX is not what its spec asks; the
  kernels inside a compiled artifact are tf32x3 by default and tf32 where torch allows TF32.
- 16-bit: the bf16 and f16 GEMM and attention templates under the interpreter (whose bfloat16
  the helper makes the GPU's), against float64 computed from the same 16-bit inputs, within
  bounds derived from the type's unit roundoff u (2^-8 for bf16, 2^-11 for f16).
"""

import dataclasses
import hashlib
import math
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import torch

import braze
from braze.errors import InternalError
from braze.kernels.spec import AttentionSpec, GemmSpec, Input

pytest.importorskip("triton")
from braze.kernels import build as kbuild  # noqa: E402
from braze.kernels import attention, gemm  # noqa: E402
from braze.kernels.precision import (artifact_kernels, mma_counts, ptx_precision, splits,  # noqa: E402
                                     summary)

HELPER = Path(__file__).parent / "helpers" / "interpret_kernel.py"
UNIT_ROUNDOFF = {"bf16": 2.0 ** -8, "f16": 2.0 ** -11}
TORCH = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32}
F32 = 2.0 ** -24
"""float32's unit roundoff: the kernels' own arithmetic (accumulators, epilogues, softmax)."""


def _run_interpreted(spec, args, tmp_path):
    (tmp_path / "spec.json").write_text(spec.to_json())
    torch.save(list(args), tmp_path / "in.pt")
    subprocess.run([sys.executable, str(HELPER), str(tmp_path / "spec.json"), str(tmp_path / "in.pt"),
                    str(tmp_path / "out.pt")], check=True)
    return torch.load(tmp_path / "out.pt")


# -- float32: the PTX -------------------------------------------------------------------------

_GEMM = GemmSpec(m=300, n=200, k=256, a="f32", b="f32", b_layout="nk", out="f32", precision="tf32x3",
                 inputs=(Input("f32", "row"),), ops=(("%0", "addf", ["acc", "in0"], "f32", None),), result="%0")
_CONV = GemmSpec(m=2 * 14 * 14, n=64, k=32 * 9, a="f32", b="f32", b_layout="nk", out="f32", precision="tf32x3",
                 conv=(2, 32, 14, 14, 3, 3, 1, 1, 1, 1, 1, 1, 14, 14))
_ATTENTION = AttentionSpec(batch=4, l=100, s=77, e=64, ev=32, dtype="f32", out="f32", scale=0.125, mask="causal",
                           precision="tf32x3")
FLOAT32_KERNELS = {
    "gemm": dataclasses.replace(_GEMM, tile=(64, 64, 32, 4, 3)),
    "gemm-kn-two-dots": dataclasses.replace(_GEMM, b_layout="kn", tile=(64, 96, 32, 4, 3)),
    "gemm-split-k": dataclasses.replace(_GEMM, tile=(64, 64, 32, 4, 3, 2)),
    "gemm-stream-k": dataclasses.replace(_GEMM, tile=(64, 64, 32, 4, 3, 1, 0, 8)),
    "gemm-persistent-tma": dataclasses.replace(_GEMM, tile=(128, 128, 32, 8, 3, 1, 1, 8, 1)),
    "gemm-mma-sync": dataclasses.replace(_GEMM, tile=(16, 16, 16, 1, 2)),  # too small a tile for wgmma
    "conv": dataclasses.replace(_CONV, tile=(64, 64, 32, 4, 3)),
    "attention": dataclasses.replace(_ATTENTION, tile=(128, 64, 8, 2)),
}


@pytest.fixture
def kernel_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("BRAZE_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.mark.parametrize("name", list(FLOAT32_KERNELS))
def test_float32_kernel_ptx_is_three_tf32_products(name, kernel_cache):
    """The tf32x3 kernel rounds its operands to TF32 (their big halves) and issues three times
    the TF32 MMAs of the same tile's tf32 kernel, which rounds nothing: 3 products against 1."""
    exact = FLOAT32_KERNELS[name]
    fast = dataclasses.replace(exact, precision="tf32")
    exact_ptx, fast_ptx = kbuild.build(exact).ptx, kbuild.build(fast).ptx
    assert ptx_precision(exact_ptx) == "tf32x3", summary(exact_ptx)
    assert ptx_precision(fast_ptx) == "tf32", summary(fast_ptx)
    assert splits(exact_ptx) > 0 and splits(fast_ptx) == 0
    assert mma_counts(fast_ptx) and mma_counts(exact_ptx) == {key: 3 * n for key, n in mma_counts(fast_ptx).items()}


@pytest.mark.parametrize("spec,found", [
    (dataclasses.replace(_GEMM, a="bf16", b="bf16", out="bf16", precision="", inputs=(Input("bf16", "row"),),
                         tile=(64, 64, 64, 4, 4)), "bf16"),
    (dataclasses.replace(_GEMM, a="f16", b="f16", out="f16", precision="", inputs=(Input("f16", "row"),),
                         tile=(128, 256, 64, 8, 3, 1, 1, 8, 1)), "f16"),
    (dataclasses.replace(_ATTENTION, dtype="bf16", out="bf16", precision="", tile=(64, 64, 4, 3)), "bf16"),
    (dataclasses.replace(_CONV, n=32, k=9, precision="", depthwise=True, tile=gemm.DEPTHWISE_TILE), "f32-fma"),
], ids=["gemm-bf16", "gemm-f16-persistent-tma", "attention-bf16", "depthwise-f32"])
def test_16bit_and_depthwise_kernel_ptx(spec, found, kernel_cache):
    ptx = kbuild.build(spec).ptx
    assert ptx_precision(ptx) == found, summary(ptx)
    assert splits(ptx) == 0


def test_build_refuses_a_kernel_that_is_not_its_specs(kernel_cache, monkeypatch):
    """A template that drops input_precision (Triton's float32 dot is then one TF32 product),
    or keeps it on one of attention's two dots only, is a braze bug the build names; so is a
    cached PTX that is not the spec's."""
    gemm_source, attention_source = gemm.source, attention.source
    monkeypatch.setattr(gemm, "source", lambda spec: gemm_source(spec).replace(', input_precision="tf32x3"', ""))
    with pytest.raises(InternalError, match=r"gemm 300x200x256 .* as tf32 \(0 cvt.rna.tf32.f32, 4 m64n64k8 tf32 "
                                            r"MMAs\) where its spec asks for tf32x3"):
        kbuild.build(FLOAT32_KERNELS["gemm"])

    def first_dot_only(spec):
        text = attention_source(spec)
        last = text.rindex(', input_precision="tf32x3"')
        return text[:last] + text[last:].replace(', input_precision="tf32x3"', "", 1)

    monkeypatch.setattr(attention, "source", first_dot_only)
    with pytest.raises(InternalError, match=r"attention .* as mixed .* asks for tf32x3"):
        kbuild.build(FLOAT32_KERNELS["attention"])
    monkeypatch.setattr(attention, "source", attention_source)
    spec = FLOAT32_KERNELS["attention"]
    assert not kbuild.build(spec).cached
    (entry,) = [p for p in kernel_cache.glob("kernels/*") if (p / "meta.json").is_file()]
    fast_ptx = kbuild.build(dataclasses.replace(spec, precision="tf32")).ptx
    meta = (entry / "meta.json").read_text()
    (entry / "kernel.ptx").write_text(fast_ptx)  # a cached kernel swapped for another, its hash kept right
    old = re.search(r'"ptx_sha256": "(\w+)"', meta).group(1)
    (entry / "meta.json").write_text(meta.replace(old, hashlib.sha256(fast_ptx.encode()).hexdigest()))
    with pytest.raises(InternalError, match="as tf32 .* asks for tf32x3"):
        kbuild.build(spec)


class _ConvAttention(torch.nn.Module):
    """A convolution, three projections, attention over the pixels and an output projection (32
    input channels: fewer run as tf32x3 whatever torch allows, as cuDNN runs them in float32)."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(32, 16, 3, padding=1)
        self.q, self.k, self.v = (torch.nn.Linear(16, 16) for _ in range(3))
        self.out = torch.nn.Linear(16, 8)

    def forward(self, x):
        y = self.conv(x).relu().flatten(2).transpose(1, 2)
        return self.out(torch.nn.functional.scaled_dot_product_attention(self.q(y), self.k(y), self.v(y)))


def test_artifact_float32_kernels_are_tf32x3_unless_tf32_is_allowed(tmp_path):
    """Read back from the saved artifact's .vmfb: each generated kernel's PTX does what its spec
    (on the PTX's first line) asks, and the specs follow torch's flags: matmuls and attention
    in 3xTF32 unless torch.backends.cuda.matmul.allow_tf32, convolutions in TF32 unless
    torch.backends.cudnn.allow_tf32 is off (torch's defaults: False and True)."""
    torch.manual_seed(0)
    model, x = _ConvAttention().eval(), torch.randn(2, 32, 8, 8)
    flags = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    found = {}
    try:
        for matmul_tf32, cudnn_tf32 in ((False, True), (True, False)):
            torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = matmul_tf32, cudnn_tf32
            compiled = braze.compile(model, x, device="cuda", target="sm_90", cache=False)
            path = compiled.save(tmp_path / f"{matmul_tf32}.braze")
            with zipfile.ZipFile(path) as z:
                kernels = artifact_kernels(z.read("module.vmfb"))
            assert len(kernels) == 4, [k.name for k in kernels]  # q, k and v share one kernel
            for k in kernels:
                assert k.name == kbuild.template(k.spec).kernel_name(k.spec)
                assert k.found == k.expected, f"{k.spec.describe()}: {summary(k.ptx)}"
            found[matmul_tf32] = sorted((k.spec.family(), k.found) for k in kernels)
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = flags
    assert found[False] == [("attention", "tf32x3"), ("conv", "tf32"), ("gemm", "tf32x3"), ("gemm", "tf32x3")]
    assert found[True] == [("attention", "tf32"), ("conv", "tf32x3"), ("gemm", "tf32"), ("gemm", "tf32")]


# -- 16-bit: the interpreter against float64 --------------------------------------------------

_F32_EPILOGUE = (("%0", "addf", ["acc", "in0"], "f32", None),       # + residual [M, N]
                 ("%1", "mulf", ["%0", "in1"], "f32", None),        # * a per-row scale [M]
                 ("%2", "cmpf", ["%1", 0.0], "i1", 2),              # > 0
                 ("%3", "mulf", ["%1", "in2"], "f32", None),        # leaky slope, a scalar
                 ("%4", "select", ["%2", "%1", "%3"], "f32", None))


@pytest.mark.parametrize("variant,layout", [((), "nk"), ((), "kn"), ((3, 0, 2), "nk"), ((1, 1, 3, 1), "nk"),
                                            ((1, 0, 5), "kn")],
                         ids=["whole-k", "whole-k-kn", "split-k-tail", "persistent-tma", "stream-k-kn"])
@pytest.mark.parametrize("dtype", ["bf16", "f16"])
def test_16bit_gemm_within_unit_roundoff(dtype, variant, layout, tmp_path):
    """C = leaky((A B + R) * s) rounded once to the 16-bit type: off from float64 by that
    rounding (u |C|) and float32's accumulation and epilogue (K + 3 + split roundings of
    2^-24 each, on |A| |B| + |R|), per element."""
    torch.manual_seed(2)
    m, n, k = 45, 72, 200  # no multiple of the tile in M, N or K; 72 x 2 bytes a TMA row
    t, u = TORCH[dtype], UNIT_ROUNDOFF[dtype]
    a = torch.randn(m, k).to(t)
    b = (torch.randn(n, k) if layout == "nk" else torch.randn(k, n)).to(t)
    res, scale, slope = torch.randn(m, n).to(t), torch.rand(m) + 0.5, torch.tensor(0.25).to(t)
    tile = (32, 32, 32, 4, 2) + variant
    spec = GemmSpec(m=m, n=n, k=k, a=dtype, b=dtype, b_layout=layout, out=dtype,
                    inputs=(Input(dtype, "full"), Input("f32", "col"), Input(dtype, "scalar")),
                    ops=_F32_EPILOGUE, result="%4", tile=tile)
    got = _run_interpreted(spec, (a, b, res, scale, slope), tmp_path)
    assert got.dtype == t
    bt = b.double().T if layout == "nk" else b.double()
    y = (a.double() @ bt + res.double()) * scale.double()[:, None]
    want = torch.where(y > 0, y, 0.25 * y)
    split = gemm.split(spec)
    f32 = (k + 3 + split) * F32 * (a.double().abs() @ bt.abs() + res.double().abs()) * scale.double()[:, None]
    bound = u * want.abs() + (1 + u) * f32
    err = (got.double() - want).abs()
    worst = (err / bound).max().item()
    assert worst <= 1.0, f"error {worst:.2f}x the bound (u={u}), at {divmod((err / bound).argmax().item(), n)}"
    assert (err > 0).any()  # the rounding is there to see: the bound is not vacuous


class _LinearGeluResidual(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(96, 72)

    def forward(self, x, r):
        return torch.nn.functional.gelu(self.linear(x)) + r


def _epilogue64(spec, acc, inputs):
    """The spec's epilogue in float64, each op's result rounded to its type (as IREE's
    emulation of 16-bit arithmetic rounds each op, and the template does); {dst: value}."""
    fns = {"addf": torch.add, "subf": torch.sub, "mulf": torch.mul, "divf": torch.div, "erf": torch.erf,
           "sqrt": torch.sqrt, "truncf": lambda x: x, "extf": lambda x: x, "tanh": torch.tanh, "exp": torch.exp,
           "maximumf": torch.maximum, "minimumf": torch.minimum, "negf": torch.neg}
    values = {"acc": acc, **{f"in{i}": x for i, x in enumerate(inputs)}}
    for dst, op, args, ty, _ in spec.ops:
        v = fns[op](*(values[a] if isinstance(a, str) else torch.tensor(float(a), dtype=torch.float64) for a in args))
        values[dst] = v.to(TORCH[ty]).double() if ty in TORCH else v
    return values


def test_bf16_linear_gelu_kernel_from_the_pass_within_unit_roundoff(tmp_path):
    """The spec the pass makes for a bf16 Linear + GELU + residual (its ops rounded to bf16 one
    by one, as IREE's own kernel would) against the same ops in float64 rounded at the same
    places: equal, but where float32 and float64 fall on two sides of a rounding boundary, when
    the two part by one ulp (2u |v|) at that op v, carried to the result with a gain of at most
    2 in this chain (GELU's slope is below 1.13; erf's result is scaled by x / 2, |x| < 4)."""
    from braze._mlir import ir
    from braze.compiler import lower
    from braze.irutil import all_ops
    from braze.kernels.spec import ATTR, read_spec

    torch.manual_seed(5)
    model = _LinearGeluResidual().eval().bfloat16()
    x, r = torch.randn(70, 96).bfloat16(), torch.randn(70, 72).bfloat16()
    lowered = lower(model, x, r, device="cuda", target="sm_90")
    (spec,) = [read_spec(ir.StringAttr(f.attributes[ATTR]).value)
               for f in all_ops(lowered.module.operation, "func.func") if ATTR in f.attributes]
    assert (spec.a, spec.out, spec.inputs) == ("bf16", "bf16", (Input("bf16", "row"), Input("bf16", "full")))
    rounded = [dst for dst, _, _, ty, _ in spec.ops if ty == "bf16"]
    assert "erf" in [op[1] for op in spec.ops] and len(rounded) >= 5
    w, bias = model.linear.weight.detach(), model.linear.bias.detach()
    got = _run_interpreted(dataclasses.replace(spec, tile=(32, 32, 32, 4, 2)), (x, w, bias, r), tmp_path)
    acc = x.double() @ w.double().T
    values = _epilogue64(spec, acc, (bias.double(), r.double()))
    want = values[spec.result]
    assert values[rounded[0]].abs().max() < 4
    bound = 4 * UNIT_ROUNDOFF["bf16"] * sum(values[d].abs() for d in rounded)
    err = (got.double() - want).abs()
    assert (err / bound).max().item() <= 1.0, f"error {(err / bound).max().item():.2f}x the bound"
    same = (got.double() == want).double().mean().item()
    assert same > 0.99, f"{same:.1%} of the elements equal: a rounding apart at more than a handful"


def _attention64(q, k, v, scale, mask=None, causal=False):
    """softmax(scale q k^T + mask) v in float64 and the probabilities (rows with every key masked: 0)."""
    s = scale * q.double() @ k.double().transpose(-1, -2)
    if mask is not None:
        s = s + mask.double()
    if causal:
        s = s.masked_fill(torch.ones(s.shape[-2:], dtype=torch.bool).triu(1), float("-inf"))
    p = torch.softmax(s, -1).nan_to_num(0.0)
    return p @ v.double(), p


@pytest.mark.parametrize("mask", ["", "causal", "add"])
@pytest.mark.parametrize("dtype", ["bf16", "f16"])
def test_16bit_attention_within_unit_roundoff(dtype, mask, tmp_path):
    """The flash-attention kernel multiplies v by the softmax's numerators rounded to the 16-bit
    type (u each, of values in [0, 1]) and divides by their float32 sum: off from float64 by
    u (P |V|) there, u |O| in the result's rounding, and float32's softmax and sums (2^-16 (P |V|)
    holds them with room: 2^8 times float32's own)."""
    torch.manual_seed(8)
    (b, h), (l, s, e, ev) = (2, 2), (37, 45, 20, 24)
    t, u = TORCH[dtype], UNIT_ROUNDOFF[dtype]
    q, k, v = (torch.randn(b * h, rows, width).to(t) for rows, width in ((l, e), (s, e), (s, ev)))
    args, full, extra = [q, k, v], None, {}
    if mask == "add":
        m = torch.randn(b, 1, l, s).to(t)
        m[0, 0, 3] = float("-inf")
        args.append(m)
        full = m.expand(b, h, l, s).reshape(b * h, l, s)
        extra = dict(mask_dtype=dtype, heads=h, mask_strides=(l * s, 0, s, 1))
    spec = AttentionSpec(batch=b * h, l=l, s=s, e=e, ev=ev, dtype=dtype, out=dtype, scale=0.3, mask=mask,
                         tile=(16, 16, 4, 2), **extra)
    spec.check()
    got = _run_interpreted(spec, args, tmp_path)
    assert got.dtype == t
    want, p = _attention64(q, k, v, 0.3, full, causal=mask == "causal")
    pv = p @ v.double().abs()
    bound = u * want.abs() + (u + 2.0 ** -16) * pv
    err = (got.double() - want).abs()
    assert (err / bound.clamp_min(1e-300)).max().item() <= 1.0, f"error {(err / bound).max().item():.2f}x the bound"
    assert (err > 0).any()


@pytest.mark.parametrize("dtype", ["bf16", "f16"])
def test_16bit_attention_rounds_its_result_once(dtype, tmp_path):
    """With integer scores (small integer q and k, scale ln 2: the kernel's base-2 exponent is
    q k^T itself) the softmax's numerators are powers of two, exact in any type: what is left
    is the result's own rounding (u |O|) and float32's sums."""
    torch.manual_seed(9)
    (bh, l, s, e, ev), t, u = (3, 37, 45, 8, 24), TORCH[dtype], UNIT_ROUNDOFF[dtype]
    q, k = torch.randint(-2, 3, (bh, l, e)).to(t), torch.randint(-2, 3, (bh, s, e)).to(t)
    v = torch.randn(bh, s, ev).to(t)
    spec = AttentionSpec(batch=bh, l=l, s=s, e=e, ev=ev, dtype=dtype, out=dtype, scale=math.log(2), mask="causal",
                         tile=(16, 16, 4, 2))
    got = _run_interpreted(spec, [q, k, v], tmp_path)
    want, p = _attention64(q, k, v, math.log(2), causal=True)
    bound = u * want.abs() + (s + 8) * F32 * (p @ v.double().abs())
    err = (got.double() - want).abs()
    assert (err / bound).max().item() <= 1.0, f"error {(err / bound).max().item():.2f}x the bound"
    assert (err > 0).any()
