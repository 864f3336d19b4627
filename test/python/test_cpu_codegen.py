"""The CPU pipeline's contraction choices (fusion-cpu-pipeline: convolutions as im2col + matmul,
fusion-cpu-codegen's data tiling): results against eager in float64 on random data, and the
choice in the report."""

import pytest
import torch
import torch.nn.functional as F

import braze


class Block(torch.nn.Module):
    """A Linear + GELU + Linear (weights: data tiling packs them once) on ragged sizes no vector
    tile divides, then a strided, padded convolution with BatchNorm (as im2col + matmul)."""

    def __init__(self):
        super().__init__()
        self.up = torch.nn.Linear(37, 53)
        self.down = torch.nn.Linear(53, 19)
        self.conv = torch.nn.Conv2d(3, 11, 3, 2, 1)
        self.bn = torch.nn.BatchNorm2d(11)

    def forward(self, x, img):
        y = self.down(F.gelu(self.up(x)))
        return y, F.relu(self.bn(self.conv(img)))


def _seeded(cls, seed: int):
    """The model in eval mode with seeded weights and BatchNorm statistics away from (0, 1)."""
    torch.manual_seed(seed)
    model = cls().eval()
    with torch.no_grad():
        model.bn.running_mean.uniform_(-1, 1)
        model.bn.running_var.uniform_(0.5, 2)
    return model


def _model():
    model = _seeded(Block, 0)
    return model, (torch.randn(13, 37), torch.randn(2, 3, 17, 15))


def _check(compiled, model, args):
    with torch.no_grad():
        want = model.double()(*(a.double() for a in args))
        model.float()
    got = compiled(*args)
    for g, w in zip(got, want):
        assert g.shape == w.shape
        err = float((g.double() - w).abs().max() / w.abs().max())
        assert err < 1e-5, err


def test_data_tiling_is_chosen_for_weights_and_matches_float64():
    model, args = _model()
    compiled = braze.compile(model, *args, cache=False)
    assert compiled.report.cpu_codegen.startswith("data tiling"), compiled.report.cpu_codegen
    assert "reads a constant operand" in compiled.report.cpu_codegen
    assert any(d.startswith("fusion-cpu-codegen: data tiling") for d in compiled.report.decisions)
    assert any(d.startswith("fusion-conv-to-matmul:") for d in compiled.report.decisions)
    assert "CPU contractions" in compiled.report.table()
    # its matmuls reduce floats: IREE may reassociate them (bench/NOTES.md §39)
    assert "float reductions reassociated: a linalg.matmul" in compiled.report.cpu_codegen, compiled.report.cpu_codegen
    _check(compiled, model, args)


@pytest.mark.parametrize("pipeline", ["fusion-cpu-pipeline{data-tiling=off}", "fusion-cpu-pipeline{conv=direct}",
                                      "fusion-cpu-pipeline{data-tiling=on conv=direct}"])
def test_each_choice_matches_float64(pipeline):
    model, args = _model()
    compiled = braze.compile(model, *args, cache=False, pipeline=pipeline)
    tiled = compiled.report.cpu_codegen.startswith("data tiling")
    assert tiled == ("data-tiling=off" not in pipeline)
    assert any(d.startswith("fusion-conv-to-matmul:") for d in compiled.report.decisions) == ("conv=direct" not in pipeline)
    _check(compiled, model, args)


def test_attention_alone_keeps_iree_default():
    """Both products read activations: no data tiling (it measured slower, bench/NOTES.md §24)."""

    class Scores(torch.nn.Module):
        def forward(self, q, k, v):
            return torch.softmax(q @ k.transpose(-1, -2) * 0.125, dim=-1) @ v

    torch.manual_seed(1)
    args = tuple(torch.randn(2, 3, 16, 8) for _ in range(3))
    compiled = braze.compile(Scores().eval(), *args, cache=False)
    assert compiled.report.cpu_codegen.startswith("IREE's default"), compiled.report.cpu_codegen
    # the products and softmax's row max: IREE may reassociate float reductions (bench/NOTES.md §34, §39)
    assert "float reductions reassociated: a linalg.batch_matmul" in compiled.report.cpu_codegen
    want = Scores()(*(a.double() for a in args))
    assert float((compiled(*args).double() - want).abs().max()) < 1e-5
    kept = braze.compile(Scores().eval(), *args, cache=False, pipeline="fusion-cpu-pipeline{reassociate=off}")
    assert "reassociated" not in kept.report.cpu_codegen
    assert float((kept(*args).double() - want).abs().max()) < 1e-5


def test_reassociated_softmax_with_nan_and_inf_matches_eager():
    """A reassociated max is still softmax's max: rows with -inf (masked) and a row with NaN."""

    class Softmax(torch.nn.Module):
        def forward(self, x):
            return torch.softmax(x, dim=-1)

    torch.manual_seed(3)
    x = torch.randn(6, 100) * 10
    x[1, :50] = float("-inf")
    x[2, 7] = float("nan")
    compiled = braze.compile(Softmax().eval(), x, cache=False)
    assert "reassociated" in compiled.report.cpu_codegen
    torch.testing.assert_close(compiled(x), torch.softmax(x.double(), -1).float(), equal_nan=True)


def test_reassociated_layer_norm_matches_float64():
    """LayerNorm's row sums are reassociated (tree sums, not a chain of scalar adds): the result
    stays within float32 rounding of float64's, with a large mean (cancellation in the variance)
    and rows long enough for many vector steps. The tree sums are the more accurate: in-order
    sums (reassociate=off) measured 5.4e-6 here against float64, the tree 2e-6 or less."""

    class Norm(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.norm = torch.nn.LayerNorm(1000)

        def forward(self, x, r):
            return torch.nn.functional.gelu(self.norm(x + r))

    torch.manual_seed(5)
    model = Norm().eval()
    with torch.no_grad():
        model.norm.weight.uniform_(0.5, 1.5)
        model.norm.bias.uniform_(-0.5, 0.5)
    args = (torch.randn(3, 7, 1000) * 3 + 50, torch.randn(3, 7, 1000))
    compiled = braze.compile(model, *args, cache=False)
    assert "float reductions reassociated: a arith.addf reduction" in compiled.report.cpu_codegen, \
        compiled.report.cpu_codegen
    model.double()
    want = model(*(a.double() for a in args))
    model.float()
    err = float((compiled(*args).double() - want).abs().max() / want.abs().max())
    assert err < 2e-6, err
    kept = braze.compile(model, *args, cache=False, pipeline="fusion-cpu-pipeline{reassociate=off}")
    assert "reassociated" not in kept.report.cpu_codegen
    assert float((kept(*args).double() - want).abs().max() / want.abs().max()) < 1e-5


def test_a_users_flag_overrides_the_choice():
    """The user's iree_flags come after braze's: --iree-global-opt-data-tiling=false (the path
    braze turns on, backend.DATA_TILING_FLAGS) wins (no pack dispatches: as few dispatches as
    the data-tiling=off pipeline)."""
    model, args = _model()
    off = braze.compile(model, *args, cache=False, pipeline="fusion-cpu-pipeline{data-tiling=off}")
    user = braze.compile(model, *args, cache=False, iree_flags=["--iree-global-opt-data-tiling=false"])
    on = braze.compile(model, *args, cache=False)
    assert user.report.dispatch_count == off.report.dispatch_count < on.report.dispatch_count
    _check(user, model, args)


class TwoConvs(torch.nn.Module):
    """A unit-stride 3x3 convolution with a 30x30 output (900 pixels) and a strided one after it."""

    def __init__(self):
        super().__init__()
        self.same = torch.nn.Conv2d(5, 7, 3, 1, 1)
        self.down = torch.nn.Conv2d(7, 6, 3, 2, 1)

    def forward(self, x):
        return self.down(torch.relu(self.same(x)))


@pytest.mark.parametrize("pixels", [0, 784, 901])
def test_direct_pixels_leaves_large_unit_stride_convolutions(pixels):
    """direct-pixels=N: unit-stride convolutions with N or more output pixels stay IREE's direct
    convolution (what braze.compile picks on an AVX-512 CPU); the strided one is im2col either way."""
    torch.manual_seed(2)
    model, x = TwoConvs().eval(), torch.randn(2, 5, 30, 30)
    compiled = braze.compile(model, x, cache=False, pipeline=f"fusion-cpu-pipeline{{direct-pixels={pixels}}}")
    im2col = [d for d in compiled.report.decisions if d.startswith("fusion-conv-to-matmul:")]
    assert len(im2col) == (1 if pixels == 784 else 2), im2col
    assert any("7x6x3x3" not in d and "6x7x3x3" in d for d in im2col)  # the strided one's weight
    with torch.no_grad():
        want = model.double()(x.double())
    err = float((compiled(x).double() - want).abs().max() / want.abs().max())
    assert err < 1e-5, err


def test_the_cpu_pipeline_follows_the_cpu():
    from braze.passes.pipelines import DIRECT_CONV_PIXELS, for_device

    assert f"direct-pixels={DIRECT_CONV_PIXELS}" in for_device("cpu", "sapphirerapids").pipeline_text()
    assert "direct-pixels" not in for_device("cpu", "znver3").pipeline_text()
    model, args = _model()
    compiled = braze.compile(model, *args, cache=False, target="znver4")
    assert compiled.report.pipeline == f"fusion-cpu-pipeline{{direct-pixels={DIRECT_CONV_PIXELS}}}"


class Convs(torch.nn.Module):
    """A padded 3x3 convolution with BatchNorm and ReLU, a strided one, and a 1x1 one, on
    ragged channel counts and sizes."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(5, 13, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(13)
        self.down = torch.nn.Conv2d(13, 7, 3, stride=2, padding=1)
        self.point = torch.nn.Conv2d(7, 9, 1)

    def forward(self, x):
        return self.point(self.down(F.relu(self.bn(self.conv(x)))))


def _convs():
    model = _seeded(Convs, 4)
    return model, (torch.randn(2, 5, 19, 17),)


@pytest.mark.parametrize("pipeline", ["fusion-cpu-pipeline{conv=direct}",
                                      "fusion-cpu-pipeline{conv=direct channels-last=off}",
                                      "fusion-cpu-pipeline{direct-pixels=16}"])
def test_channels_last_convolutions_match_float64(pipeline):
    """Convolutions left direct are computed channels-last by IREE (bench/NOTES.md §39), the
    report says so; the answer is the same as in NCHW (float64's within float32 rounding)."""
    model, args = _convs()
    compiled = braze.compile(model, *args, cache=False, pipeline=pipeline)
    last = "channels-last=off" not in pipeline
    assert ("convolutions channels-last: linalg.conv_2d_nchw_fchw" in compiled.report.cpu_codegen) == last, \
        compiled.report.cpu_codegen
    im2col = [d for d in compiled.report.decisions if d.startswith("fusion-conv-to-matmul:")]
    if "direct-pixels" in pipeline:
        # the 3x3 (17x19 pixels) stays direct; the strided one and the 1x1 one become matmuls
        assert len(im2col) == 2 and any("7x9x1x1" in d or "9x7x1x1" in d for d in im2col), im2col
    else:
        assert not im2col
    _check(compiled, model, args)


def test_a_users_preprocessing_pipeline_replaces_channels_last():
    """IREE keeps one preprocessing pipeline: the user's, and the report says braze's is not used."""
    model, args = _convs()
    flag = "--iree-preprocessing-pass-pipeline=builtin.module(util.func(canonicalize))"
    compiled = braze.compile(model, *args, cache=False, pipeline="fusion-cpu-pipeline{conv=direct}", iree_flags=[flag])
    assert "convolutions left NCHW (the iree_flags' own preprocessing pipeline" in compiled.report.cpu_codegen, \
        compiled.report.cpu_codegen
    _check(compiled, model, args)


class Grouped(torch.nn.Module):
    """Grouped convolutions (ResNeXt's and RegNet's form): padded, strided and dilated, beside
    a Linear whose weight asks for data tiling."""

    def __init__(self):
        super().__init__()
        self.a = torch.nn.Conv2d(12, 20, 3, padding=1, groups=4)
        self.b = torch.nn.Conv2d(20, 10, 3, stride=2, dilation=2, padding=2, groups=5)
        self.fc = torch.nn.Linear(9, 7)

    def forward(self, x):
        return self.fc(self.b(F.relu(self.a(x))))


def test_grouped_convolutions_as_batch_matmuls_match_float64():
    """Each grouped convolution is one im2col copy and one batch matmul over the groups (IREE's
    own CPU code for them ran 18x slower than eager, bench/NOTES.md §40); the batch matmuls do not
    ask for data tiling (packed they were 2.2x slower), the Linear does."""
    torch.manual_seed(6)
    model, args = Grouped().eval(), (torch.randn(2, 12, 17, 17),)
    compiled = braze.compile(model, *args, cache=False)
    grouped = [d for d in compiled.report.decisions if "as im2col + batch matmul over the groups" in d]
    assert len(grouped) == 2, compiled.report.decisions
    assert compiled.report.cpu_codegen.startswith("data tiling, mmt4d microkernels: linalg.matmul"), \
        compiled.report.cpu_codegen
    _check(compiled, model, args)
    kept = braze.compile(model, *args, cache=False, pipeline="fusion-cpu-pipeline{conv=direct}")
    assert not any("batch matmul over the groups" in d for d in kept.report.decisions)
    _check(kept, model, args)


class SumOfProducts(torch.nn.Module):
    """x[:, :K] @ W1.T + x[:, K:] @ W2.T: a Linear split over K, as a gated or recurrent cell
    writes a sum of two products."""

    def __init__(self):
        super().__init__()
        self.w1 = torch.nn.Parameter(torch.randn(768, 1536) / 40)
        self.w2 = torch.nn.Parameter(torch.randn(768, 1536) / 40)

    def forward(self, x):
        return x[:, :1536] @ self.w1.T + x[:, 1536:] @ self.w2.T


def test_a_sum_of_two_products_compiles_with_data_tiling():
    # IREE 3.13's dispatch-creation data tiling folded the add into the second product's
    # accumulator and unpacked and packed the first product's whole result on the stack: a
    # CompileError ("exceeded stack allocation limit") where the raw toolchain compiles it
    # (backend.DATA_TILING_FLAGS, bench/notes/57)
    torch.manual_seed(0)
    model, x = SumOfProducts().eval(), torch.randn(128, 3072)
    compiled = braze.compile(model, x, cache=False)
    assert compiled.report.cpu_codegen.startswith("data tiling"), compiled.report.cpu_codegen
    with torch.no_grad():
        want = model.double()(x.double())
    err = float((compiled(x).double() - want).abs().max() / want.abs().max())
    assert err < 1e-5, err
