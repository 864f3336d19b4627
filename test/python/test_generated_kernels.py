"""Generated GEMM kernels (fusion-generate-kernels, braze.kernels).

- The template's arithmetic, under Triton's interpreter on the CPU, against torch in float64:
  a spec the pass made from a real Linear + GELU, and hand-written specs for the layouts, the
  epilogue's operand kinds, batches and ragged edges (float16 here; bfloat16, and bounds
  derived from each 16-bit type's unit roundoff, in test_kernel_precision).
- braze.compile for sm_90 on this machine: the kernel is Hopper code (`.target sm_90a`,
  `wgmma.mma_async`) inside the artifact, one dispatch per Linear, in the launch plan.
- The kernel cache: a second build is a hit; a damaged entry is rebuilt, never used.
- On a GPU host (skipped elsewhere): bf16 and f16 results against torch on ragged shapes.
"""

import dataclasses
import json
import math
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import torch

import braze
from braze.compiler import lower
from braze.irutil import all_ops
from braze.kernels.spec import ATTR, GemmSpec, Input

triton = pytest.importorskip("triton")
from braze.kernels import build as kbuild  # noqa: E402
from braze.kernels import gemm  # noqa: E402

HELPER = Path(__file__).parent / "helpers" / "interpret_kernel.py"


def _run_interpreted(spec: GemmSpec, args, tmp_path):
    (tmp_path / "spec.json").write_text(spec.to_json())
    torch.save(list(args), tmp_path / "in.pt")
    subprocess.run([sys.executable, str(HELPER), str(tmp_path / "spec.json"), str(tmp_path / "in.pt"),
                    str(tmp_path / "out.pt")], check=True)
    return torch.load(tmp_path / "out.pt")


def _specs(module_op) -> list:
    from braze._mlir import ir
    from braze.kernels.spec import read_spec

    return [read_spec(ir.StringAttr(f.attributes[ATTR]).value)
            for f in all_ops(module_op, "func.func") if ATTR in f.attributes]


class LinearGelu(torch.nn.Module):
    def __init__(self, k, n):
        super().__init__()
        self.linear = torch.nn.Linear(k, n)

    def forward(self, x):
        return torch.nn.functional.gelu(self.linear(x))


def _close(got, want64, eager, rel=4.0):
    """Within `rel` times the error eager float16 itself makes against float64, plus 1 ulp."""
    err = (got.double() - want64).abs().max().item()
    own = (eager.double() - want64).abs().max().item()
    limit = rel * own + 2 ** -10 * want64.abs().max().item()
    assert err <= limit, f"error {err:.3e} > {limit:.3e} (eager float16's own: {own:.3e})"


def test_pass_spec_of_a_linear_gelu_computes_it(tmp_path):
    torch.manual_seed(0)
    model = LinearGelu(40, 72).eval().half()
    x = torch.randn(70, 40).half()
    lowered = lower(model, x, device="cuda", target="sm_90")
    (spec,) = _specs(lowered.module.operation)
    assert (spec.m, spec.n, spec.k, spec.b_layout, spec.out) == (70, 72, 40, "nk", "f16")
    assert spec.inputs == (Input("f16", "row"),)
    assert "erf" in [op[1] for op in spec.ops]
    w, b = model.linear.weight.detach(), model.linear.bias.detach()
    got = _run_interpreted(spec, (x, w, b), tmp_path)
    want = torch.nn.functional.gelu(torch.nn.functional.linear(x.double(), w.double(), b.double()))
    with torch.no_grad():
        _close(got, want, model(x))


class LinearThroughReshapes(torch.nn.Module):
    """A Linear on [B, S, K] (a matmul on [B*S, K], its result reshaped back), a residual read as
    [B, S, N], then a GELU of the flattened tensor: BERT's shapes, where the epilogue ops sit
    behind reshapes of the matmul's result."""

    def __init__(self, k, n):
        super().__init__()
        self.linear = torch.nn.Linear(k, n)

    def forward(self, x, residual):
        return torch.nn.functional.gelu((self.linear(x) + residual).reshape(-1))


def test_pass_takes_the_epilogue_through_reshapes(tmp_path):
    torch.manual_seed(9)
    model = LinearThroughReshapes(40, 24).eval().half()
    x, residual = torch.randn(3, 10, 40).half(), torch.randn(3, 10, 24).half()
    lowered = lower(model, x, residual, device="cuda", target="sm_90")
    (spec,) = _specs(lowered.module.operation)
    assert (spec.m, spec.n, spec.k) == (30, 24, 40) and spec.inputs == (Input("f16", "row"), Input("f16", "full"))
    assert "erf" in [op[1] for op in spec.ops] and lowered.report.kernels[0]["generated"]
    main = next(f for f in all_ops(lowered.module.operation, "func.func") if ATTR not in f.attributes)
    assert not list(all_ops(main, ("linalg.generic",)))  # bias, residual and GELU all in the kernel
    w, b = model.linear.weight.detach(), model.linear.bias.detach()
    got = _run_interpreted(spec, (x.reshape(30, 40), w, b, residual), tmp_path)
    want = model.double()(x.double(), residual.double()).reshape(30, 24)
    with torch.no_grad():
        _close(got, want, model.half()(x, residual).reshape(30, 24))


_RAGGED_OPS = (("%0", "addf", ["acc", "in0"], "f32", None),       # + residual [M, N]
               ("%1", "mulf", ["%0", "in1"], "f32", None),        # * a per-row scale [M]
               ("%2", "cmpf", ["%1", 0.0], "i1", 2),              # > 0
               ("%3", "mulf", ["%1", "in2"], "f32", None),        # leaky slope, a scalar
               ("%4", "select", ["%2", "%1", "%3"], "f32", None),
               ("%5", "truncf", ["%4"], "f16", None))


def _ragged_case(m, n, k, layout, tile, tmp_path):
    """The template at `tile` on [m, k] x B with a residual, a per-row scale and a leaky ReLU in
    its epilogue, against torch in float64."""
    a = torch.randn(m, k).half()
    b = torch.randn(n, k).half() if layout == "nk" else torch.randn(k, n).half()
    res, col, s = torch.randn(m, n).half(), torch.randn(m).float(), torch.tensor(0.25).half()
    spec = GemmSpec(m=m, n=n, k=k, a="f16", b="f16", b_layout=layout, out="f16",
                    inputs=(Input("f16", "full"), Input("f32", "col"), Input("f16", "scalar")),
                    ops=_RAGGED_OPS, result="%5", tile=tile)
    got = _run_interpreted(spec, (a, b, res, col, s), tmp_path)
    bt = b.double().T if layout == "nk" else b.double()
    y = (a.double() @ bt + res.double()) * col.double()[:, None]
    want = torch.where(y > 0, y, y * 0.25)
    eager = torch.where(y > 0, y, y * 0.25).half()  # the one rounding eager makes
    _close(got, want, eager + 0 * want)


@pytest.mark.parametrize("variant", [(), (3,), (3, 0, 2), (1, 1), (1, 0, 5), (1, 1, 5), (1, 0, 4, 1), (1, 1, 3, 1)],
                         ids=["whole-k", "split-k", "split-k-tail", "tma", "stream-k", "stream-k-tma", "persistent",
                              "persistent-tma"])
@pytest.mark.parametrize("layout", ["nk", "kn"])
def test_template_layouts_inputs_and_ragged_edges(layout, variant, tmp_path):
    torch.manual_seed(1)
    m, n, k = 33, 65, 48  # no multiple of the tile in M, N or K
    if variant[1:2] == (1,) and layout == "kn":
        n = 72  # TMA reads [K, N] rows of a multiple of 16 bytes (still no multiple of the tile)
    # split 3: 1 + 1 K steps each; stream-K: 6 tiles x 3 K steps over 5 programs, so tiles are
    # cut between programs at different steps; persistent: 6 tiles over 4 (or 3) programs, so
    # some programs take two tiles; split-k-tail: the first 2 tiles whole, the other 4 split 3 ways
    _ragged_case(m, n, k, layout, (32, 32, 16, 4, 2) + variant, tmp_path)


@pytest.mark.parametrize("variant", [(), (3,), (3, 0, 2)], ids=["whole-k", "split-k", "split-k-tail"])
@pytest.mark.parametrize("layout", ["nk", "kn"])
def test_template_tile_of_two_dots(layout, variant, tmp_path):
    """A tile 48 = 32 + 16 columns wide (two dots side by side, as 96 = 64 + 32 on the GPU): N
    = 100 leaves a last tile of 4 columns, inside the first dot's; M and K no multiple either."""
    torch.manual_seed(11)
    _ragged_case(45, 100, 40, layout, (32, 48, 16, 4, 2) + variant, tmp_path)


@pytest.mark.parametrize("variant", [(1, 1, 3, 1), (1, 0, 5)], ids=["persistent-tma", "stream-k"])
def test_template_float32_persistent(variant, tmp_path):
    torch.manual_seed(4)
    m, n, k = 45, 70, 52  # float32 rows of 52 x 4 bytes: multiples of 16 bytes, as TMA needs
    a, b, bias = torch.randn(m, k), torch.randn(n, k), torch.randn(n)
    spec = GemmSpec(m=m, n=n, k=k, a="f32", b="f32", b_layout="nk", out="f32", precision="tf32",
                    inputs=(Input("f32", "row"),), ops=(("%0", "addf", ["acc", "in0"], "f32", None),),
                    result="%0", tile=(32, 32, 16, 4, 2) + variant)
    got = _run_interpreted(spec, (a, b, bias), tmp_path)
    want = a.double() @ b.double().T + bias.double()
    assert (got.double() - want).abs().max().item() < 2e-3 * want.abs().max().item()  # TF32's rounding at most


def _rna_tf32(x: torch.Tensor) -> torch.Tensor:
    """float32 rounded to TF32 by nearest, ties away from zero (cvt.rna.tf32.f32), by hand."""
    bits = x.float().contiguous().view(torch.int32).long()
    sign, mag = bits & ~0x7FFFFFFF, bits & 0x7FFFFFFF
    mag = ((mag + 0x1000) >> 13) << 13
    return (sign | mag).int().view(torch.float32)


def test_tf32_rounding_by_hand_is_cvt_rna():
    x = torch.tensor([1.0, 1.0 + 2 ** -11, 1.0 + 2 ** -11 - 2 ** -20, -(1.0 + 2 ** -11), -0.0, float("inf")])
    assert _rna_tf32(x).tolist() == [1.0, 1.0 + 2 ** -10, 1.0, -(1.0 + 2 ** -10), -0.0, float("inf")]


@pytest.mark.parametrize("variant", [(), (3,), (1, 1), (1, 0, 5), (1, 0, 4, 1)],
                         ids=["whole-k", "split-k", "tma", "stream-k", "persistent"])
def test_tf32_kernels_round_their_operands_to_nearest(variant, tmp_path):
    """One TF32 product (precision 'tf32'): wgmma truncates float32 operands to TF32, cuBLAS and
    cuDNN round them to nearest (bench/NOTES.md §42), so the template rounds each operand first.
    Triton's interpreter multiplies in float32 whatever the precision, which makes the rounding
    visible: the result is the float64 product of the rounded operands to float32's accuracy,
    and differs from the product of the operands themselves by TF32's."""
    torch.manual_seed(12)
    m, n, k = 40, 70, 64
    a, b = torch.rand(m, k) + 0.5, torch.randn(n, k)
    spec = GemmSpec(m=m, n=n, k=k, a="f32", b="f32", b_layout="nk", out="f32", precision="tf32",
                    tile=(32, 32, 16, 4, 2) + variant)
    got = _run_interpreted(spec, (a, b), tmp_path).double()
    rounded = _rna_tf32(a).double() @ _rna_tf32(b).double().T
    exact = a.double() @ b.double().T
    scale = exact.abs().max().item()
    assert (got - rounded).abs().max().item() < 1e-6 * scale
    assert (got - exact).abs().max().item() > 1e-5 * scale  # the operands were rounded at all


def test_tf32_conv_and_attention_round_their_operands_to_nearest(tmp_path):
    from braze.kernels.spec import AttentionSpec

    torch.manual_seed(13)
    n, c, h, w, f = 2, 8, 7, 6, 16
    x, weight = torch.rand(n, c, h, w) + 0.5, torch.randn(f, c, 3, 3)
    spec = GemmSpec(m=n * h * w, n=f, k=c * 9, a="f32", b="f32", b_layout="nk", out="f32", precision="tf32",
                    conv=(n, c, h, w, 3, 3, 1, 1, 1, 1, 1, 1, h, w), tile=(32, 16, 16, 4, 2))
    (tmp_path / "conv").mkdir()
    got = _run_interpreted(spec, (x, weight.reshape(f, -1).contiguous()), tmp_path / "conv").double()
    got = got.reshape(n, f, h, w)
    rounded = torch.nn.functional.conv2d(_rna_tf32(x).double(), _rna_tf32(weight).double(), padding=1)
    assert (got - rounded).abs().max().item() < 1e-6 * rounded.abs().max().item()

    q, k, v = (torch.rand(2, 24, 16) + 0.5 for _ in range(3))
    spec = AttentionSpec(batch=2, l=24, s=24, e=16, ev=16, dtype="f32", out="f32", scale=0.25, precision="tf32",
                         tile=(16, 16, 4, 2))
    spec.check()
    (tmp_path / "att").mkdir()
    got = _run_interpreted(spec, [q, k, v], tmp_path / "att").double()
    # the kernel's online softmax in float64, rounding where the kernel does: q, k, v, and each
    # key block's unnormalized probabilities before they meet v
    qr, kr, vr = (_rna_tf32(t).double() for t in (q, k, v))
    scores = qr @ kr.transpose(-1, -2) * 0.25
    m_i = torch.full((2, 24, 1), -math.inf, dtype=torch.float64)
    l_i, acc = torch.zeros(2, 24, 1, dtype=torch.float64), torch.zeros(2, 24, 16, dtype=torch.float64)
    for start in range(0, 24, 16):
        block = scores[:, :, start:start + 16]
        m_new = torch.maximum(m_i, block.amax(-1, keepdim=True))
        p, alpha = torch.exp(block - m_new), torch.exp(m_i - m_new)
        l_i = l_i * alpha + p.sum(-1, keepdim=True)
        acc = acc * alpha + _rna_tf32(p.float()).double() @ vr[:, start:start + 16]
        m_i = m_new
    rounded = acc / l_i
    exact = _sdpa64(q, k, v, 0.25, None, causal=False)
    near, far = (got - rounded).abs().max().item(), (got - exact).abs().max().item()
    assert near < 0.25 * far and far > 1e-5, (near, far)  # 2.5e-5 and 1.8e-4 when written


@pytest.mark.parametrize("m", [1, 33, 130])
def test_template_with_m_per_call(m, tmp_path):
    """One kernel for every M (a dynamic build's): tiled for M = 1024, run at ragged M's with a
    residual [M, N], a per-row scale [M] and a bias [N] against float64 (at M = 33 with tiles
    of two dots, 48 = 32 + 16 columns)."""
    torch.manual_seed(m)
    n, k = 65, 48
    a, b = torch.randn(m, k).half(), torch.randn(n, k).half()
    res, col, bias = torch.randn(m, n).half(), torch.randn(m).float(), torch.randn(n).half()
    ops = (("%0", "addf", ["acc", "in0"], "f32", None), ("%1", "mulf", ["%0", "in1"], "f32", None),
           ("%2", "addf", ["%1", "in2"], "f32", None), ("%3", "truncf", ["%2"], "f16", None))
    spec = GemmSpec(m=1024, n=n, k=k, a="f16", b="f16", b_layout="nk", out="f16", dynamic_m=True,
                    inputs=(Input("f16", "full"), Input("f32", "col"), Input("f16", "row")),
                    ops=ops, result="%3", tile=(32, 48 if m == 33 else 32, 16, 4, 2))
    got = _run_interpreted(spec, (a, b, res, col, bias), tmp_path)
    assert got.shape == (m, n)
    y = (a.double() @ b.double().T + res.double()) * col.double()[:, None] + bias.double()
    _close(got, y, y.half() + 0 * y)


def test_m_per_call_takes_a_plain_tile_and_keeps_old_names():
    spec = GemmSpec(m=1024, n=64, k=64, a="bf16", b="bf16", b_layout="nk", out="bf16", dynamic_m=True)
    with pytest.raises(ValueError, match="plain tile"):
        dataclasses.replace(spec, tile=(64, 64, 64, 4, 4, 2)).check()
    assert kbuild.gemm.choose_tile(spec, 132) == (64, 64, 64, 4, 4)
    static = dataclasses.replace(spec, dynamic_m=False)
    assert "dynamic_m" not in static.to_json() and static.tuning_signature() != spec.tuning_signature()
    assert "?x64x64" in spec.describe()


class DynamicLinears(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.up, self.down = torch.nn.Linear(48, 96), torch.nn.Linear(96, 48)

    def forward(self, x):
        return self.down(torch.nn.functional.gelu(self.up(x))) + x


def test_a_dynamic_batch_gets_kernels_with_m_per_call(tmp_path):
    """The dynamic build's Linears on [B, S, K] (a matmul on [B*S, K] with B per call) become
    generated kernels whose M comes from the call: the pass's specs, run under the interpreter
    at a batch other than the example's, compute the model; the CUDA artifact's plan launches
    braze's kernels with grids that follow the batch."""
    torch.manual_seed(3)
    model = DynamicLinears().eval().half()
    batch = torch.export.Dim("batch", min=1, max=64)
    x = torch.randn(4, 10, 48).half()
    lowered = lower(model, x, device="cuda", target="sm_90", dynamic_shapes=({0: batch},))
    specs = _specs(lowered.module.operation)
    assert len(specs) == 2 and all(s.dynamic_m for s in specs), lowered.report.kernels
    up, down = sorted(specs, key=lambda s: s.k)
    assert Input("f16", "full") in down.inputs  # the residual
    x3 = torch.randn(3, 10, 48).half()
    h = _run_interpreted(up, (x3.reshape(30, 48), model.up.weight.detach(), model.up.bias.detach()), tmp_path)
    y = _run_interpreted(down, (h, model.down.weight.detach(), model.down.bias.detach(), x3.reshape(30, 48)),
                         tmp_path)
    want = model.double()(x3.double()).reshape(30, 48)
    with torch.no_grad():
        _close(y, want, model.half()(x3).reshape(30, 48), rel=8.0)
    module = braze.compile(model.half(), x, device="cuda", target="sm_90", cache=False,
                           dynamic_shapes=({0: batch},), specialize="none").dynamic
    plan = module.plan
    assert plan is not None and plan.symbolic, module.report.launch_plan
    grids = {}
    for b in (1, 64):
        concrete = plan.concrete([[b, 10, 48]])
        grids[b] = [s.grid for s in concrete.steps if s.op == "dispatch"
                    and plan.executables[s.executable].kernels[s.kernel].name.startswith("braze_gemm")]
        assert len(grids[b]) == 2 and all(s.constants[0] == b * 10 for s in concrete.steps if s.op == "dispatch"
                                          and plan.executables[s.executable].kernels[s.kernel].name.startswith("braze_"))
    assert all(g64[0] > g1[0] for g1, g64 in zip(grids[1], grids[64]))


def test_template_batch(tmp_path):
    torch.manual_seed(2)
    batch, m, n, k = 3, 20, 24, 32
    a, b = torch.randn(batch, m, k).half(), torch.randn(batch, k, n).half()
    spec = GemmSpec(m=m, n=n, k=k, a="f16", b="f16", b_layout="kn", out="f32", batch=batch,
                    tile=(32, 32, 16, 4, 2))
    got = _run_interpreted(spec, (a, b), tmp_path)
    want = a.double() @ b.double()
    assert (got.double() - want).abs().max().item() < 1e-4 * want.abs().max().item()


def test_spec_check_names_the_problem():
    good = GemmSpec(m=4, n=4, k=16, a="bf16", b="bf16", b_layout="nk", out="bf16")
    for field, value, words in (("m", 0, "positive"), ("a", "f64", "element type"), ("b_layout", "mn", "nk")):
        bad = json.loads(good.to_json())
        bad[field] = value
        with pytest.raises(ValueError, match=words):
            GemmSpec.from_json(json.dumps(bad))
    dataclasses.replace(good, tile=(64, 96, 64, 4, 5, 2, 0, 66)).check()  # two dots, K split, whole tiles
    for tile, words in (((48, 64, 64, 4, 4), "BM and BK are powers of 2"), ((64, 64, 48, 4, 4), "BM and BK"),
                        ((64, 40, 64, 4, 4), "multiple of 16"), ((64, 96, 64, 4, 4, 1, 1), "without TMA"),
                        ((64, 96, 64, 4, 4, 1, 0, 132, 1), "not persistent"), ((64, 96, 64, 4, 4, 1, 0, 132), "stream-K")):
        with pytest.raises(ValueError, match=words):
            dataclasses.replace(good, tile=tile).check()


def test_sm90_artifact_holds_wgmma_kernels(tmp_path):
    torch.manual_seed(3)
    model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.GELU(), torch.nn.Linear(512, 256)).eval()
    model = model.bfloat16()
    x = torch.randn(128, 256).bfloat16()
    compiled = braze.compile(model, x, device="cuda", target="sm_90")
    made = [k for k in compiled.report.kernels if k["generated"]]
    assert len(made) == 2, compiled.report.kernels
    assert "erf" in made[0]["kernel"]
    assert compiled.report.dispatch_count == 2  # each Linear with its bias and activation
    assert compiled.report.launch_plan.startswith("2 kernels")
    table = compiled.report.table()
    assert "generated kernels          2 of 2 contractions" in table
    assert made[0]["epilogue_end"] == "the next op widens to float32 (a cast stays with its reader)", made
    assert made[1]["epilogue_end"] == "the result is the function's output"
    path = compiled.save(tmp_path / "mlp.braze")
    with zipfile.ZipFile(path) as z:
        vmfb = z.read("module.vmfb")
    assert vmfb.count(b".target sm_90a") == 2 and b"wgmma.mma_async" in vmfb
    off = braze.compile(model, x, device="cuda", target="sm_90",
                        pipeline="fusion-cuda-pipeline{target=sm_90 kernels=off}")
    assert not any(k["generated"] for k in off.report.kernels)
    with zipfile.ZipFile(off.save(tmp_path / "off.braze")) as z:
        assert b"wgmma" not in z.read("module.vmfb")


@pytest.mark.parametrize("m,tile", [(1, (16, 16, 256, 4, 4)), (1, (16, 32, 128, 4, 4, 4)), (5, (16, 32, 128, 4, 4, 3))],
                         ids=["gemv", "gemv-split-k", "gemv-5-rows-split-3"])
def test_template_weight_streaming_tiles(m, tile, tmp_path):
    """A decode step's projections: fewer rows than the tile's 16, K in ragged 256- or 128-deep
    steps (600), split K with an uneven last part, N no multiple of the tile."""
    torch.manual_seed(12)
    _ragged_case(m, 40, 600, "nk", tile, tmp_path)


def test_decode_step_gemms_take_weight_streaming_tiles():
    """At most 16 rows: 16x16 tiles 256 deep, K of 4096 and more split at 16x32 (NOTES §53);
    wide N (gate/up), more rows, batched matmuls and float32 keep their tiles."""
    def tile(m, n, k, a="bf16", **kw):
        return gemm.choose_tile(GemmSpec(m=m, n=n, k=k, a=a, b=a, b_layout="nk", out=a, **kw), 132)

    assert tile(1, 2048, 1536) == tile(8, 1536, 1536) == tile(16, 896, 896) == gemm.GEMV_TILE
    assert tile(1, 1536, 8960) == tile(1, 896, 4864) == (16, 32, 128, 4, 4, 4)
    assert tile(1, 256, 8192)[5] == 8 and tile(1, 8192, 4096) == gemm.GEMV_TILE
    assert tile(1, 17920, 1536)[0] == 64 and tile(17, 2048, 1536)[0] == 64
    assert tile(1, 2048, 1536, batch=4)[0] != 16
    assert tile(1, 2048, 1536, a="f32", precision="tf32x3")[0] != 16
    for m, n, k in ((1, 2048, 1536), (1, 1536, 8960)):
        assert tile(m, n, k) in gemm.candidates(GemmSpec(m=m, n=n, k=k, a="bf16", b="bf16", b_layout="nk",
                                                         out="bf16"), 132)


def test_long_k_gemm_with_idle_sms_splits_k(tmp_path):
    """256x1024x4096 (a GELU MLP's down projection) has 64 tiles of 64x64 for 132 SMs: its K
    loop is split 4 ways (bench/NOTES.md §26). The kernel counts programs in with an atomic; the
    counters are zeroed by a fill before the dispatch, in IREE's program and the launch plan."""
    torch.manual_seed(6)
    model = torch.nn.Linear(4096, 1024).eval().bfloat16()
    x = torch.randn(256, 4096).bfloat16()
    compiled = braze.compile(model, x, device="cuda", target="sm_90", cache=False)
    (made,) = [k for k in compiled.report.kernels if k["generated"]]
    assert "K split 4 ways" in made["kernel"], made
    steps = [s.op for s in compiled.plan.steps]
    assert steps.index("fill") < steps.index("dispatch"), steps
    fill = compiled.plan.steps[steps.index("fill")]
    assert fill.length == 4 * 64 and fill.pattern == 0  # one zeroed i32 counter per output tile
    with zipfile.ZipFile(compiled.save(tmp_path / "down.braze")) as z:
        vmfb = z.read("module.vmfb")
    assert b"atom.global.gpu.acq_rel.add" in vmfb and b"wgmma.mma_async" in vmfb
    short = braze.compile(torch.nn.Linear(1024, 1024).eval().bfloat16(), x[:, :1024], device="cuda",
                          target="sm_90", cache=False)
    assert "split" not in short.report.kernels[0]["kernel"]  # K of 1024: not worth a split


def test_kernel_cache_hit_and_damaged_entry(tmp_path, monkeypatch):
    monkeypatch.setenv("BRAZE_CACHE_DIR", str(tmp_path))
    spec = GemmSpec(m=64, n=64, k=64, a="bf16", b="bf16", b_layout="nk", out="bf16", tile=(64, 64, 64, 4, 3))
    first = kbuild.build(spec)
    assert not first.cached and "wgmma" in first.ptx
    again = kbuild.build(spec)
    assert again.cached and again.ptx == first.ptx
    (ptx_file,) = tmp_path.glob("kernels/*/kernel.ptx")
    ptx_file.write_text(first.ptx[: len(first.ptx) // 2])  # a torn write
    rebuilt = kbuild.build(spec)
    assert not rebuilt.cached and rebuilt.ptx == first.ptx


def test_build_all_builds_in_parallel_what_build_builds(tmp_path, monkeypatch):
    """Kernels built on threads are the ones built one by one, in the specs' order; a spec that
    differs only in its tile is another kernel, a repeated one is built once."""
    monkeypatch.setenv("BRAZE_CACHE_DIR", str(tmp_path / "parallel"))
    base = GemmSpec(m=64, n=64, k=64, a="bf16", b="bf16", b_layout="nk", out="bf16", tile=(64, 64, 64, 4, 3))
    other = GemmSpec(m=64, n=128, k=64, a="f16", b="f16", b_layout="kn", out="f32", tile=(64, 64, 32, 4, 2))
    retiled = GemmSpec(m=64, n=64, k=64, a="bf16", b="bf16", b_layout="nk", out="bf16", tile=(64, 32, 64, 4, 3))
    specs = [base, other, retiled, base]
    parallel = kbuild.build_all(specs, workers=2)
    assert parallel[3] is parallel[0]  # built once
    assert len({b.ptx for b in parallel}) == 3
    monkeypatch.setenv("BRAZE_CACHE_DIR", str(tmp_path / "serial"))
    serial = [kbuild.build(s) for s in specs[:3]]
    assert [b.ptx for b in serial] == [b.ptx for b in parallel[:3]]


@pytest.mark.cuda
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=["bf16", "f16"])
@pytest.mark.parametrize("m,k,n", [(256, 768, 3072), (77, 200, 131), (1, 64, 64)])
def test_generated_kernels_on_the_gpu(dtype, m, k, n):
    torch.manual_seed(4)
    model = LinearGelu(k, n).eval().to(dtype)
    x = torch.randn(m, k).to(dtype)  # drawn in float32: torch versions draw 16-bit randn differently
    compiled = braze.compile(model, x, device="cuda")
    assert any(kk["generated"] for kk in compiled.report.kernels)
    got = compiled(x.cuda()).cpu()
    w, b = model.linear.weight.detach().double(), model.linear.bias.detach().double()
    want = torch.nn.functional.gelu(torch.nn.functional.linear(x.double(), w, b))
    with torch.no_grad():
        eager = model.cuda()(x.cuda()).cpu()
    err = (got.double() - want).abs().max().item()
    own = (eager.double() - want).abs().max().item()
    assert err <= 4 * own + 1e-6, (err, own)


@pytest.mark.parametrize("stride,padding,dilation,split,bn", [(1, 1, 1, 1, 32), (2, 3, 1, 1, 32), (1, 0, 2, 1, 32),
                                                              (1, 1, 1, 2, 32), (1, 1, 1, (2, 0, 3), 32),
                                                              (2, 1, 1, 2, 48)])
def test_conv_template_is_the_convolution(stride, padding, dilation, split, bn, tmp_path):
    """The implicit GEMM (gathered input, NCHW store, per-channel and whole-tensor epilogue
    operands) against torch's conv2d in float64, on a shape no tile divides (48 = 32 + 16
    output channels a tile: two dots, 37 channels leaving the second partly empty)."""
    torch.manual_seed(5)
    n, c, h, w, f, kh, kw = 2, 3, 11, 9, 5 if bn == 32 else 37, 3, 3
    oh = (h + 2 * padding - dilation * (kh - 1) - 1) // stride + 1
    ow = (w + 2 * padding - dilation * (kw - 1) - 1) // stride + 1
    x, weight, bias = torch.randn(n, c, h, w), torch.randn(f, c, kh, kw), torch.randn(f)
    residual = torch.randn(n, f, oh, ow)
    spec = GemmSpec(m=n * oh * ow, n=f, k=c * kh * kw, a="f32", b="f32", b_layout="nk", out="f32",
                    precision="tf32x3", inputs=(Input("f32", "row"), Input("f32", "full")),
                    ops=(("%0", "addf", ["acc", "in0"], "f32", None), ("%1", "addf", ["%0", "in1"], "f32", None),
                         ("%2", "maximumf", ["%1", 0.0], "f32", None)), result="%2",
                    conv=(n, c, h, w, kh, kw, stride, stride, dilation, dilation, padding, padding, oh, ow),
                    tile=(32, bn, 16, 4, 2) + _split_entries(split))
    got = _run_interpreted(spec, (x, weight.reshape(f, -1).contiguous(), bias, residual), tmp_path)
    want = torch.relu(torch.nn.functional.conv2d(x.double(), weight.double(), bias.double(), stride=stride,
                                                 padding=padding, dilation=dilation) + residual.double())
    assert (got.reshape(want.shape).double() - want).abs().max().item() < 1e-4


@pytest.mark.parametrize("c,kh,stride,padding,dilation,split,nchw_input", [
    (32, 3, 1, 1, 1, 1, False),     # runs of 16 channels a K step (BK divides C)
    (32, 3, 2, 1, 2, 2, False),     # strided, dilated, K split in two
    (32, 1, 1, 0, 1, 1, False),     # 1x1, stride 1: A is the input as it is (a plain GEMM)
    (32, 1, 2, 0, 1, 1, False),     # 1x1, stride 2: gathered rows
    (3, 7, 2, 3, 1, 1, False),      # the 3-channel stem: gathered elements
    (3, 7, 2, 3, 1, 1, True),       # ... read straight from the NCHW input
])
def test_nhwc_conv_template_is_the_convolution(c, kh, stride, padding, dilation, split, nchw_input, tmp_path):
    """The channels-last implicit GEMM (input [N, H, W, C], weight [F, KH, KW, C], result and
    whole-tensor epilogue operand [N, OH, OW, F]) against torch's conv2d in float64, with a
    per-channel and a whole-tensor epilogue operand, on sizes no tile divides (37 output
    channels against 32 a tile, 2*6*5 pixels against 32)."""
    torch.manual_seed(11)
    n, h, w, f = 2, 11, 9, 37
    oh = (h + 2 * padding - dilation * (kh - 1) - 1) // stride + 1
    ow = (w + 2 * padding - dilation * (kh - 1) - 1) // stride + 1
    x, weight, bias = torch.randn(n, c, h, w), torch.randn(f, c, kh, kh), torch.randn(f)
    residual = torch.randn(n, oh, ow, f)
    spec = GemmSpec(m=n * oh * ow, n=f, k=c * kh * kh, a="f32", b="f32", b_layout="nk", out="f32",
                    precision="tf32x3", inputs=(Input("f32", "row"), Input("f32", "full")),
                    ops=(("%0", "addf", ["acc", "in0"], "f32", None), ("%1", "addf", ["%0", "in1"], "f32", None),
                         ("%2", "maximumf", ["%1", 0.0], "f32", None)), result="%2", nhwc=True, nchw_input=nchw_input,
                    conv=(n, c, h, w, kh, kh, stride, stride, dilation, dilation, padding, padding, oh, ow),
                    tile=(32, 32, 16, 4, 2) + _split_entries(split))
    spec.check()
    a = x if nchw_input else x.permute(0, 2, 3, 1)
    got = _run_interpreted(spec, (a.contiguous(), weight.permute(0, 2, 3, 1).reshape(f, -1).contiguous(), bias,
                                  residual), tmp_path)
    conv = torch.nn.functional.conv2d(x.double(), weight.double(), bias.double(), stride=stride, padding=padding,
                                      dilation=dilation)
    want = torch.relu(conv.permute(0, 2, 3, 1) + residual.double())
    assert (got.reshape(want.shape).double() - want).abs().max().item() < 1e-4


def _split_entries(split) -> tuple:
    """A test's split: 1 (none), S, or (S, 0, W): the first W tiles whole, the rest split S ways."""
    return split if isinstance(split, tuple) else ((split,) if split > 1 else ())


@pytest.mark.parametrize("split", [1, 2, (2, 0, 1)], ids=["whole-k", "split-k", "split-k-tail"])
def test_grouped_conv_template_is_the_convolution(split, tmp_path):
    """Grouped convolution: G implicit GEMMs on the grid's second dimension, each reading its
    channels of the input and its rows of the weight, storing its channels of the NCHW result,
    with per-channel and whole-tensor epilogue operands, against torch in float64."""
    torch.manual_seed(8)
    n, c, h, w, f, g = 2, 12, 9, 7, 20, 4
    x, weight, bias = torch.randn(n, c, h, w), torch.randn(f, c // g, 3, 3), torch.randn(f)
    residual = torch.randn(n, f, 5, 4)
    spec = GemmSpec(m=n * 5 * 4, n=f // g, k=c // g * 9, a="f32", b="f32", b_layout="nk", out="f32",
                    precision="tf32x3", groups=g, inputs=(Input("f32", "row"), Input("f32", "full")),
                    ops=(("%0", "addf", ["acc", "in0"], "f32", None), ("%1", "addf", ["%0", "in1"], "f32", None)),
                    result="%1", conv=(n, c, h, w, 3, 3, 2, 2, 1, 1, 1, 1, 5, 4),
                    tile=(32, 32, 16, 4, 2) + _split_entries(split))
    got = _run_interpreted(spec, (x, weight.reshape(f, -1).contiguous(), bias, residual), tmp_path)
    want = torch.nn.functional.conv2d(x.double(), weight.double(), bias.double(), stride=2, padding=1,
                                      groups=g) + residual.double()
    assert (got.reshape(want.shape).double() - want).abs().max().item() < 1e-4


def test_pass_takes_grouped_conv_batchnorm_relu_as_one_kernel():
    model = torch.nn.Sequential(torch.nn.Conv2d(32, 64, 3, padding=1, groups=4, bias=False),
                                torch.nn.BatchNorm2d(64), torch.nn.ReLU()).eval()
    x = torch.randn(2, 32, 8, 8)
    (spec,) = _specs(lower(model, x, device="cuda", target="sm_90").module.operation)
    assert (spec.groups, spec.m, spec.n, spec.k) == (4, 128, 16, 72) and spec.conv[:4] == (2, 32, 8, 8)
    assert [o[1] for o in spec.ops][-2:] == ["cmpf", "select"]
    compiled = braze.compile(model, x, device="cuda", target="sm_90", cache=False)
    assert compiled.report.dispatch_count == 1 and "in 4 groups" in compiled.report.kernels[0]["kernel"]
    biased = torch.nn.Conv2d(32, 64, 3, padding=1, groups=4).eval()  # the bias its first epilogue op
    (with_bias,) = _specs(lower(biased, x, device="cuda", target="sm_90").module.operation)
    assert with_bias.inputs[0] == Input("f32", "row") and with_bias.ops[0][:3] == ("%b", "addf", ["acc", "in0"])
    # bf16: braze's fusion spells the result's bf16 rounding in integer ops; the epilogue takes it as
    # one truncf (the template's round to nearest even), so BatchNorm and ReLU stay in the kernel
    (half,) = _specs(lower(model.bfloat16(), x.bfloat16(), device="cuda", target="sm_90").module.operation)
    assert half.ops[0][1:4] == ("truncf", ["acc"], "bf16") and [o[1] for o in half.ops][-2:] == ["cmpf", "select"]


@pytest.mark.parametrize("stride,padding,dilation", [(1, 1, 1), (2, 2, 1), (1, 0, 2)])
def test_depthwise_template_is_the_convolution(stride, padding, dilation, tmp_path):
    """The direct depthwise kernel (a program per channels x pixels tile, taps gathered, the
    BatchNorm-shaped epilogue per channel plus a residual) against torch in float64, on a shape
    no tile divides (channels 20 against 16 a tile, pixels 2*9*7 against 128)."""
    torch.manual_seed(7)
    n, c, h, w, kh, kw = 2, 20, 11, 9, 3, 3
    oh = (h + 2 * padding - dilation * (kh - 1) - 1) // stride + 1
    ow = (w + 2 * padding - dilation * (kw - 1) - 1) // stride + 1
    x, weight, scale = torch.randn(n, c, h, w), torch.randn(c, 1, kh, kw), torch.randn(c)
    residual = torch.randn(n, c, oh, ow)
    spec = GemmSpec(m=n * oh * ow, n=c, k=kh * kw, a="f32", b="f32", b_layout="nk", out="f32", depthwise=True,
                    inputs=(Input("f32", "row"), Input("f32", "full")),
                    ops=(("%0", "mulf", ["acc", "in0"], "f32", None), ("%1", "addf", ["%0", "in1"], "f32", None),
                         ("%2", "maximumf", ["%1", 0.0], "f32", None)), result="%2",
                    conv=(n, c, h, w, kh, kw, stride, stride, dilation, dilation, padding, padding, oh, ow),
                    tile=(128, 16, 16, 4, 1))
    got = _run_interpreted(spec, (x, weight.reshape(c, -1).contiguous(), scale, residual), tmp_path)
    conv = torch.nn.functional.conv2d(x.double(), weight.double(), stride=stride, padding=padding,
                                      dilation=dilation, groups=c)
    want = torch.relu(conv * scale.double()[None, :, None, None] + residual.double())
    assert (got.reshape(want.shape).double() - want).abs().max().item() < 1e-5


def test_pass_takes_depthwise_conv_batchnorm_relu_as_one_kernel():
    model = torch.nn.Sequential(torch.nn.Conv2d(24, 24, 3, stride=2, padding=1, groups=24, bias=False),
                                torch.nn.BatchNorm2d(24), torch.nn.ReLU()).eval()
    x = torch.randn(2, 24, 15, 15)
    (spec,) = _specs(lower(model, x, device="cuda", target="sm_90").module.operation)
    assert spec.depthwise and spec.precision == ""  # f32 FMAs: exact whatever torch allows
    assert spec.conv == (2, 24, 15, 15, 3, 3, 2, 2, 1, 1, 1, 1, 8, 8)  # reads the unpadded input
    assert (spec.m, spec.n, spec.k) == (128, 24, 9)
    assert [o[1] for o in spec.ops][-2:] == ["cmpf", "select"]  # the ReLU joined
    compiled = braze.compile(model, x, device="cuda", target="sm_90", cache=False)
    assert compiled.report.dispatch_count == 1 and "depthwise conv" in compiled.report.kernels[0]["kernel"]
    grouped = torch.nn.Conv2d(24, 24, 3, padding=1, groups=4, bias=False).eval()  # not depthwise
    assert [s.groups for s in _specs(lower(grouped, x, device="cuda", target="sm_90").module.operation)] == [4]


def test_pass_takes_conv_bias_batchnorm_relu_as_one_kernel(tmp_path):
    class ConvBnRelu(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv2d(32, 64, 3, stride=2, padding=1)
            self.bn = torch.nn.BatchNorm2d(64)

        def forward(self, x):
            return torch.relu(self.bn(self.conv(x)))

    model, x = ConvBnRelu().eval(), torch.randn(2, 32, 16, 16)
    lowered = lower(model, x, device="cuda", target="sm_90")  # cuDNN's default: TF32
    (spec,) = _specs(lowered.module.operation)
    assert spec.conv == (2, 32, 16, 16, 3, 3, 2, 2, 1, 1, 1, 1, 8, 8)  # reads the unpadded input
    assert (spec.m, spec.n, spec.k, spec.precision) == (128, 64, 288, "tf32")  # 27 flop/B: TF32
    assert spec.inputs[0] == Input("f32", "row") and spec.ops[0][:3] == ("%b", "addf", ["acc", "in0"])
    assert [o[1] for o in spec.ops][-2:] == ["cmpf", "select"]  # the ReLU
    compiled = braze.compile(model, x, device="cuda", target="sm_90", cache=False)
    assert compiled.report.dispatch_count == 1 and compiled.report.launch_plan.startswith("1 kernels")
    with zipfile.ZipFile(compiled.save(tmp_path / "conv.braze")) as z:
        assert b"wgmma.mma_async" in z.read("module.vmfb")
    im2col = braze.compile(model, x, device="cuda", target="sm_90", cache=False,
                           pipeline="fusion-cuda-pipeline{target=sm_90 conv-fp32=im2col}")
    assert not any(k["generated"] and k["kernel"].startswith("conv") for k in im2col.report.kernels)
    assert im2col.report.dispatch_count > 1
    (exact,) = _specs(lower(model, x, device="cuda", target="sm_90", precision="highest").module.operation)
    assert exact.precision == "tf32x3" and exact.conv == spec.conv


@pytest.mark.parametrize("shape,stride,want", [
    ((8, 64, 56, 56, 128, 1), 2, "tf32x3"),   # 10.6 flop/B: cuDNN runs it in float32 with TF32 allowed
    ((2, 64, 56, 56, 128, 1), 2, "tf32x3"),
    ((8, 64, 56, 56, 64, 1), 1, "tf32"),      # 16 flop/B: cuDNN's TF32
    ((8, 128, 56, 56, 256, 1), 2, "tf32"),    # 21 flop/B
    ((2, 32, 16, 16, 8, 3), 2, "tf32x3"),     # 7.5 flop/B
])
def test_memory_bound_float32_convolutions_stay_float32_accurate_under_tf32(shape, stride, want):
    from braze.passes.gpu.generate_kernels import TF32X3_MAX_INTENSITY, conv_intensity

    n, c, h, w, f, k = shape
    o = (h - k) // stride + 1
    assert (conv_intensity(n, c, h, w, f, k, k, o, o) < TF32X3_MAX_INTENSITY) == (want == "tf32x3")
    model, x = torch.nn.Conv2d(c, f, k, stride=stride).eval(), torch.randn(n, c, h, w)
    (spec,) = _specs(lower(model, x, device="cuda", target="sm_90").module.operation)  # TF32 allowed
    assert spec.precision == want, spec


def test_float32_precision_follows_torch_flags_unless_given():
    from braze.passes import pipelines

    model, x = torch.nn.Linear(32, 16), torch.randn(8, 32)
    flags = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    try:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = False, True  # torch's defaults
        pipe = pipelines.for_device("cuda", "sm_90")
        assert (pipe.fp32, pipe.conv_fp32) == ("tf32x3", "tf32")
        (spec,) = _specs(lower(model, x, device="cuda", target="sm_90").module.operation)
        assert spec.precision == "tf32x3"
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = True, False
        pipe = pipelines.for_device("cuda", "sm_90")
        assert (pipe.fp32, pipe.conv_fp32) == ("tf32", "tf32x3")
        (spec,) = _specs(lower(model, x, device="cuda", target="sm_90").module.operation)
        assert spec.precision == "tf32"
        (spec,) = _specs(lower(model, x, device="cuda", target="sm_90", precision="highest").module.operation)
        assert spec.precision == "tf32x3"
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = flags
    with pytest.raises(braze.InputError, match="precision='fast'"):
        lower(model, x, device="cuda", target="sm_90", precision="fast")


def _sdpa64(q, k, v, scale, mask=None, causal=False):
    """softmax(scale q k^T + mask) v in float64, rows with every key masked giving 0."""
    s = scale * q.double() @ k.double().transpose(-1, -2)
    if mask is not None:
        s = s + mask.double()
    if causal:
        s = s.masked_fill(torch.ones(s.shape[-2:], dtype=torch.bool).triu(1), float("-inf"))
    p = torch.softmax(s, -1).nan_to_num(0.0)
    return p @ v.double()


@pytest.mark.parametrize("mask", ["", "causal", "add"])
@pytest.mark.parametrize("dtype,sizes", [("f32", (37, 45, 20, 24)), ("f16", (37, 45, 20, 24)),
                                         ("f16", (48, 48, 16, 32))], ids=["f32", "f16", "f16-even"])
def test_attention_template_is_attention(mask, dtype, sizes, tmp_path):
    """The flash-attention kernel against softmax(q k^T s + mask) v in float64, on ragged sizes
    (L, S, E, EV no tile divides: every bound checked) and even ones (no bound checked but the
    causal loop's, whose last row block reaches past S), with a mask broadcast over heads
    (read at stride 0)."""
    from braze.kernels.spec import AttentionSpec

    torch.manual_seed(6)
    (b, h), (l, s, e, ev) = (2, 3), sizes
    t = {"f32": torch.float32, "f16": torch.float16}[dtype]
    q, k, v = torch.randn(b * h, l, e, dtype=t), torch.randn(b * h, s, e, dtype=t), torch.randn(b * h, s, ev, dtype=t)
    args, full = [q, k, v], None
    extra = {}
    if mask == "add":
        m = torch.randn(b, 1, l, s, dtype=t)
        m[0, 0, 3] = float("-inf")  # a row with every key masked gives 0
        m[1, 0, 5] = torch.finfo(t).min  # ... by float32's finfo.min: uniform weights, as eager's softmax
        args.append(m)
        full = m.expand(b, h, l, s).reshape(b * h, l, s)
        extra = dict(mask_dtype=dtype, heads=h, mask_strides=(l * s, 0, s, 1))
    spec = AttentionSpec(batch=b * h, l=l, s=s, e=e, ev=ev, dtype=dtype, out=dtype, scale=0.3, mask=mask,
                         precision="tf32x3" if dtype == "f32" else "", tile=(32, 16, 4, 2) if l == 48 and mask == "causal" else (16, 16, 4, 2),
                         **extra)
    spec.check()
    got = _run_interpreted(spec, args, tmp_path)
    want = _sdpa64(q, k, v, 0.3, full, causal=mask == "causal")
    tol = 1e-4 if dtype == "f32" else 4e-3
    assert (got.double() - want).abs().max().item() < tol * max(1.0, want.abs().max().item())
    if mask == "add":
        assert got[0, 3].abs().max().item() == 0.0 and got[3, 3].abs().max().item() > 0  # only batch 0's row
        if dtype == "f32":  # (float16's min, -65504, does not absorb the scores)
            uniform = v[h:2 * h].double().mean(1)  # batch 1's heads, row 5: the mean of v
            assert (got[h:2 * h, 5].double() - uniform).abs().max().item() < tol


class _Sdpa(torch.nn.Module):
    def __init__(self, causal=False):
        super().__init__()
        self.causal = causal

    def forward(self, q, k, v, *mask):
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask[0] if mask else None,
                                                                is_causal=self.causal)


class _PlainAttention(torch.nn.Module):
    def forward(self, q, k, v):
        return torch.softmax(q @ k.transpose(-1, -2) * 0.2, -1) @ v


def test_pass_takes_attention_as_one_kernel_with_its_mask(tmp_path):
    """Attention from plain ops and SDPA (causal, or with a mask broadcast over heads) becomes one
    flash-attention kernel in float32 and bf16; the pass's spec, run under Triton's interpreter
    on the model's inputs, is the model's function (float64 eager as the reference)."""
    from braze.kernels.spec import AttentionSpec, read_spec
    from braze._mlir import ir

    torch.manual_seed(7)
    b, h, l, s, e = 2, 3, 24, 40, 16
    q, k, v = torch.randn(b, h, l, e), torch.randn(b, h, s, e), torch.randn(b, h, s, e)
    mask = torch.randn(b, 1, l, s)

    def specs(model, *args):
        lowered = lower(model, *args, device="cuda", target="sm_90")
        found = [read_spec(ir.StringAttr(f.attributes[ATTR]).value)
                 for f in all_ops(lowered.module.operation, "func.func") if ATTR in f.attributes]
        return found, lowered

    (plain,), _ = specs(_PlainAttention().eval(), q, k, v)
    assert isinstance(plain, AttentionSpec) and (plain.batch, plain.l, plain.s, plain.e) == (b * h, l, s, e)
    assert plain.scale == 0.2 and plain.mask == "" and plain.precision == "tf32x3"
    (causal,), _ = specs(_Sdpa(causal=True).eval(), q, k[:, :, :l], v[:, :, :l])
    assert causal.mask == "causal" and abs(causal.scale - e ** -0.5) < 1e-12
    (masked,), lowered = specs(_Sdpa().eval(), q, k, v, mask)
    assert masked.mask == "add" and masked.heads == h and masked.mask_strides == (l * s, 0, s, 1)
    (bf16,), _ = specs(_PlainAttention().eval(), q.bfloat16(), k.bfloat16(), v.bfloat16())
    assert (bf16.dtype, bf16.out, bf16.precision) == ("bf16", "bf16", "")
    report = lowered.report.kernels
    assert report[0]["generated"] and report[0]["kernel"].startswith("attention 6x24x40")

    interpreted = AttentionSpec(**{**masked.__dict__, "tile": (16, 16, 4, 2)})
    got = _run_interpreted(interpreted, (q.reshape(b * h, l, e), k.reshape(b * h, s, e), v.reshape(b * h, s, e),
                                         mask), tmp_path)
    want = torch.nn.functional.scaled_dot_product_attention(q.double(), k.double(), v.double(), mask.double())
    assert (got.reshape(want.shape).double() - want).abs().max().item() < 1e-4

    compiled = braze.compile(_Sdpa().eval(), q, k, v, mask, device="cuda", target="sm_90", cache=False)
    assert compiled.report.dispatch_count == 1
    with zipfile.ZipFile(compiled.save(tmp_path / "attention.braze")) as z:
        vmfb = z.read("module.vmfb")
    assert b"braze_attention_" in vmfb and b"wgmma.mma_async" in vmfb


@pytest.mark.cuda
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["f32", "bf16"])
@pytest.mark.parametrize("form", ["plain", "causal", "mask"])
def test_attention_kernel_on_the_gpu(dtype, form):
    """braze's flash-attention kernel against float64 on the GPU, on sizes no tile divides,
    within 4x the error torch's own SDPA kernel makes."""
    torch.manual_seed(8)
    b, h, l, e = 3, 5, 77, 64
    q, k, v = (torch.randn(b, h, l, e).to(dtype) for _ in range(3))  # float32 draws: the same on every torch
    args = [q, k, v]
    model = _PlainAttention().eval() if form == "plain" else _Sdpa(causal=form == "causal").eval()
    if form == "mask":
        args.append(torch.randn(b, 1, l, l).to(dtype))
    compiled = braze.compile(model, *args, device="cuda")
    assert any(kk["generated"] and kk["kernel"].startswith("attention") for kk in compiled.report.kernels)
    got = compiled(*(a.cuda() for a in args)).cpu()
    with torch.no_grad():
        want = model(*(a.double() for a in args))
        eager = model.cuda()(*(a.cuda() for a in args)).cpu()
    err = (got.double() - want).abs().max().item()
    own = (eager.double() - want).abs().max().item()
    assert err <= 4 * own + 1e-6, (err, own)


class _HeadsSplit(torch.nn.Module):
    """BERT's form: [B, L, H*E] projections viewed as [B, L, H, E], transposed to heads, SDPA,
    transposed back and merged."""

    def __init__(self, heads):
        super().__init__()
        self.heads = heads

    def forward(self, q, k, v):
        b, l, d = q.shape

        def split(x):
            return x.view(b, x.shape[1], self.heads, d // self.heads).transpose(1, 2)

        o = torch.nn.functional.scaled_dot_product_attention(split(q), split(k), split(v))
        return o.transpose(1, 2).reshape(b, l, d)


class _SeqFirst(torch.nn.Module):
    """nn.MultiheadAttention's form: [L, B*H, E] operands transposed to [B*H, L, E], the result
    transposed back to [L, B*H, E]."""

    def forward(self, q, k, v):
        a = torch.softmax(q.transpose(0, 1) @ k.transpose(0, 1).transpose(1, 2) * 0.25, -1) @ v.transpose(0, 1)
        return a.transpose(0, 1)


@pytest.mark.parametrize("form", ["heads_split", "seq_first"])
def test_attention_reads_and_writes_through_transposes(form, tmp_path):
    """The transposes that split heads off a projection (and merge them back) are not copies:
    the kernel reads q, k, v and writes its result where they are; checked under Triton's
    interpreter against the model in float64."""
    torch.manual_seed(10)
    if form == "heads_split":
        model, args = _HeadsSplit(3).eval(), [torch.randn(2, 24, 48), torch.randn(2, 40, 48), torch.randn(2, 40, 48)]
    else:
        model, args = _SeqFirst().eval(), [torch.randn(24, 6, 16), torch.randn(40, 6, 16), torch.randn(40, 6, 16)]
    lowered = lower(model, *args, device="cuda", target="sm_90")
    (spec,) = _specs(lowered.module.operation)
    assert spec.strides, spec
    main = next(f for f in all_ops(lowered.module.operation, "func.func") if ATTR not in f.attributes)
    assert not list(all_ops(main, ("linalg.transpose", "linalg.generic")))  # no copies left
    from braze.kernels.spec import AttentionSpec

    interpreted = AttentionSpec(**{**spec.__dict__, "tile": (16, 16, 4, 2)})
    got = _run_interpreted(interpreted, args, tmp_path)
    want = model(*(a.double() for a in args))
    assert (got.reshape(want.shape).double() - want).abs().max().item() < 1e-4


def test_attention_with_a_batch_per_call(tmp_path):
    """A dynamic batch: BERT's heads split off [B, L, H*E] projections, attention, merged back,
    with B per call. The kernel reads and writes through the transposes as the static build's
    does (no copies left), its grid's heads follow the call (the interpreter runs the spec at
    another batch than the example's, against float64), and the CUDA plan launches it."""
    from braze.kernels.spec import AttentionSpec

    torch.manual_seed(11)
    model = _HeadsSplit(3).eval()
    batch = torch.export.Dim("batch", min=1, max=64)
    args = [torch.randn(2, 24, 48), torch.randn(2, 40, 48), torch.randn(2, 40, 48)]
    shapes = ({0: batch}, {0: batch}, {0: batch})
    lowered = lower(model, *args, device="cuda", target="sm_90", dynamic_shapes=shapes)
    (spec,) = _specs(lowered.module.operation)
    assert spec.dynamic_batch and spec.strides and spec.heads == 3, spec
    main = next(f for f in all_ops(lowered.module.operation, "func.func") if ATTR not in f.attributes)
    assert not list(all_ops(main, ("linalg.transpose", "linalg.generic", "tm_tensor.attention")))
    other = [torch.randn(5, 24, 48), torch.randn(5, 40, 48), torch.randn(5, 40, 48)]
    got = _run_interpreted(AttentionSpec(**{**spec.__dict__, "tile": (16, 16, 4, 2)}), other, tmp_path)
    want = model(*(a.double() for a in other))
    assert (got.reshape(want.shape).double() - want).abs().max().item() < 1e-4
    module = braze.compile(model, *args, device="cuda", target="sm_90", cache=False, dynamic_shapes=shapes,
                           specialize="none").dynamic
    for b in (1, 7):
        concrete = module.plan.concrete([[b, 24, 48], [b, 40, 48], [b, 40, 48]])
        (step,) = [s for s in concrete.steps if s.op == "dispatch"]
        assert module.plan.executables[step.executable].kernels[step.kernel].name.startswith("braze_attention")
        assert step.grid[1] == 3 * b and concrete.outputs[0].shape == [b, 24, 48]


def test_heads_past_the_grid_limit_keep_irees_path():
    """More heads than a CUDA grid's second dimension holds: the attention keeps IREE's
    kernel, and the report says why (a launch of a too-large grid would fail on the GPU)."""
    q = torch.randn(70000, 1, 4, 16)
    lowered = lower(_PlainAttention().eval(), q, q, q, device="cuda", target="sm_90")
    (entry,) = lowered.report.kernels
    assert not entry["generated"] and "65535" in entry["reason"], entry


def test_a_bad_precision_is_named_with_an_explicit_pipeline_too():
    model, x = torch.nn.Linear(32, 16), torch.randn(8, 32)
    with pytest.raises(braze.InputError, match="precision='fast'"):
        lower(model, x, device="cuda", target="sm_90", precision="fast",
              pipeline="fusion-cuda-pipeline{target=sm_90}")


def test_measured_tiles_replace_the_cost_model(tmp_path, monkeypatch):
    """`braze tune`'s flow for generated kernels: a forced tile (what its builds use), then a
    winner imported into the tuning cache under the kernel's signature, used by every later
    compile; a cached tile the template cannot take is ignored (the cost model decides)."""
    import dataclasses

    from braze.passes.gpu import tuning
    from braze.kernels import gemm
    from braze.passes import pipelines
    from braze.tools import tune

    monkeypatch.setenv("BRAZE_CACHE_DIR", str(tmp_path))
    model = torch.nn.Linear(1024, 512).eval().bfloat16()
    x = torch.randn(128, 1024).bfloat16()
    first = braze.compile(model, x, device="cuda", target="sm_90", cache=False).report.kernels[0]
    assert first["tile_from"] == "cost model" and "tile 64x32x64" in first["kernel"], first
    sig = first["signature"]
    (spec,) = tune._generated_specs(model, [x], "sm_90")
    assert spec.tuning_signature() == sig
    tiles = gemm.candidates(spec, 132)
    assert tiles[0] == (64, 32, 64, 4, 4) and len(set(tiles)) == len(tiles) > 5
    for tile in tiles:
        dataclasses.replace(spec, tile=tile).check()
    forced = dataclasses.replace(pipelines.for_device("cuda", "sm_90"), kernel_tiles=f"{sig}=128x64x32x4x5")
    made = braze.compile(model, x, device="cuda", target="sm_90", cache=False,
                         pipeline=forced.pipeline_text()).report.kernels[0]
    assert made["tile_from"] == "forced" and "tile 128x64x32" in made["kernel"]
    (tmp_path / "winners.json").write_text(json.dumps({"target": "sm_90", "kernels": {sig: "64x128x64x4x4"}}))
    assert tune.import_winners(tmp_path / "winners.json") == 0
    compiled = braze.compile(model, x, device="cuda", target="sm_90", cache=False)
    tuned = compiled.report.kernels[0]
    assert tuned["tile_from"].startswith("measured") and "tile 64x128x64" in tuned["kernel"], tuned
    assert "    tile: measured" in compiled.report.table()
    tuning.TuningCache(tuning.default_path()).record(sig, "sm_90", "64x128")  # no warps, stages
    again = braze.compile(model, x, device="cuda", target="sm_90", cache=False).report.kernels[0]
    assert again["tile_from"] == "cost model" and "tile 64x32x64" in again["kernel"]


def test_tma_tile_binds_the_descriptor_scratch(tmp_path):
    """A forced TMA tile: Hopper's bulk tensor copies in the artifact, the descriptors' global
    scratch bound as one more buffer (a program's share each), one zero constant for Triton's
    other scratch pointer; a tile the template cannot take (TMA on a convolution) is named."""
    import dataclasses

    from braze.errors import BrazeError
    from braze.passes import pipelines

    model = torch.nn.Linear(3072, 768).eval().bfloat16()
    x = torch.randn(256, 3072).bfloat16()
    sig = braze.compile(model, x, device="cuda", target="sm_90", cache=False).report.kernels[0]["signature"]
    base = pipelines.for_device("cuda", "sm_90")
    forced = dataclasses.replace(base, kernel_tiles=f"{sig}=64x64x64x4x4x1x1").pipeline_text()
    compiled = braze.compile(model, x, device="cuda", target="sm_90", cache=False, pipeline=forced)
    assert "TMA loads" in compiled.report.kernels[0]["kernel"]
    (step,) = [s for s in compiled.plan.steps if s.op == "dispatch"]
    assert step.constants == [0] and len(step.bindings) == 5  # x, weight, bias, result, scratch
    assert step.bindings[-1][2] == 4 * 12 * 256  # 48 programs x two 128-byte descriptors
    with zipfile.ZipFile(compiled.save(tmp_path / "tma.braze")) as z:
        assert b"cp.async.bulk.tensor" in z.read("module.vmfb")
    persistent = dataclasses.replace(base, kernel_tiles=f"{sig}=64x64x64x4x4x1x1x5x1").pipeline_text()
    compiled = braze.compile(model, x, device="cuda", target="sm_90", cache=False, pipeline=persistent)
    assert "persistent over 5 programs" in compiled.report.kernels[0]["kernel"]
    (step,) = [s for s in compiled.plan.steps if s.op == "dispatch"]
    assert step.bindings[-1][2] == 5 * 256 and len(step.bindings) == 5  # descriptors made once a program
    streamk = dataclasses.replace(base, kernel_tiles=f"{sig}=64x64x64x4x4x1x0x7").pipeline_text()
    compiled = braze.compile(model, x, device="cuda", target="sm_90", cache=False, pipeline=streamk)
    assert "stream-K over 7 programs" in compiled.report.kernels[0]["kernel"]  # a 0 entry parses
    conv = torch.nn.Conv2d(8, 16, 3).eval().bfloat16()
    img = torch.randn(2, 8, 10, 10).bfloat16()
    csig = braze.compile(conv, img, device="cuda", target="sm_90", cache=False).report.kernels[0]["signature"]
    bad = dataclasses.replace(base, kernel_tiles=f"{csig}=64x64x64x4x4x1x1").pipeline_text()
    with pytest.raises(BrazeError, match="TMA reads matmul operands"):
        braze.compile(conv, img, device="cuda", target="sm_90", cache=False, pipeline=bad)


def test_cost_model_picks_the_measured_winners():
    """The cost model's tiles where bench/NOTES.md measured them: 16-bit GEMMs with two waves
    of 128x256 tiles as persistent TMA kernels (§27), unless a row is not a multiple of 16
    bytes (no TMA: the plain 128x256 tile); long-K GEMMs with idle SMs split K (§26); 96-wide
    tiles where they make one wave and 64x64 tiles a second, partial one (§35)."""
    from braze.kernels import gemm

    def tile(m, n, k, **kw):
        return gemm.choose_tile(GemmSpec(m=m, n=n, k=k, a="bf16", b="bf16", b_layout="nk", out="bf16", **kw), 132)

    assert tile(4096, 4096, 1024) == (128, 256, 64, 8, 3, 1, 1, 132, 1)
    assert tile(4096, 4096, 1001) == (128, 256, 64, 8, 3)  # rows of 2002 bytes: no TMA
    assert tile(4096, 4096, 1024, batch=2) == (128, 256, 64, 8, 3)  # persistent kernels take plain matmuls
    assert tile(256, 1024, 4096) == (64, 64, 64, 4, 4, 4)
    assert tile(1024, 768, 3072) == (64, 96, 64, 4, 5)  # 128 tiles 96 wide: one wave (§35)
    assert tile(1024, 768, 768) == (64, 96, 64, 4, 5)
    assert tile(1024, 3072, 768) == (64, 64, 64, 4, 4)  # 768 tiles of 64x64: 5.8 waves beat 3.9 of 64x96
    assert tile(1024, 3072, 3072) == (64, 64, 128, 4, 3)


def test_a_tile_too_large_for_shared_memory_is_named(monkeypatch):
    """A forced tile whose kernel needs more shared memory than sm_90 gives (128x256 stream-K:
    272 KiB, Triton compiles it without a word) is refused at build, naming the bytes, after one
    IREE compile (not retried without aggressive fusion, which cannot change the tile)."""
    import dataclasses

    from braze.compiler import backend
    from braze.passes import pipelines

    model = torch.nn.Linear(256, 512).eval().bfloat16()
    x = torch.randn(256, 256).bfloat16()
    sig = braze.compile(model, x, device="cuda", target="sm_90", cache=False).report.kernels[0]["signature"]
    calls = []
    real = backend.compile_module
    monkeypatch.setattr(backend, "compile_module", lambda *a, **k: calls.append(1) or real(*a, **k))
    bad = dataclasses.replace(pipelines.for_device("cuda", "sm_90"), kernel_tiles=f"{sig}=128x256x64x8x3x1x0x4")
    with pytest.raises(braze.KernelResourceError, match=r"needs 2\d{5} bytes of shared memory, more than the 232448"):
        braze.compile(model, x, device="cuda", target="sm_90", cache=False, pipeline=bad.pipeline_text())
    assert len(calls) == 1


class _GroupedQuery(torch.nn.Module):
    """Grouped-query attention as models write it: [B, L, H*E] q and [B, S, KVH*E] k, v split
    into heads, k and v taken to every query head (transformers' repeat_kv, repeat_interleave,
    or SDPA's enable_gqa), an additive mask, the softmax in float32 and cast back."""

    def __init__(self, heads, kv_heads, how):
        super().__init__()
        self.h, self.kvh, self.how = heads, kv_heads, how

    def forward(self, q, k, v, mask):
        b, l, d = q.shape
        s, e, g = k.shape[1], d // self.h, self.h // self.kvh
        q = q.view(b, l, self.h, e).transpose(1, 2)
        k, v = (x.view(b, s, self.kvh, e).transpose(1, 2) for x in (k, v))
        if self.how == "sdpa":
            o = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=True)
        else:
            if self.how == "repeat_kv":
                k, v = (x[:, :, None].expand(b, self.kvh, g, s, e).reshape(b, self.h, s, e) for x in (k, v))
            else:
                k, v = k.repeat_interleave(g, dim=1), v.repeat_interleave(g, dim=1)
            w = torch.matmul(q, k.transpose(2, 3)) * e ** -0.5 + mask
            w = torch.softmax(w, dim=-1, dtype=torch.float32).to(q.dtype)
            o = torch.matmul(w, v)
        return o.transpose(1, 2).reshape(b, l, d)


@pytest.mark.parametrize("how", ["repeat_kv", "repeat_interleave", "sdpa"])
def test_grouped_query_attention_reads_k_and_v_without_copies(how, tmp_path):
    """k and v taken to every query head are read where they came from (the projections'
    [B, S, KVH*E]), the query head's k/v head being h // group: no broadcast copy, no transpose
    left; the kernel, under Triton's interpreter, is the model's function in float64."""
    from braze.kernels.spec import AttentionSpec

    torch.manual_seed(12)
    b, l, s, h, kvh, e = 2, 20, 28, 6, 2, 16
    model = _GroupedQuery(h, kvh, how).eval()
    args = [torch.randn(b, l, h * e), torch.randn(b, s, kvh * e), torch.randn(b, s, kvh * e), torch.randn(b, 1, l, s)]
    lowered = lower(model, *args, device="cuda", target="sm_90")
    (spec,) = _specs(lowered.module.operation)
    assert (spec.group, spec.heads, spec.mask) == (h // kvh, h, "add") and spec.strides, spec
    assert "2 k/v heads for 6" in lowered.report.kernels[0]["kernel"]
    main = next(f for f in all_ops(lowered.module.operation, "func.func") if ATTR not in f.attributes)
    assert not list(all_ops(main, ("linalg.transpose", "linalg.generic", "tm_tensor.attention")))
    got = _run_interpreted(AttentionSpec(**{**spec.__dict__, "tile": (16, 16, 4, 2)}), args, tmp_path)
    want = model(*(a.double() for a in args))
    assert (got.reshape(want.shape).double() - want).abs().max().item() < 1e-4


@pytest.mark.cuda
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["f32", "bf16"])
@pytest.mark.parametrize("how", ["repeat_kv", "sdpa"])
def test_grouped_query_attention_on_the_gpu(dtype, how):
    """The grouped-query forms on the GPU, on sizes no tile divides, against float64: within
    4x the error of torch's own eager (cuBLAS, SDPA) on the same inputs."""
    torch.manual_seed(13)
    b, l, h, kvh, e = 3, 77, 8, 2, 64
    model = _GroupedQuery(h, kvh, how).eval()
    args = [torch.randn(b, l, h * e), torch.randn(b, l, kvh * e), torch.randn(b, l, kvh * e),
            torch.zeros(b, 1, l, l).masked_fill(torch.ones(l, l, dtype=torch.bool).triu(1), torch.finfo(dtype).min)]
    args = [a.to(dtype) for a in args]
    compiled = braze.compile(model, *args, device="cuda")
    (kernel,) = [kk for kk in compiled.report.kernels if kk["kernel"].startswith("attention")]
    assert kernel["generated"] and "2 k/v heads for 8" in kernel["kernel"]
    got = compiled(*(a.cuda() for a in args)).cpu()
    with torch.no_grad():
        want = model(*(a.double() for a in args))
        eager = model.cuda()(*(a.cuda() for a in args)).cpu()
    err = (got.double() - want).abs().max().item()
    own = (eager.double() - want).abs().max().item()
    assert err <= 4 * own + 1e-6, (err, own)


class _SplitQKV(torch.nn.Module):
    """GPT-2's form: q, k, v split off one [B, L, 3*H*E] projection, heads by view/permute,
    the causal mask a boolean buffer applied with where(..., finfo.min)."""

    def __init__(self, heads, length):
        super().__init__()
        self.h = heads
        self.register_buffer("bias", torch.ones(length, length, dtype=torch.bool).tril()[None, None], persistent=False)

    def forward(self, x):
        b, l, d3 = x.shape
        d = d3 // 3
        q, k, v = (t.view(b, l, self.h, d // self.h).permute(0, 2, 1, 3) for t in x.split(d, dim=2))
        w = torch.matmul(q, k.transpose(-1, -2)) / (d // self.h) ** 0.5
        w = torch.where(self.bias[:, :, :l, :l], w, torch.finfo(w.dtype).min).softmax(-1)
        return torch.matmul(w, v).permute(0, 2, 1, 3).reshape(b, l, d)


def test_attention_reads_q_k_v_where_one_projection_wrote_them(tmp_path):
    """q, k, v split off one projection's result are read there at their offsets (no slice
    copies: IREE's slow_memcpy), the causal buffer recognised; the kernel under Triton's
    interpreter is the model's function in float64."""
    from braze.kernels.spec import AttentionSpec

    torch.manual_seed(14)
    b, l, h, e = 2, 40, 3, 16
    model, x = _SplitQKV(h, 64).eval(), torch.randn(b, 40, 3 * h * e)
    lowered = lower(model, x, device="cuda", target="sm_90")
    (spec,) = _specs(lowered.module.operation)
    assert spec.offsets == (0, h * e, 2 * h * e) and spec.mask == "causal" and spec.strides, spec
    main = next(f for f in all_ops(lowered.module.operation, "func.func") if ATTR not in f.attributes)
    assert not list(all_ops(main, ("tensor.extract_slice", "linalg.transpose", "linalg.generic")))
    got = _run_interpreted(AttentionSpec(**{**spec.__dict__, "tile": (16, 16, 4, 2)}), [x, x, x], tmp_path)
    want = model(x.double())
    assert (got.reshape(want.shape).double() - want).abs().max().item() < 1e-4


class _UnboundQKV(torch.nn.Module):
    """ViT's form: one [B, N, 3*H*E] projection reshaped to [B, N, 3, H, E], permuted to
    [3, B, H, N, E] and unbound into q, k, v."""

    def __init__(self, heads):
        super().__init__()
        self.h = heads

    def forward(self, x):
        b, n, d3 = x.shape
        qkv = x.reshape(b, n, 3, self.h, d3 // 3 // self.h).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)
        w = (q @ k.transpose(-2, -1) * 0.25).softmax(-1)
        return (w @ v).transpose(1, 2).reshape(b, n, d3 // 3)


def test_attention_reads_q_k_v_unbound_from_one_transposed_projection(tmp_path):
    """ViT's permute + unbind of the qkv projection is no copy (it was IREE's 5-d transpose
    dispatch, 22% of vit_layer_bf16's kernel time on an H100): the kernel reads q, k, v at their
    offsets in the projection's result; under Triton's interpreter it is the model's function
    in float64. The form is checked against a break: a transpose another op reads stays."""
    from braze.kernels.spec import AttentionSpec

    torch.manual_seed(15)
    b, n, h, e = 2, 37, 3, 16
    model, x = _UnboundQKV(h).eval(), torch.randn(b, n, 3 * h * e)
    lowered = lower(model, x, device="cuda", target="sm_90")
    (spec,) = _specs(lowered.module.operation)
    assert spec.offsets == (0, h * e, 2 * h * e) and spec.strides, spec
    main = next(f for f in all_ops(lowered.module.operation, "func.func") if ATTR not in f.attributes)
    assert not list(all_ops(main, ("tensor.extract_slice", "linalg.transpose", "linalg.generic")))
    got = _run_interpreted(AttentionSpec(**{**spec.__dict__, "tile": (16, 16, 4, 2)}), [x, x, x], tmp_path)
    want = model(x.double())
    assert (got.reshape(want.shape).double() - want).abs().max().item() < 1e-4


@pytest.mark.parametrize("count", [1, 5], ids=["decode", "prefill"])
def test_decoder_step_attention_kernel_is_its_attention(count, tmp_path):
    """braze.compile_decoder's step for CUDA: each layer's attention is one flash-attention spec,
    grouped-query heads read where they are and the result written as [B, T, H, E]. The decode
    step (T = 1) attends over the static cache through the 4-D additive mask (read at stride 0
    over heads); a prefill (T > 1, from position 0) attends over its own T keys with is_causal
    (DecoderStep._prefill_mask). That spec, run under Triton's interpreter on random bf16
    operands laid out at its strides, is SDPA's with GQA (float64 reference), including the
    masked cache slots past the position."""
    transformers = pytest.importorskip("transformers")
    from braze.compiler.decoder import DecoderStep
    from braze.kernels.spec import AttentionSpec

    config = transformers.Qwen2Config(vocab_size=64, hidden_size=64, intermediate_size=96, num_hidden_layers=1,
                                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64)
    torch.manual_seed(0)
    step = DecoderStep(transformers.Qwen2ForCausalLM(config).eval().to(torch.bfloat16)).eval()
    length = 40
    caches = [torch.zeros(step.cache_shape(1, length), dtype=torch.bfloat16) for _ in range(2)]
    lowered = lower(step, torch.zeros(1, count, dtype=torch.long), torch.zeros(1, dtype=torch.long), *caches,
                    device="cuda", target="sm_90")
    (spec,) = [s for s in _specs(lowered.module.operation) if isinstance(s, AttentionSpec)]
    h, kvh, e = step.heads, step.kv_heads, step.head_dim
    prefill = count > 1
    keys = count if prefill else length
    assert (spec.batch, spec.l, spec.s, spec.e, spec.group, spec.mask) == \
        (h, count, keys, e, h // kvh, "causal" if prefill else "add")
    assert spec.strides[3] == (count * h * e, e, h * e)
    q = torch.randn(1, h, count, e).bfloat16()
    k, v = torch.randn(1, kvh, keys, e).bfloat16(), torch.randn(1, kvh, keys, e).bfloat16()
    if prefill:
        operands, mask = (q, k, v), None
    else:
        assert spec.mask_strides[1] == 0
        position = 17
        visible = torch.arange(length)[None, :] <= (position + torch.arange(count))[:, None]
        mask = torch.zeros(1, 1, count, length).masked_fill(~visible, float("-inf")).bfloat16()
        operands = (q, k, v, mask)
    got = _run_interpreted(AttentionSpec(**{**spec.__dict__, "tile": (16, 16, 4, 2)}), operands, tmp_path)
    got = got.reshape(1, count, h, e).transpose(1, 2).double()
    want = torch.nn.functional.scaled_dot_product_attention(
        q.double(), k.double().repeat_interleave(h // kvh, 1), v.double().repeat_interleave(h // kvh, 1),
        attn_mask=None if mask is None else mask.double(), is_causal=prefill, scale=spec.scale)
    assert (got - want).abs().max().item() < 2e-2 * max(1.0, want.abs().max().item())
