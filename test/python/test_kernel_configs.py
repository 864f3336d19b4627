"""Kernel configurations: cost model, tuning cache, IREE compilation_info, unchanged numerics."""

import re

import pytest
import torch

import braze
from braze import tuning
from braze.passes.configure_kernels import KernelConfig, choose_config


class Chain(torch.nn.Module):
    def forward(self, x):
        return torch.sigmoid(torch.relu(x * 2 + 1)) * x - 0.5


def test_cost_model():
    assert choose_config(16 * 1024 * 1024, 4) == KernelConfig(1024, 4, 256)
    assert choose_config(16 * 1024 * 1024, 2) == KernelConfig(2048, 8, 256)
    assert choose_config(96, 4) == KernelConfig(96, 1, 96) or choose_config(96, 4) is None
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
    assert "fusion-configure-kernels{target=sm_90}" in configured.report.pipeline
    assert _ptx_threads(configured.vmfb) == {b"256"}
    baseline = braze.compile(Chain(), x, device="cuda", target="sm_90", fusion=False)
    assert _ptx_threads(baseline.vmfb) != {b"256"}  # IREE's own choice differs


def test_tuning_cache_overrides_the_cost_model(tmp_path, monkeypatch):
    monkeypatch.setenv("BRAZE_CACHE_DIR", str(tmp_path))
    x = torch.randn(256, 1024)
    from braze import frontend
    from braze.passes import registry
    from braze.passes.configure_kernels import configured_signatures

    imported = frontend.import_model(Chain(), (x,))
    with imported.context:
        registry.run_pipeline(imported.module, "fusion-default-pipeline,fusion-configure-kernels{target=sm_90}")
        sig = configured_signatures(imported.module.operation)
    assert len(sig) == 1 and sig[0].startswith("elementwise_262144_f32")
    tuning.record(sig[0], "sm_90", "workgroup=512 thread=4 threads=128")
    assert tuning.lookup(sig[0], "sm_90") == KernelConfig(512, 4, 128)
    assert tuning.lookup(sig[0], "sm_80") is None
    tuned = braze.compile(Chain(), x, device="cuda", target="sm_90")
    assert _ptx_threads(tuned.vmfb) == {b"128"}


def test_unreadable_cache_is_ignored(tmp_path, monkeypatch):
    monkeypatch.setenv("BRAZE_CACHE_DIR", str(tmp_path))
    (tmp_path / "tuning.json").write_text("{not json")
    assert tuning.lookup("anything", "sm_90") is None


@pytest.mark.parametrize("bad", ["1024:4", "a:b:c"])
def test_bad_forced_config_is_a_pipeline_error(bad):
    with pytest.raises(braze.PassPipelineError, match="expects WORKGROUP:THREAD:THREADS"):
        braze.compile(Chain(), torch.randn(64, 16), pipeline=f"fusion-configure-kernels{{target=sm_90 config={bad}}}")


def test_cuda_matmul_uses_the_measured_configuration():
    """A static f32 Linear compiles with braze's SIMT tiles (16x16 threads), not IREE's default."""
    model = torch.nn.Linear(256, 128).eval()
    x = torch.randn(64, 256)
    configured = braze.compile(model, x, device="cuda", target="sm_90")
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
