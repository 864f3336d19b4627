"""Kernel configurations: cost model, tuning cache, IREE compilation_info, unchanged numerics."""

import re

import pytest
import torch

import braze
from braze.passes.gpu import tuning
from braze.passes.gpu.configs import KernelConfig, MatmulConfig
from braze.passes.gpu.cost_model import MATMUL_CANDIDATES, choose_config, choose_matmul_config


class Chain(torch.nn.Module):
    def forward(self, x):
        return torch.sigmoid(torch.relu(x * 2 + 1)) * x - 0.5


def test_cost_model():
    assert choose_config(16 * 1024 * 1024, 4) == KernelConfig((1024,), (4,), 256)
    assert choose_config(16 * 1024 * 1024, 2) == KernelConfig((2048,), (8,), 256)
    assert choose_config(4096, 4) == KernelConfig((1024,), (4,), 256)
    assert choose_config(384, 4) == KernelConfig((128,), (4,), 32)  # 256, 128 and 64 threads of 4 do not divide it
    assert choose_config(96, 4) is None  # 32 threads of 4 elements need 128
    assert choose_config(100, 4) is None  # no power-of-two tile of >= 32 threads divides 100


def test_collapsed_kernel_numerics_on_cpu():
    """The 1-D form braze gives GPU kernels computes the same values (checked on the CPU)."""
    x = torch.randn(64, 48)
    compiled = braze.compile(Chain(), x, pipeline="fusion-default-pipeline,fusion-configure-kernels")
    x2 = torch.randn(64, 48)
    torch.testing.assert_close(compiled(x2), Chain()(x2), rtol=1e-6, atol=1e-6)


def _ptx_threads(vmfb: bytes) -> set:
    return set(re.findall(rb"\.maxntid (\d+), 1, 1", vmfb))


def test_cuda_compile_uses_the_configuration():
    x = torch.randn(256, 1024)
    configured = braze.compile(Chain(), x, device="cuda", target="sm_90")
    assert configured.report.pipeline.startswith("fusion-cuda-pipeline{target=sm_90 tuning-cache=")
    assert _ptx_threads(configured.vmfb) == {b"256"}
    baseline = braze.compile(Chain(), x, device="cuda", target="sm_90", fusion=False)
    assert _ptx_threads(baseline.vmfb) != {b"256"}  # IREE's own choice differs


def test_tuning_cache_overrides_the_cost_model(tmp_path, monkeypatch):
    monkeypatch.setenv("BRAZE_CACHE_DIR", str(tmp_path))
    x = torch.randn(256, 1024)
    from braze.compiler import frontend
    from braze.passes import runner
    from braze.passes.gpu.matchers import configured_signatures

    imported = frontend.import_model(Chain(), (x,))
    with imported.context:
        runner.run_pipeline(imported.module, "fusion-default-pipeline,fusion-configure-kernels{target=sm_90}")
        sig = configured_signatures(imported.module.operation)
    assert len(sig) == 1 and sig[0].startswith("elementwise_262144_f32")
    cache = tuning.TuningCache(tuning.default_path())
    cache.record(sig[0], "sm_90", "workgroup=512 thread=4 threads=128")
    reread = tuning.TuningCache(tuning.default_path())
    assert KernelConfig.parse(reread.lookup(sig[0], "sm_90")) == KernelConfig((512,), (4,), 128)
    assert reread.lookup(sig[0], "sm_80") is None
    tuned = braze.compile(Chain(), x, device="cuda", target="sm_90")
    assert _ptx_threads(tuned.vmfb) == {b"128"}


@pytest.mark.parametrize("text", ["{not json", "[1, 2]", '{"sm_90": [1]}', '{"sm_90": {"k": 3}}', "\xff\xfe"])
def test_unreadable_or_malformed_cache_is_ignored(tmp_path, text):
    path = tmp_path / "tuning.json"
    path.write_bytes(text.encode("latin-1"))
    assert tuning.TuningCache(path).lookup("k", "sm_90") is None
    model = torch.nn.Linear(256, 128, bias=False).eval()
    compiled = braze.compile(model, torch.randn(64, 256),
                             pipeline=f"fusion-default-pipeline,fusion-configure-kernels{{target=sm_90 tuning-cache={path}}}")
    assert compiled.report.kernel_configs[0]["config"].startswith("simt workgroup=32,32")


@pytest.mark.parametrize("bad", ["1024:4", "a:b:c"])
def test_bad_forced_config_is_a_pipeline_error(bad):
    with pytest.raises(braze.PassPipelineError, match="option 'config' of 'fusion-configure-kernels' expects WORKGROUP:THREAD:THREADS"):
        braze.compile(Chain(), torch.randn(64, 16), pipeline=f"fusion-configure-kernels{{target=sm_90 config={bad}}}")


def test_cuda_matmul_uses_the_measured_configuration():
    """A static f32 Linear on IREE's matmul (generated kernels off) compiles with braze's SIMT
    tiles (16x16 threads), not IREE's default."""
    model = torch.nn.Linear(256, 128).eval()
    x = torch.randn(64, 256)
    configured = braze.compile(model, x, device="cuda", target="sm_90",
                               pipeline="fusion-cuda-pipeline{target=sm_90 kernels=off}")
    baseline = braze.compile(model, x, device="cuda", target="sm_90", fusion=False)
    assert b".maxntid 16, 16, 1" in configured.vmfb
    assert b".maxntid 16, 16, 1" not in baseline.vmfb


def test_report_lists_kernel_configurations():
    compiled = braze.compile(Chain(), torch.randn(256, 1024), device="cuda", target="sm_90")
    assert compiled.report.kernel_configs == [
        {"op": "linalg.generic", "shape": "tensor<262144xf32> x tensor<262144xf32>",
         "config": "workgroup=1024 thread=4 threads=256"}
    ]
    assert "kernel configurations (fusion-configure-kernels):" in str(compiled.report)
    assert braze.compile(Chain(), torch.randn(256, 1024)).report.kernel_configs == []


def test_matmul_config_forms_round_trip():
    for configs in MATMUL_CANDIDATES.values():
        for c in configs:
            assert c.consistent()
            assert MatmulConfig.parse_short(c.short()) == c
            assert MatmulConfig.parse(c.text()) == c
    for bad in ("simt:64x32:8:4x4:16x16", "mma:128x128:4:4x8:256:3", "simt:64x32:8:4x2", "warp:64x32:8:4x2:16x16"):
        with pytest.raises(ValueError):
            MatmulConfig.parse_short(bad)


def test_matmul_cost_model_counts_workgroups_per_sm():
    # 1024 x 3072: 128 x 64 tiles give 384 workgroups, two per SM of the H200's 132.
    assert choose_matmul_config(1, 1024, 3072, 768, "f32", "sm_90").short() == "simt:128x64:8:8x4:16x16"
    # 1024 x 768: 128 x 64 gives 96, 64 x 64 192; 64 x 32 (384) is the first with two waves.
    assert choose_matmul_config(1, 1024, 768, 768, "f32", "sm_90").short() == "simt:64x32:16:4x2:16x16"
    # bf16 without two waves of MMA tiles keeps IREE's default; 4096^2 gets 128 x 128 tiles.
    assert choose_matmul_config(1, 1024, 768, 768, "bf16", "sm_90") is None
    assert choose_matmul_config(1, 4096, 4096, 4096, "bf16", "sm_90").short() == "mma:128x128:4:4x8:128:3"
    # Nothing divides 100 rows: IREE's default.
    assert choose_matmul_config(1, 100, 96, 64, "f32", "sm_90") is None
    # A transposed weight (read along K) takes 32-deep K steps.
    assert choose_matmul_config(1, 1024, 768, 768, "f32", "sm_90", transposed_b=True).short() == \
        "simt:64x32:32:4x2:16x16"


def test_linear_weight_is_a_transposed_b_signature():
    """A Linear's matmul reads its weight transposed: its own signature, and the tuner's
    standalone model for that signature reproduces it."""
    from braze.tools.tune import MatMul, _matmul_signatures

    found = _matmul_signatures(torch.nn.Linear(256, 128, bias=False).eval(), [torch.randn(64, 256)], "sm_90")
    assert found == ["matmul_tb_64x128x256_f32"]
    model, args = MatMul(found[0]).build()
    assert [tuple(a.shape) for a in args] == [(64, 256), (128, 256)]
    assert _matmul_signatures(model, args, "sm_90") == found
    with pytest.raises(ValueError, match="not a matmul signature"):
        MatMul("conv_1x2x3_f32")


def test_tuned_matmul_overrides_the_cost_model(tmp_path, monkeypatch):
    """A winner in the tuning cache, keyed by the matmul's signature, replaces the model's tiles."""
    monkeypatch.setenv("BRAZE_CACHE_DIR", str(tmp_path))
    model = torch.nn.Linear(256, 128, bias=False).eval()
    x = torch.randn(64, 256)
    assert braze.compile(model, x, device="cuda", target="sm_90").report.kernel_configs[0]["config"].startswith(
        "simt workgroup=32,32")
    tuning.TuningCache(tuning.default_path()).record(
        "matmul_tb_64x128x256_f32", "sm_90", "simt workgroup=64,64 reduction=16 thread=4,4 threads=16,16")
    tuned = braze.compile(model, x, device="cuda", target="sm_90")
    assert tuned.report.kernel_configs[0]["config"] == "simt workgroup=64,64 reduction=16 thread=4,4 threads=16,16"


def test_batch_matmul_configuration_compiles_and_keeps_numerics():
    """torch.bmm gets batch tiles on CUDA (compiled here) and the same values as eager on the CPU."""

    class Bmm(torch.nn.Module):
        def forward(self, a, b):
            return torch.bmm(a, b)

    a, b = torch.randn(8, 64, 32), torch.randn(8, 32, 64)
    compiled = braze.compile(Bmm(), a, b, device="cuda", target="sm_90")
    assert any(c["op"] == "linalg.batch_matmul" for c in compiled.report.kernel_configs)
    assert b".maxntid 16, 16, 1" in compiled.vmfb
    cpu = braze.compile(Bmm(), a, b, pipeline="fusion-default-pipeline,fusion-configure-kernels{target=sm_90}")
    torch.testing.assert_close(cpu(a, b), torch.bmm(a, b), rtol=1e-5, atol=1e-5)
