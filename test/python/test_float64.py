"""64-bit floats inside 32-bit models (issues 35, 39): IREE demotes f64 to f32 unless told not to,
and braze kept f64 only where a float64 input or result was visible, so torch-mlir's float64
statistics of var/std, a model's own x.double() work and its float64 buffers were silently
computed in float32 (Var of values near 100: 0.1995 for 0.0834), and a complex128 result of
float32 inputs failed at its first call. braze.compiler.frontend.keeps_float64 decides now; each case
against eager, in float64 where eager computes in it."""

from __future__ import annotations

import warnings

import pytest
import torch

import braze


class VarCorrectionLargeInput(torch.nn.Module):
    """torch-mlir's e2e VarCorrectionLargeInputModule (its input: 100 + rand(3, 4, 1024, 8192))."""

    def forward(self, x):
        return torch.ops.aten.var(x, dim=[2, 3], correction=2)


class StdCorrectionLargeInput(torch.nn.Module):
    """torch-mlir's e2e StdCorrectionLargeInputModule (the same input)."""

    def forward(self, x):
        return torch.ops.aten.std(x, dim=[2, 3], correction=2)


@pytest.mark.parametrize("model", [VarCorrectionLargeInput, StdCorrectionLargeInput], ids=["var", "std"])
def test_var_and_std_of_large_values_keep_their_float64_statistics(model):
    """The conformance modules' reduction (1024 x 8192 values near 100) on fewer rows. With the
    statistics demoted to float32 the mean lost ~0.3: Var 0.1995 for 0.0834 (+139%), Std +55%."""
    torch.manual_seed(0)
    x = 100 + torch.rand(1, 2, 1024, 8192)
    m = model().eval()
    compiled = braze.compile(m, x, cache=False)
    x = 100 + torch.rand(1, 2, 1024, 8192)
    got = compiled(x)
    assert got.dtype == torch.float32
    torch.testing.assert_close(got.double(), m(x.double()), rtol=1e-6, atol=0)
    assert compiled.report.extra["float64"].startswith("kept")


class DoubleInside(torch.nn.Module):
    """float32 in and out, float64 inside: 1 + 1e-9 x is 1 in float32, so demoted this is 0."""

    def forward(self, x):
        return (x.double() * 1e-9 + 1.0).prod(-1).sub(1.0).float()


class DoubleBuffer(torch.nn.Module):
    """A float64 buffer of a float32 model (demoted: "'arith.constant' op failed to verify")."""

    def __init__(self):
        super().__init__()
        self.register_buffer("scale", torch.randn(64, dtype=torch.float64))

    def forward(self, x):
        return (x.double() * self.scale).sum(-1).float()


@pytest.mark.parametrize("model", [DoubleInside, DoubleBuffer], ids=["x.double()", "float64-buffer"])
def test_a_float32_model_computing_in_float64_inside_gives_eager_s_answer(model):
    torch.manual_seed(0)
    m = model().eval()
    compiled = braze.compile(m, torch.randn(8, 64), cache=False)
    x = torch.randn(8, 64)
    with warnings.catch_warnings():
        warnings.simplefilter("error", braze.BrazeWarning)
        got = compiled(x)
    expected = m(x)
    assert got.dtype == expected.dtype == torch.float32
    assert expected.abs().min() > 0
    torch.testing.assert_close(got, expected, rtol=1e-6, atol=0)


class ComplexOfFloat32(torch.nn.Module):
    def forward(self, x):
        return torch.complex(x.double(), x.double() * 1e-9 + 1.0)


class ComplexInOut(torch.nn.Module):
    def forward(self, z):
        return torch.view_as_complex(torch.view_as_real(z).flip(-1) * 2)


@pytest.mark.parametrize("model, dtype", [(ComplexOfFloat32, torch.float32), (ComplexInOut, torch.complex128)],
                         ids=["float32-in", "complex128-in"])
def test_complex128_keeps_64_bits(model, dtype):
    """Demoted (no float64 in the signature), the first call failed: "input0 element type
    mismatch; expected cf64 but have cf128", or a complex64 result where complex128 was due."""
    m = model().eval()
    compiled = braze.compile(m, torch.randn(4, 8, dtype=dtype), cache=False)
    x = torch.randn(4, 8, dtype=dtype)
    got = compiled(x)
    assert got.dtype == torch.complex128
    torch.testing.assert_close(got, m(x), rtol=1e-12, atol=0)


def test_a_layernorm_s_statistics_stay_demoted_as_eager_accumulates_them():
    """torch-mlir takes a LayerNorm's variance in float64 too; eager's CPU kernel accumulates in
    float32, and kept they cost the LayerNorm a second dispatch (test_dispatch_fusion)."""
    m = torch.nn.LayerNorm(256).eval()
    x = torch.randn(32, 256)
    compiled = braze.compile(m, x, cache=False)
    assert compiled.report.extra["float64"].startswith("demoted to float32: only normalization statistics")
    with torch.no_grad():
        torch.testing.assert_close(compiled(x).double(), m.double()(x.double()), rtol=1e-5, atol=1e-5)


def test_float64_math_the_cpu_cannot_compile_inside_a_float32_model_is_demoted_aloud():
    """IREE's CPU runtime has no float64 fmod (remainder's lowering): kept, the compile failed;
    braze compiles it with IREE's demotion and says so, naming the op. (erf, the example here
    before, is now written out in float64 by fusion-expand-f64-math and stays float64.)"""

    class Remainder(torch.nn.Module):
        def forward(self, x):
            return torch.remainder(x.double() * 3, 1.25).float()

    x = torch.randn(8, 64)
    with pytest.warns(braze.BrazeWarning, match=r"float64 work .*remainder.*demote that float64 to float32"):
        compiled = braze.compile(Remainder().eval(), x, cache=False)
    assert compiled.report.extra["float64"].startswith("demoted to float32: IREE could not compile it kept")
    torch.testing.assert_close(compiled(x), Remainder()(x), rtol=1e-5, atol=1e-5)


def test_float64_erf_inside_a_float32_model_stays_float64():
    """Was demoted (no f64 erf on IREE's CPU); fusion-expand-f64-math computes it in float64."""

    class Erf(torch.nn.Module):
        def forward(self, x):
            return (torch.erf(x.double()) * 1e6 - torch.erf(x.double() + 1e-9) * 1e6).float()

    x = torch.randn(8, 64)
    with warnings.catch_warnings():
        warnings.simplefilter("error", braze.BrazeWarning)
        compiled = braze.compile(Erf().eval(), x, cache=False)
    torch.testing.assert_close(compiled(x), Erf()(x), rtol=1e-4, atol=1e-7)


@pytest.mark.parametrize("device, target", [("cuda", "sm_90"), ("vulkan", "ampere")])
def test_gpus_demote_the_model_s_own_float64_with_a_warning(device, target):
    """IREE 3.13 cannot compile a float64 reduction for CUDA or Vulkan: the model's own float64
    is demoted there, with a warning naming its ops; a LayerNorm's statistics without one (eager's
    GPU kernels accumulate in float32). Cross-compiled: no GPU needed."""
    with pytest.warns(braze.BrazeWarning, match=r"computes in float64 inside \(convert_element_type.*test_float64"):
        braze.compile(DoubleInside().eval(), torch.randn(8, 64), device=device, target=target, cache=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error", braze.BrazeWarning)
        compiled = braze.compile(torch.nn.LayerNorm(256).eval(), torch.randn(32, 256), device=device, target=target,
                                 cache=False)
    assert compiled.report.extra["float64"].startswith("demoted to float32 for")
