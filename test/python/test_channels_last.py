"""fusion-channels-last: convolutions, their epilogues and pooling in NHWC (issue 38).

- The pass's arithmetic on the CPU: a network with every op kind the pass rewrites (a padded
  3-channel stem with BatchNorm and ReLU, a -inf pad and max pool, a bottleneck with a strided
  3x3 and a 1x1 shortcut, a biased convolution, a residual add, the average pool's reduction, a
  classifier), compiled for llvm-cpu with the pass in the pipeline, against eager in float64.
- The CUDA lowering: every convolution a generated NHWC kernel but the 3-channel stem's (its NHWC
  kernel was wrong on the GPU: min-channels=16), one transpose of the stem's pooled result and
  no other layout copy; with min-channels=1 the stem too, reading the model's NCHW input itself
  (the only transposes then are of constant weights, which IREE computes once);
  `channels-last=off` keeps the NCHW kernels.
The NHWC kernel template itself is checked in test_generated_kernels (Triton's interpreter).
"""

import pytest
import torch
import torch.nn.functional as F

import braze
from braze.irutil import all_ops
from braze.testing.zoo import BasicBlock, Bottleneck

# braze.compiler (lower, PAD_FUSION_FLAG) is imported in the tests that compile: the GPU host runs
# the cuda-marked test here from artifacts, without iree-base-compiler (test/python/gpu_artifacts.py)

CPU_WITH_PASS = "fusion-conv-to-matmul{target=sm_90 leave=f32,bf16,f16},fusion-default-pipeline,fusion-channels-last"


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = torch.nn.Conv2d(3, 16, 7, 2, 3, bias=False)
        self.bn = torch.nn.BatchNorm2d(16)
        self.pool = torch.nn.MaxPool2d(3, 2, 1)
        self.block = Bottleneck(16, 8, 2)
        self.basic = BasicBlock(32, 32, 1)
        self.biased = torch.nn.Conv2d(32, 24, 3, padding=1)
        self.fc = torch.nn.Linear(24, 10)

    def forward(self, x, y):  # y: an NCHW tensor the NHWC stem's epilogue reads through renamed maps
        x = self.pool(F.relu(self.bn(self.stem(x)) + y))
        x = F.relu(self.biased(self.basic(self.block(x))))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


def _model():
    torch.manual_seed(3)
    model = Net().eval()
    with torch.no_grad():  # BatchNorm statistics that are not the identity
        for m in model.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.running_mean.uniform_(-0.5, 0.5)
                m.running_var.uniform_(0.5, 2.0)
                m.weight.uniform_(0.5, 1.5)
    return model


@pytest.mark.parametrize("channels", ["", "{min-channels=1}"])
def test_channels_last_network_matches_eager_on_cpu(channels):
    """The default (the 3-channel stem left NCHW, its output transposed once) and the stem NHWC too."""
    model = _model()
    x, y = torch.randn(2, 3, 32, 24), torch.randn(2, 16, 16, 12)  # H != W: a swapped map shows
    compiled = braze.compile(model, x, y, pipeline=CPU_WITH_PASS + channels, cache=False)
    x2, y2 = torch.randn_like(x), torch.randn_like(y)
    with torch.no_grad():
        want = model.double()(x2.double(), y2.double())
    got = compiled(x2, y2).double()
    assert torch.isfinite(got).all()
    assert (got - want).abs().max().item() < 1e-4 * want.abs().max().item()


def _kernel_specs(module_op):
    from braze._mlir import ir
    from braze.kernels.spec import ATTR, read_spec

    return [read_spec(ir.StringAttr(f.attributes[ATTR]).value)
            for f in all_ops(module_op, "func.func") if ATTR in f.attributes]


def ir_shape(value):
    from braze._mlir import ir

    return ir.RankedTensorType(value.type).shape


def _program(module_op):
    from braze.kernels.spec import ATTR

    (program,) = [f for f in all_ops(module_op, "func.func") if ATTR not in f.attributes and f.regions[0].blocks]
    return program


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_cuda_lowering_is_nhwc_with_no_layout_copy(dtype):
    from braze.compiler import lower
    from braze.compiler.backend import PAD_FUSION_FLAG
    from braze.passes.pipelines import CudaPipeline

    model, x, y = _model().to(dtype), torch.randn(2, 3, 32, 32, dtype=dtype), torch.randn(2, 16, 16, 16, dtype=dtype)
    # the 3-channel stem NHWC too (min-channels=1), reading the model's NCHW input itself
    text = CudaPipeline(target="sm_90", channels_last="on").expand()
    assert "fusion-channels-last{" in text
    stem_too = lower(model, x, y, device="cuda", target="sm_90",
                     pipeline=text.replace("fusion-channels-last{", "fusion-channels-last{min-channels=1 "))
    module = stem_too.module.operation
    with stem_too.context:
        specs = [s for s in _kernel_specs(module) if s.conv]
        assert len(specs) == 8 and all(s.nhwc for s in specs)
        stem = [s for s in specs if s.conv[1] == 3]
        assert len(stem) == 1 and stem[0].nchw_input  # reads the model's input: no transpose of it
        transposes = all_ops(_program(module), "linalg.transpose")
        assert len(transposes) == 8  # the weights' (y is read in the stem's epilogue through a renamed map)
        for t in transposes:
            src = t.operands[0].owner
            assert getattr(src, "name", "") == "arith.constant", f"a layout copy of a computed value is left: {t}"
        assert not all_ops(module, ("linalg.conv_2d_nchw_fchw", "linalg.pooling_nchw_max"))
    # the default (min-channels=16): convolutions of fewer input channels keep their NCHW kernel (the
    # stem's NHWC one was wrong on the GPU, bench/NOTES.md §49): here the stem and the bottleneck's
    # 8-channel 3x3 and 1x1; the layout changes only where the two kinds meet: the pool's result
    # into the first NHWC convolution, the bottleneck's first result back to NCHW
    lowered = lower(model, x, y, device="cuda", target="sm_90",
                    pipeline="fusion-cuda-pipeline{target=sm_90 channels-last=on}")  # float32 too
    module = lowered.module.operation
    with lowered.context:
        specs = [s for s in _kernel_specs(module) if s.conv]
        assert [(s.conv[1], s.nhwc) for s in specs] == [(3, False), (16, True), (8, False), (8, False), (16, True),
                                                        (32, True), (32, True), (32, True)]
        computed = [(list(ir_shape(t.operands[0])), str(t.attributes["permutation"]))
                    for t in all_ops(_program(module), "linalg.transpose")
                    if getattr(t.operands[0].owner, "name", "") != "arith.constant"]
        assert computed == [([2, 16, 8, 8], "array<i64: 0, 2, 3, 1>"), ([2, 8, 8, 8], "array<i64: 0, 3, 1, 2>")]
    # the NHWC max pool's -inf pad joins the pool's dispatch (IREE's pad fusion), and the report says so
    assert PAD_FUSION_FLAG in stem_too.iree_flags and "1 pooling pads" in stem_too.report.extra["pad_fusion"]
    assert PAD_FUSION_FLAG in lowered.iree_flags  # the default's max pool is NCHW: its pad joins it too
    off = lower(model, x, y, device="cuda", target="sm_90",
                pipeline="fusion-cuda-pipeline{target=sm_90 channels-last=off}")
    with off.context:
        assert not any(s.nhwc for s in _kernel_specs(off.module.operation))
    assert PAD_FUSION_FLAG in off.iree_flags and "1 pooling pads" in off.report.extra["pad_fusion"]
    no_pool = lower(torch.nn.Conv2d(3, 8, 3, padding=1).eval().to(dtype), x, device="cuda", target="sm_90")
    assert PAD_FUSION_FLAG not in no_pool.iree_flags  # a convolution's zero pad is its kernel's (no pool)
    # the default (auto): 16-bit networks whose convolutions are all dense, as this one; not float32
    default = lower(model, x, y, device="cuda", target="sm_90")
    with default.context:
        nhwc = [s.nhwc for s in _kernel_specs(default.module.operation) if s.conv]
        assert nhwc == ([False, True, False, False, True, True, True, True] if dtype == torch.bfloat16 else [False] * 8)


class _WithDepthwise(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.dw, self.b = (torch.nn.Conv2d(16, 32, 3, padding=1), torch.nn.Conv2d(32, 32, 3, padding=1, groups=32),
                                   torch.nn.Conv2d(32, 32, 1))

    def forward(self, x):
        return self.b(F.relu(self.dw(F.relu(self.a(x)))))


def test_default_leaves_networks_with_depthwise_convolutions_nchw():
    """auto converts only the class verified on the GPU: a depthwise convolution among the dense
    ones keeps the function NCHW (channels-last=on converts the dense ones around it)."""
    from braze.compiler import lower

    model, x = _WithDepthwise().eval().bfloat16(), torch.randn(2, 16, 16, 16, dtype=torch.bfloat16)
    for layout, want in (("auto", False), ("on", True)):
        lowered = lower(model, x, device="cuda", target="sm_90",
                        pipeline=f"fusion-cuda-pipeline{{target=sm_90 channels-last={layout}}}")
        with lowered.context:
            assert any(s.nhwc for s in _kernel_specs(lowered.module.operation)) is want, layout


@pytest.mark.cuda
def test_pooled_pads_on_cuda_match_eager():
    """On the GPU: the network with its max pool's -inf pad fused into the pool's dispatch (the
    pool NCHW after the NCHW stem: channels-last off, auto and on, the layers after it NCHW or
    NHWC), float32 as float32 (precision='highest') and bf16, against float64: no worse than twice
    eager's own error in the model's dtype (float32: 1e-5)."""
    from braze.accuracy import max_error, reference

    gen = torch.Generator().manual_seed(11)  # the same inputs where the artifacts are built and run
    x, y = torch.randn(2, 3, 32, 24, generator=gen), torch.randn(2, 16, 16, 12, generator=gen)
    builds = []
    for dtype in (torch.float32, torch.bfloat16):
        model = _model().to(dtype)
        args = (x.to(dtype), y.to(dtype))
        for layout in ("off", "auto", "on"):
            pipeline = f"fusion-cuda-pipeline{{target=sm_90 channels-last={layout}}}"
            m = braze.compile(model, *args, device="cuda", precision="highest", cache=False,
                              pipeline=None if layout == "auto" else pipeline)
            assert "1 pooling pads" in m.report.extra.get("pad_fusion", ""), (dtype, layout)
            builds.append((dtype, layout, model, args, m))
    for dtype, layout, model, args, m in builds:  # every compile before the first GPU use
        with torch.no_grad():
            eager = model(*args)
            want = reference(eager, _model().double()(*[a.double() for a in args]))
        got = m(*[a.cuda() for a in args])
        bound = 1e-5 if dtype == torch.float32 else max(2 * max_error(eager, want), 1e-5)
        assert max_error(got, want, like=eager) <= bound, (dtype, layout, max_error(got, want), bound)
