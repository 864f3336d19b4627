"""float64 math the CPU back end lacks, written out by braze (fusion-expand-f64-math, with the
algorithms in braze.passes.float64_math), and float64 constants torch-mlir rounded to float32.

Was: torch.sin on float64 failed to compile on the CPU ("undefined symbol: sin"), as did cos,
tan, atan, atan2, asin, acos, tanh, log2 and erf, and torch-mlir's randn (Box-Muller's cos) and
polar; `pi/2 - x` and linspace in float64 were off by ~4e-8 (the constant in float32)."""

from __future__ import annotations

import math

import pytest
import torch

import braze
from braze.passes import float64_math as F64

NAMES = ["sin", "cos", "tan", "atan", "asin", "acos", "tanh", "log2", "erf"]
RANGES = {"sin": 1e6, "cos": 1e6, "tan": 50.0, "atan": 1e3, "asin": 1.0, "acos": 1.0, "tanh": 30.0,
          "log2": 1e6, "erf": 8.0}
SPECIALS = torch.tensor([0.0, -0.0, math.inf, -math.inf, math.nan, 1.0, -1.0, 1e-300, -1e-300, 0.5, 2.0],
                        dtype=torch.float64)


def _ulps(got, want) -> float:
    """The largest |got - want| in units in the last place of want (NaN must match NaN)."""
    assert torch.equal(torch.isnan(got), torch.isnan(want))
    ok = torch.isfinite(want)
    assert torch.equal(got[~ok & ~torch.isnan(want)], want[~ok & ~torch.isnan(want)])
    got, want = got[ok], want[ok]
    ulp = torch.nextafter(want.abs(), torch.tensor(math.inf, dtype=torch.float64)) - want.abs()
    return float(((got - want).abs() / ulp).max()) if want.numel() else 0.0


def _inputs(name, n=200_000, seed=0):
    g = torch.Generator().manual_seed(seed)
    span = RANGES[name]
    x = (torch.rand(n, generator=g, dtype=torch.float64) * 2 - 1)
    x = torch.cat([x * span, x * min(span, 1.0) * 1e-3, x * min(span, 4.0)])
    return x.abs() + 1e-300 if name == "log2" else x


@pytest.mark.parametrize("name", NAMES)
def test_each_function_is_within_7_ulp_of_torch(name):
    x = _inputs(name)
    fn = getattr(F64, name)
    assert _ulps(fn(F64.TORCH, x), getattr(torch, name)(x)) <= 7
    specials = SPECIALS.abs() + (SPECIALS == 0) * 1e-300 if name == "log2" else SPECIALS
    assert _ulps(fn(F64.TORCH, specials), getattr(torch, name)(specials)) <= 7


def test_atan2_matches_torch_on_random_values_and_every_pair_of_special_ones():
    g = torch.Generator().manual_seed(1)
    y, x = torch.randn(200_000, generator=g, dtype=torch.float64), torch.randn(200_000, generator=g, dtype=torch.float64)
    assert _ulps(F64.atan2(F64.TORCH, y, x * 1e3), torch.atan2(y, x * 1e3)) <= 7
    a, b = torch.meshgrid(SPECIALS, SPECIALS, indexing="ij")
    got, want = F64.atan2(F64.TORCH, a, b), torch.atan2(a, b)
    assert _ulps(got, want) <= 1
    finite = ~torch.isnan(want)
    assert torch.equal(torch.signbit(got[finite]), torch.signbit(want[finite]))  # atan2(-0, x), atan2(0, -0)


class AllOfThem(torch.nn.Module):
    def forward(self, x, y):
        u = x.clamp(-0.999, 0.999)
        return (torch.sin(x * 30), torch.cos(x * 30), torch.tan(x), torch.atan(x * 40), torch.asin(u),
                torch.acos(u), torch.tanh(x * 20), torch.log2(x.abs() + 1e-3), torch.erf(x * 6), torch.atan2(x, y),
                3.141592653589793 / 2 - x, x + torch.linspace(0, 3.141592653589793, x.shape[-1], dtype=torch.float64))


@pytest.mark.parametrize("fusion", [True, False], ids=["fused", "unfused"])
def test_a_float64_model_of_every_function_compiles_and_is_float64_accurate(fusion):
    g = torch.Generator().manual_seed(2)
    x, y = (torch.rand(64, 97, generator=g, dtype=torch.float64) * 2 - 1 for _ in range(2))
    compiled = braze.compile(AllOfThem(), x, y, fusion=fusion, cache=False)
    x, y = (torch.rand(64, 97, generator=g, dtype=torch.float64) * 2 - 1 for _ in range(2))
    for i, (got, want) in enumerate(zip(compiled(x, y), AllOfThem()(x, y))):
        assert got.dtype == torch.float64
        assert _ulps(got, want) <= 8, f"output {i}"


def test_randn_in_float64_compiles_on_the_cpu():
    """torch-mlir decomposes randn into Box-Muller (log, sqrt, cos) itself: the pass sees the cos."""
    class Noise(torch.nn.Module):
        def forward(self, x):
            return x + torch.randn(x.shape, dtype=torch.float64)

    compiled = braze.compile(Noise(), torch.zeros(256, 256, dtype=torch.float64), cache=False)
    z = compiled(torch.zeros(256, 256, dtype=torch.float64))
    assert abs(float(z.mean())) < 0.02 and abs(float(z.std()) - 1) < 0.02


def test_cuda_keeps_libdevice_and_the_cpu_and_vulkan_expand():
    from braze.compiler import device_pipeline
    from braze.passes import pipelines
    from braze.targets import Target

    assert "fusion-expand-f64-math" in pipelines.for_device("cpu", "host").expand()
    assert "fusion-expand-f64-math" in pipelines.for_device("vulkan", "ampere").expand()
    assert "fusion-expand-f64-math" not in pipelines.for_device("cuda", "sm_90").expand()
    assert device_pipeline(Target("cpu", "host"), fusion=False) == "fusion-baseline-pipeline{f64-math=expand}"
    assert device_pipeline(Target("cuda", "sm_90"), fusion=False) == "fusion-baseline-pipeline"
