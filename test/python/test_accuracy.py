"""braze.accuracy.max_error, the one error metric: NaN and inf are errors, not zeros, and a lowering
broken into NaN makes braze check, the zoo and the differential suite fail (issue 35)."""

import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

import braze
from braze.accuracy import max_error, reference

INF = float("inf")
ROOT = Path(__file__).resolve().parents[2]


def test_the_error_is_the_largest_difference_over_the_largest_magnitude():
    expected = torch.tensor([[1.0, -4.0], [2.0, 0.5]], dtype=torch.float64)
    got = torch.tensor([[1.5, -4.0], [2.0, 0.25]])
    assert max_error(got, expected) == 0.5 / 4.0
    assert max_error(got, expected * 0.01) == pytest.approx(4.0 - 0.04)  # floor 1: absolute under 1
    assert max_error(got * 0.01, expected * 0.01, floor=0.0) == pytest.approx(0.5 / 4.0)
    assert max_error(got, expected.float()) == 0.5 / 4.0


@pytest.mark.parametrize("bad", [float("nan"), INF, -INF])
def test_a_non_finite_value_eager_does_not_have_is_an_infinite_error(bad):
    expected = torch.randn(3, 4, dtype=torch.float64)
    got = expected.float().clone()
    got[1, 2] = bad
    assert max_error(got, expected) == INF
    assert max_error(torch.full((3, 4), float("nan")), expected) == INF
    assert max_error({"a": (got,)}, {"a": (expected,)}) == INF
    # ... whichever output holds it, first or last
    assert max_error((got, expected.float()), (expected, expected)) == INF
    assert max_error((expected.float(), got), (expected, expected)) == INF


def test_non_finite_values_that_match_eager_agree():
    expected = torch.tensor([1.0, INF, -INF, float("nan"), 2.0], dtype=torch.float64)
    same = expected.float()
    assert max_error(same, expected) == 0.0
    assert max_error(torch.tensor([1.0, -INF, -INF, float("nan"), 2.0]), expected) == INF  # sign
    assert max_error(torch.tensor([1.0, INF, -INF, 0.0, 2.0]), expected) == INF  # a NaN braze lost
    assert max_error(torch.tensor([1.0, INF, -INF, float("nan"), 2.5]), expected) == 0.25


def test_shapes_dtypes_and_counts_that_differ_are_infinite_errors():
    e = torch.randn(4, 5)
    assert max_error(e[:3], e) == INF
    assert max_error(e.reshape(5, 4), e) == INF
    assert max_error(e.half(), e) == INF                         # not the model's dtype
    assert max_error(e.half(), e.double()) < 1e-3                # a float64 reference stands for any float
    assert max_error(e.half(), e.double(), like=e) == INF        # unless eager's dtypes are asked for
    assert max_error(e.int(), e.double()) == INF                 # integer where eager has float
    assert max_error((e, e), (e,)) == INF
    assert max_error([e], [e, e]) == INF
    assert max_error("text", e) == INF
    assert max_error((e, None), (e.double(), None)) == 0.0  # a None output, as a model may return
    assert max_error((e, e), (e.double(), None)) == INF
    assert max_error((e, None), (e.double(), None), like=(e, None)) == 0.0  # convolution_backward's grad_bias
    assert max_error((e, e), (e.double(), None), like=(e, None)) == INF


def test_integers_and_bools_must_be_equal():
    a = torch.randint(-5, 5, (6,))
    assert max_error(a.clone(), a) == 0.0
    b = a.clone()
    b[0] += 1
    assert max_error(b, a) == INF
    assert max_error(a > 0, a > 0) == 0.0 and max_error(a > 0, a >= 0) in (0.0, INF)
    assert max_error(a.int(), a) == INF  # int32 for int64


def test_numpy_complex_and_empty_results():
    x = np.random.default_rng(0).standard_normal((3, 3)).astype(np.float32)
    assert max_error(x, torch.from_numpy(x).double()) == 0.0
    c = torch.randn(5, dtype=torch.complex128)
    assert 0 < max_error(c.to(torch.complex64), c) < 1e-6
    c2 = c.to(torch.complex64).clone()
    c2[2] = complex(float("nan"), 0.0)
    assert max_error(c2, c) == INF
    assert max_error(torch.zeros(0, 3), torch.zeros(0, 3, dtype=torch.float64)) == 0.0
    assert max_error(torch.ones(3), torch.zeros(3), floor=0.0) == INF  # all-zero reference, nonzero result


def test_the_reference_keeps_the_models_own_overflow():
    eager = torch.tensor([3e38, 1.0]) * 2  # float32 overflows to inf; float64 does not
    wide = torch.tensor([3e38, 1.0], dtype=torch.float64) * 2
    assert math.isinf(eager[0]) and max_error(eager, wide) == INF
    ref = reference(eager, wide)
    assert max_error(eager, ref) == 0.0
    assert max_error(torch.tensor([float("nan"), 2.0]), ref) == INF  # braze must overflow the same way


def test_a_nan_lowering_makes_braze_check_fail(monkeypatch):
    import conftest

    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(64, 4, dim_feedforward=128, batch_first=True).eval()
    x = torch.randn(2, 8, 64)
    conftest._nan_fused_arith(monkeypatch)
    result = braze.check(layer, x, bisect=False)
    assert result.errors["braze"] == INF and result.errors["unfused"] <= result.tolerance, result
    assert not result.ok and result.verdict == "braze's passes break the model"
    assert "braze      error inf  WRONG" in str(result)


@pytest.mark.slow
def test_a_nan_lowering_makes_the_zoo_and_differential_suites_fail(tmp_path):
    """The suites themselves, in a pytest of their own with the sabotage on: every selected
    test fails, each on an infinite error."""
    selected = ["test/python/test_zoo.py::test_zoo_matches_eager[elementwise_chain-fused]",
                "test/python/test_zoo.py::test_zoo_matches_eager[transformer_encoder-fused]",
                "test/python/test_zoo.py::test_transformer_encoder_layer_256",
                "test/python/test_differential.py::test_random_graphs_match_eager[0]"]
    env = dict(os.environ, BRAZE_TEST_SABOTAGE="nan-fused-arith")
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--run-slow",
                          "-p", "no:xdist", "-o", "addopts=", *selected], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=900)
    out = run.stdout + run.stderr
    assert run.returncode == 1, out[-3000:]
    assert f"{len(selected)} failed" in out, out[-3000:]
    assert "inf" in out


def test_an_unknown_sabotage_is_refused():
    env = dict(os.environ, BRAZE_TEST_SABOTAGE="nonsense")
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
                          "test/python/test_accuracy.py::test_integers_and_bools_must_be_equal"],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode != 0 and "nan-fused-arith" in run.stdout + run.stderr
