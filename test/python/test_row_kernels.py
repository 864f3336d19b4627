"""Row kernels (braze.kernels.rows, passes/gpu/match_rows.py): a reduction of the last dimension
with the elementwise work around it as one generated kernel.

- The pass's specs of LayerNorm (torch-mlir's f64 variance), RMSNorm as Llama-family models
  write it, and softmax, run under Triton's interpreter on random data with ragged rows (a row
  length no power of 2, a row count no multiple of the tile's), against eager in float64.
- NaN: a NaN in a row makes that row NaN, as in eager, and no other.
- What stays IREE's: a row program whose intermediate another op reads too, with the reason.
- On a GPU host (skipped elsewhere): the same models compiled for CUDA, one row kernel each.
"""

import dataclasses
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import torch

import braze
from braze.accuracy import max_error
from braze.compiler import lower
from braze.irutil import all_ops
from braze.kernels.spec import ATTR, Input, RowSpec, read_spec

triton = pytest.importorskip("triton")

HELPER = Path(__file__).parent / "helpers" / "interpret_kernel.py"


def _run_interpreted(spec, args, tmp_path):
    (tmp_path / "spec.json").write_text(spec.to_json())
    torch.save(list(args), tmp_path / "in.pt")
    subprocess.run([sys.executable, str(HELPER), str(tmp_path / "spec.json"), str(tmp_path / "in.pt"),
                    str(tmp_path / "out.pt")], check=True)
    return torch.load(tmp_path / "out.pt")


def _row_specs(model, x) -> tuple[list[RowSpec], list]:
    from braze._mlir import ir

    lowered = lower(model, x, device="cuda", target="sm_90")
    with lowered.context:
        specs = [read_spec(ir.StringAttr(f.attributes[ATTR]).value)
                 for f in all_ops(lowered.module.operation, "func.func") if ATTR in f.attributes]
    return [s for s in specs if isinstance(s, RowSpec)], lowered.report.kernels


class RMSNorm(torch.nn.Module):
    """As the Llama/Qwen/Mistral families write it: the square mean in float32, the weight
    applied after the cast back."""

    def __init__(self, d, eps=1e-6):
        super().__init__()
        self.weight = torch.nn.Parameter(1 + 0.1 * torch.randn(d))
        self.eps = eps

    def forward(self, x):
        h = x.float()
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * h.to(x.dtype)


class Softmax(torch.nn.Module):
    def forward(self, x):
        return torch.softmax(x * 0.5, dim=-1)


class TwoReaders(torch.nn.Module):
    """A LayerNorm-like program whose mean the model returns too: two results."""

    def forward(self, x):
        mean = x.mean(-1, keepdim=True)
        return (x - mean) * torch.rsqrt(((x - mean) ** 2).mean(-1, keepdim=True) + 1e-5), mean


def _layer_norm(d, dtype):
    ln = torch.nn.LayerNorm(d)
    with torch.no_grad():
        ln.weight.copy_(1 + 0.1 * torch.randn(d))
        ln.bias.copy_(0.1 * torch.randn(d))
    return ln.to(dtype).eval()


def _check(got, want64, eager, what):
    """Within 2x eager's own error against float64 plus one unit of the output type's precision
    (a reduction sums in another order than eager's); braze's NaN-aware metric."""
    err = max_error(got, want64)
    own = max_error(eager, want64)
    ulp = torch.finfo(eager.dtype).eps
    assert err <= 2 * own + ulp, f"{what}: error {err:.3e} > 2 x eager's {own:.3e} + {ulp:.3e}"


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32], ids=["bf16", "f32"])
@pytest.mark.parametrize("shape", [(3, 7, 100), (5, 768)], ids=["ragged", "gpt2"])
def test_layer_norm_is_one_row_kernel(dtype, shape, tmp_path):
    torch.manual_seed(1)
    model = _layer_norm(shape[-1], dtype)
    x = (torch.randn(shape) * 3 + 1).to(dtype)
    (spec,), kernels = _row_specs(model, x)
    rows = x.numel() // shape[-1]
    assert (spec.rows, spec.cols, spec.out) == (rows, shape[-1], {torch.bfloat16: "bf16", torch.float32: "f32"}[dtype])
    assert [i.access for i in spec.inputs] == ["full", "row", "row"]
    assert [op[1] for op in spec.ops if op[1] in ("sum", "max")] == ["sum", "sum", "sum"]
    assert "f64" in {op[3] for op in spec.ops}  # torch-mlir's variance, kept in f64
    assert any(k["generated"] and k["kernel"].startswith("rows") for k in kernels)
    w, b = model.weight.detach().double(), model.bias.detach().double()
    want = torch.nn.functional.layer_norm(x.double(), shape[-1:], w, b).reshape(rows, -1)
    # as written (f64 variance) and as CUDA builds it (IREE demotes f64: the variance in f32, as eager's)
    for what, s in (("f64", spec), ("demoted", spec.demoted())):
        s = dataclasses.replace(s, tile=(4, 4))  # 4 rows a program: the last program's rows ragged
        got = _run_interpreted(s, (x, model.weight.detach(), model.bias.detach()), tmp_path)
        with torch.no_grad():
            _check(got, want, model(x).reshape(rows, -1), f"LayerNorm {dtype} {shape} {what}")


def test_cuda_artifact_holds_the_row_kernel_in_float32(tmp_path):
    """IREE demotes float64 on CUDA unless the model takes or returns it: the embedded row
    kernel's spec (the PTX's first line) computes the variance in f32 then, and the report says
    what was generated."""
    from braze.kernels.precision import artifact_kernels

    model, x = _layer_norm(768, torch.bfloat16), torch.randn(64, 768).bfloat16()
    compiled = braze.compile(model, x, device="cuda", target="sm_90")
    assert "1 row programs (0 reductions left to IREE)" in compiled.report.table()
    with zipfile.ZipFile(compiled.save(tmp_path / "ln.braze")) as z:
        (kernel,) = artifact_kernels(z.read("module.vmfb"))
    assert isinstance(kernel.spec, RowSpec) and kernel.found == kernel.expected == "f32-fma"
    assert {op[3] for op in kernel.spec.ops} == {"bf16", "f32"} and ".f64" not in kernel.ptx


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32], ids=["bf16", "f32"])
def test_rms_norm_is_one_row_kernel(dtype, tmp_path):
    torch.manual_seed(2)
    model = RMSNorm(200).to(dtype).eval()
    x = torch.randn(9, 200).to(dtype)
    (spec,), _ = _row_specs(model, x)
    assert [i.access for i in spec.inputs] == ["full", "row"]
    got = _run_interpreted(dataclasses.replace(spec, tile=(2, 2)), (x, model.weight.detach()), tmp_path)
    x64 = x.double()
    want = model.weight.detach().double() * (x64 * torch.rsqrt(x64.pow(2).mean(-1, keepdim=True) + 1e-6))
    with torch.no_grad():
        _check(got, want, model(x), f"RMSNorm {dtype}")


def test_softmax_rows_keep_nan_where_eager_does(tmp_path):
    torch.manual_seed(3)
    model = Softmax().eval()
    x = torch.randn(6, 1000) * 4
    x[1, 17] = float("nan")
    x[4, :] = float("-inf")  # a row every element of which is -inf: NaN in eager too
    x[5, 3] = float("inf")
    (spec,), _ = _row_specs(model, x)
    assert [op[1] for op in spec.ops if op[1] in ("sum", "max", "maxnum")][:1] in (["max"], ["maxnum"])
    got = _run_interpreted(dataclasses.replace(spec, tile=(4, 4)), (x,), tmp_path)
    want = torch.softmax(x.double() * 0.5, dim=-1)
    eager = model(x)
    assert torch.equal(got.isnan(), eager.isnan()), "NaN rows differ from eager's"
    ok = ~eager.isnan().any(-1)
    assert ok.sum() == 3
    _check(got[ok], want[ok], eager[ok], "softmax")


class MinusMax(torch.nn.Module):
    def forward(self, x):
        return x - x.amax(-1, keepdim=True)


def test_a_row_maximum_is_nan_where_the_row_holds_one(tmp_path):
    """torch's amax is NaN for a row holding a NaN (arith.maximumf), so x - amax(x) is NaN across
    that row; a maximum that skipped the NaN would leave the row's other elements finite."""
    x = torch.randn(4, 300)
    x[2, 5] = float("nan")
    (spec,), _ = _row_specs(MinusMax().eval(), x)
    got = _run_interpreted(dataclasses.replace(spec, tile=(2, 2)), (x,), tmp_path)
    eager = MinusMax()(x)
    assert eager[2].isnan().all() and not eager[[0, 1, 3]].isnan().any()
    _check(got, MinusMax()(x.double()), eager, "x - amax(x)")


def test_a_row_program_read_twice_stays_irees_and_the_rest_reads_it(tmp_path):
    """The mean the model also returns stays IREE's reduction (a row kernel writes one result),
    with the reason; the variance and the normalisation after it become a row kernel that
    reads that mean as one input a row."""
    torch.manual_seed(4)
    x = torch.randn(5, 64) * 2 + 1
    (spec,), kernels = _row_specs(TwoReaders().eval(), x)
    reasons = [k["reason"] for k in kernels if not k["generated"] and k["kernel"].startswith("row reduction")]
    assert len(reasons) == 1 and "leaves 2 values" in reasons[0], reasons
    assert [i.access for i in spec.inputs] == ["full", "col"]
    mean = x.mean(-1, keepdim=True)
    got = _run_interpreted(dataclasses.replace(spec, tile=(2, 1)), (x, mean), tmp_path)
    x64 = x.double()
    m64 = x64.mean(-1, keepdim=True)
    want = (x64 - m64) * torch.rsqrt(((x64 - m64) ** 2).mean(-1, keepdim=True) + 1e-5)
    _check(got, want, TwoReaders()(x)[0], "normalisation after a shared mean")


def test_rows_off_leaves_every_reduction_to_iree():
    from braze._mlir import ir
    from braze.passes import pipelines

    model, x = _layer_norm(64, torch.float32), torch.randn(4, 64)
    text = dataclasses.replace(pipelines.for_device("cuda", "sm_90"), rows="off").pipeline_text()
    assert "rows=off" in text
    lowered = lower(model, x, device="cuda", target="sm_90", pipeline=text)
    with lowered.context:
        assert not [f for f in all_ops(lowered.module.operation, "func.func") if ATTR in f.attributes
                    and isinstance(read_spec(ir.StringAttr(f.attributes[ATTR]).value), RowSpec)]


def test_spec_check_names_the_problem():
    good = RowSpec(rows=4, cols=8, out="f32", inputs=(Input("f32", "full"),),
                   ops=(("%0", "sum", ["in0"], "f32", 0.0),), result="%0")
    good.check()
    with pytest.raises(ValueError, match="reads in0"):
        dataclasses.replace(good, inputs=()).check()
    with pytest.raises(ValueError, match="at most 8192"):
        dataclasses.replace(good, cols=10000).check()
    with pytest.raises(ValueError, match="rows a program, warps"):
        dataclasses.replace(good, tile=(3, 4)).check()


@pytest.mark.cuda
@pytest.mark.parametrize("form", ["layernorm_bf16", "layernorm_f32", "rmsnorm_bf16", "softmax_f32"])
def test_row_kernels_on_the_gpu(form):
    torch.manual_seed(5)
    if form.startswith("layernorm"):
        dtype = torch.bfloat16 if form.endswith("bf16") else torch.float32
        model, x = _layer_norm(768, dtype), (torch.randn(8, 300, 768) * 2).to(dtype)
    elif form == "rmsnorm_bf16":
        model, x = RMSNorm(2048).to(torch.bfloat16).eval(), torch.randn(2, 333, 2048).to(torch.bfloat16)
    else:
        model, x = Softmax().eval(), torch.randn(64, 1000) * 4
    compiled = braze.compile(model, x, device="cuda")
    assert any(k["generated"] and k["kernel"].startswith("rows") for k in compiled.report.kernels)
    got = compiled(x.cuda()).cpu()
    with torch.no_grad():
        eager = model.cuda()(x.cuda()).cpu()
        want = model.double().cpu()(x.double())
    _check(got, want, eager, form)


def test_row_tiles_are_forced_and_tuned_as_the_other_kernels():
    """A row kernel's tile comes from the cost model, a forced `kernel-tiles=SIG=BRxWARPS` (what
    `braze tune build --kernels` and bench/experiments/row_kernels.py compile), and its
    candidates all fit the template."""
    from braze.kernels import rows
    from braze.kernels.build import template
    from braze.passes import pipelines

    model, x = _layer_norm(768, torch.bfloat16), torch.randn(300, 768).bfloat16()
    (spec,), kernels = _row_specs(model, x)
    (made,) = [k for k in kernels if k["generated"]]
    assert made["tile_from"] == "cost model" and made["signature"].startswith("rows_")
    assert template(spec) is rows
    tiles = rows.candidates(spec, 132)
    assert tiles[0] == rows.choose_tile(spec, 132) and len(set(tiles)) == len(tiles) > 4
    for tile in tiles:
        dataclasses.replace(spec, tile=tile).check()
    forced = dataclasses.replace(pipelines.for_device("cuda", "sm_90"), kernel_tiles=f"{made['signature']}=4x8")
    (again,), kernels = _row_specs_with(model, x, forced.pipeline_text())
    assert again.tile == (4, 8) and [k["tile_from"] for k in kernels if k["generated"]] == ["forced"]


def _row_specs_with(model, x, pipeline):
    from braze._mlir import ir

    lowered = lower(model, x, device="cuda", target="sm_90", pipeline=pipeline)
    with lowered.context:
        specs = [read_spec(ir.StringAttr(f.attributes[ATTR]).value)
                 for f in all_ops(lowered.module.operation, "func.func") if ATTR in f.attributes]
    return [s for s in specs if isinstance(s, RowSpec)], lowered.report.kernels
