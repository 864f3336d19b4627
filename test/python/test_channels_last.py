"""fusion-channels-last: convolutions, their epilogues and pooling in NHWC (issue 38).

- The pass's arithmetic on the CPU: a network with every op kind the pass rewrites (a padded
  3-channel stem with BatchNorm and ReLU, a -inf pad and max pool, a bottleneck with a strided
  3x3 and a 1x1 shortcut, a biased convolution, a residual add, the average pool's reduction, a
  classifier), compiled for llvm-cpu with the pass in the pipeline, against eager in float64.
- The CUDA lowering: every convolution a generated NHWC kernel, the stem reading the model's
  NCHW input itself, and no layout copy left between them (the only transposes are of
  constant weights, which IREE computes once); `channels-last=off` keeps the NCHW kernels.
The NHWC kernel template itself is checked in test_generated_kernels (Triton's interpreter).
"""

import pytest
import torch
import torch.nn.functional as F

import braze
from braze.compiler import lower
from braze.compiler.backend import PAD_FUSION_FLAG
from braze.irutil import all_ops
from braze.testing.zoo import BasicBlock, Bottleneck

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


def test_channels_last_network_matches_eager_on_cpu():
    model = _model()
    x, y = torch.randn(2, 3, 32, 24), torch.randn(2, 16, 16, 12)  # H != W: a swapped map shows
    compiled = braze.compile(model, x, y, pipeline=CPU_WITH_PASS, cache=False)
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


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_cuda_lowering_is_nhwc_with_no_layout_copy(dtype):
    model, x, y = _model().to(dtype), torch.randn(2, 3, 32, 32, dtype=dtype), torch.randn(2, 16, 16, 16, dtype=dtype)
    lowered = lower(model, x, y, device="cuda", target="sm_90",
                    pipeline="fusion-cuda-pipeline{target=sm_90 channels-last=auto}")
    module = lowered.module.operation
    with lowered.context:
        specs = [s for s in _kernel_specs(module) if s.conv]
        assert len(specs) == 8 and all(s.nhwc for s in specs)
        stem = [s for s in specs if s.conv[1] == 3]
        assert len(stem) == 1 and stem[0].nchw_input  # reads the model's input: no transpose of it
        from braze.kernels.spec import ATTR

        (program,) = [f for f in all_ops(module, "func.func") if ATTR not in f.attributes and f.regions[0].blocks]
        transposes = all_ops(program, "linalg.transpose")
        assert len(transposes) == 8  # the weights' (y is read in the stem's epilogue through a renamed map)
        for t in transposes:
            src = t.operands[0].owner
            assert getattr(src, "name", "") == "arith.constant", f"a layout copy of a computed value is left: {t}"
        assert not all_ops(module, ("linalg.conv_2d_nchw_fchw", "linalg.pooling_nchw_max"))
    # the NHWC max pool's -inf pad joins the pool's dispatch (IREE's pad fusion), and the report says so
    assert PAD_FUSION_FLAG in lowered.iree_flags and "1 pooling pads" in lowered.report.extra["pad_fusion"]
    off = lower(model, x, y, device="cuda", target="sm_90",
                pipeline="fusion-cuda-pipeline{target=sm_90 channels-last=off}")
    with off.context:
        assert not any(s.nhwc for s in _kernel_specs(off.module.operation))
    assert PAD_FUSION_FLAG not in off.iree_flags  # measured with NHWC builds only
    default = lower(model, x, y, device="cuda", target="sm_90")  # off by default (bench/NOTES.md §49)
    with default.context:
        assert not any(s.nhwc for s in _kernel_specs(default.module.operation))
