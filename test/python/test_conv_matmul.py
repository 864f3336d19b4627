"""Convolutions as im2col + matmul, and padded matmuls: numerics against eager on random data.

The passes run in braze's CUDA pipeline; the arithmetic they produce is checked here on the
CPU (the same IR, compiled for llvm-cpu), and the CUDA compile is checked for its structure.
"""

import torch
import torch.nn.functional as F

import braze
from braze.compiler import frontend
from braze.irutil import all_ops
from braze.passes import runner
from braze.passes.gpu.configs import IM2COL_ATTR, KERNEL_CONFIG_ATTR, MATMUL_CONFIG_ATTR

GPU_REWRITES = "fusion-conv-to-matmul{target=sm_90},fusion-default-pipeline,fusion-pad-matmuls{target=sm_90}"


class Net(torch.nn.Module):
    """ResNet's shapes in small: a 7x7 stride-2 stem on 3 channels (K = 147, padded), a strided
    3x3 block with a 1x1 downsample, a dilated convolution, BatchNorm, and a classifier whose
    8 x 10 x 64 matmul no tile divides."""

    def __init__(self):
        super().__init__()
        self.stem = torch.nn.Conv2d(3, 32, 7, 2, 3, bias=False)
        self.bn = torch.nn.BatchNorm2d(32)
        self.conv = torch.nn.Conv2d(32, 64, 3, 2, 1)
        self.down = torch.nn.Conv2d(32, 64, 1, 2, bias=False)
        self.dilated = torch.nn.Conv2d(64, 64, 3, 1, 2, dilation=2)
        self.fc = torch.nn.Linear(64, 10)

    def forward(self, x):
        x = F.relu(self.bn(self.stem(x)))
        x = F.relu(self.conv(x) + self.down(x))
        x = F.relu(self.dilated(x))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


def _model():
    torch.manual_seed(0)
    model = Net().eval()
    with torch.no_grad():  # BatchNorm statistics that are not the identity
        model.bn.running_mean.uniform_(-0.5, 0.5)
        model.bn.running_var.uniform_(0.5, 2.0)
    return model


def test_rewritten_network_matches_eager_on_cpu():
    model = _model()
    x = torch.randn(8, 3, 32, 32)
    compiled = braze.compile(model, x, pipeline=GPU_REWRITES)
    x2 = torch.randn(8, 3, 32, 32)
    with torch.no_grad():
        torch.testing.assert_close(compiled(x2), model(x2), rtol=1e-4, atol=1e-5)


def test_every_convolution_becomes_a_configured_matmul():
    model = _model()
    imported = frontend.import_model(model, (torch.randn(8, 3, 32, 32),))
    with imported.context:
        before = [op.name for op in all_ops(imported.module.operation)]
        runner.run_pipeline(imported.module, GPU_REWRITES + ",fusion-configure-kernels{target=sm_90}")
        ops = list(all_ops(imported.module.operation))
    assert before.count("linalg.conv_2d_nchw_fchw") == 4
    assert not [op for op in ops if op.name.startswith("linalg.conv_2d")]
    matmuls = [op for op in ops if op.name == "linalg.matmul"]
    assert len(matmuls) == 5  # four convolutions and the classifier
    assert all(MATMUL_CONFIG_ATTR in op.attributes for op in matmuls)
    copies = [op for op in ops if IM2COL_ATTR in op.attributes]
    assert len(copies) == 4 and all(KERNEL_CONFIG_ATTR in op.attributes for op in copies)
    padded = [op for op in ops if op.name == "tensor.pad" and str(op.results[0].type).startswith("tensor<32x")]
    assert padded  # the stem's 32 x 147 weight and the classifier's 8 rows


def test_cuda_compile_reports_the_tiles():
    model = _model()
    compiled = braze.compile(model, torch.randn(8, 3, 32, 32), device="cuda", target="sm_90",
                             pipeline="fusion-cuda-pipeline{target=sm_90 kernels=off}")  # IREE's kernels
    configs = compiled.report.kernel_configs
    assert sum(c["op"] in ("linalg.matmul", "linalg.batch_matmul") for c in configs) == 5  # some split (split-K)
    copies = [c for c in configs if c["op"] == "linalg.generic" and c["config"].split()[0].count(",") == 5]
    assert len(copies) == 4  # the im2col copies, tiled over their six dimensions


class Mlp(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.up = torch.nn.Linear(256, 8192)
        self.down = torch.nn.Linear(8192, 128)

    def forward(self, x):
        return self.down(F.gelu(self.up(x)))


def test_split_k_matches_eager_on_cpu():
    """The second Linear (256 x 128 x 8192: eight 64 x 64 output tiles) is split 8 ways."""
    from braze.passes.gpu.split_k import choose_split

    assert choose_split(256, 128, 8192, 132) == 8
    assert choose_split(1024, 768, 3072, 132) == 1  # enough tiles already: left alone
    assert choose_split(64, 128, 2048, 132) == 1  # too little work to pay for two more dispatches
    torch.manual_seed(0)
    model = Mlp().eval()
    x = torch.randn(256, 256)
    pipeline = "fusion-default-pipeline,fusion-split-k{target=sm_90}"
    imported = frontend.import_model(model, (x,))
    with imported.context:
        runner.run_pipeline(imported.module, pipeline)
        batch = [op for op in all_ops(imported.module.operation) if op.name == "linalg.batch_matmul"]
    assert [str(op.operands[0].type) for op in batch] == ["tensor<8x256x1024xf32>"]
    compiled = braze.compile(model, x, pipeline=pipeline)
    x2 = torch.randn(256, 256)
    with torch.no_grad():
        torch.testing.assert_close(compiled(x2), model(x2), rtol=1e-5, atol=1e-5)


def test_bf16_pointwise_convolution_is_a_matmul_even_untiled():
    """A bf16 1x1 convolution whose matmul gets no tiles still becomes im2col + matmul for CUDA
    (IREE 3.13's own form of it is wrong on CUDA: bench/repro/bf16_ops.py); the rewritten
    arithmetic, run on the CPU, matches float64 eager within bf16 rounding."""
    torch.manual_seed(0)
    model = torch.nn.Conv2d(16, 96, 1, bias=False).eval()
    x = torch.randn(2, 16, 16, 16)
    with torch.no_grad():
        ref = model.double()(x.bfloat16().double())
    model = model.float().bfloat16()
    imported = frontend.import_model(model, (x.bfloat16(),))
    with imported.context:
        runner.run_pipeline(imported.module, "fusion-conv-to-matmul{target=sm_90}")
        names = [op.name for op in all_ops(imported.module.operation)]
    assert "linalg.conv_2d_nchw_fchw" not in names and "linalg.matmul" in names
    compiled = braze.compile(model, x.bfloat16(), pipeline="fusion-conv-to-matmul{target=sm_90},fusion-cpu-pipeline")
    got = compiled(x.bfloat16()).double()
    assert ((got - ref).abs().max() / ref.abs().max()).item() < 1e-2
