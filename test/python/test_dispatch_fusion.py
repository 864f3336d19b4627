"""IREE's aggressive dispatch fusion on CUDA and the CPU (backend.AGGRESSIVE_FUSION): a LayerNorm and what
follows it is one dispatch, where IREE's default makes three (a sum, the variance, the
normalization); turned off by a later iree_flags entry. Cross-compiled here: the dispatch count
is known at compile time. (Its speed and numerics on the H200: bench/NOTES.md §22.)"""

from __future__ import annotations

import pytest
import torch

import braze
from braze.compiler.backend import AGGRESSIVE_FUSION


class LayerNormGelu(torch.nn.Module):
    def __init__(self, d: int):
        super().__init__()
        self.norm = torch.nn.LayerNorm(d)

    def forward(self, x, r):
        return torch.nn.functional.gelu(self.norm(x + r))


def _rows_off() -> str:
    """braze's CUDA pipeline with its row kernels off: the LayerNorm is IREE's to fuse."""
    import dataclasses

    from braze.passes import pipelines

    return dataclasses.replace(pipelines.for_device("cuda", "sm_90"), rows="off").pipeline_text()


@pytest.mark.parametrize("flags, rows, dispatches", [(None, "off", 1), ([AGGRESSIVE_FUSION.replace("=true", "=false")], "off", 3),
                                                     (None, "on", 1), ([AGGRESSIVE_FUSION.replace("=true", "=false")], "on", 1)])
def test_a_layernorm_and_its_consumers_are_one_cuda_dispatch(flags, rows, dispatches):
    """IREE's aggressive fusion makes the LayerNorm and its GELU one dispatch (three without it);
    braze's row kernel (the default) makes them one kernel whatever IREE's flags."""
    model = LayerNormGelu(256).eval()
    args = (torch.randn(4, 32, 256), torch.randn(4, 32, 256))
    m = braze.compile(model, *args, device="cuda", target="sm_90", iree_flags=flags, cache=False,
                      pipeline=_rows_off() if rows == "off" else None)
    assert m.report.dispatch_count == dispatches
    assert (m.report.launch_plan or "").startswith(f"{dispatches} kernels")
    assert any(k["generated"] and k["kernel"].startswith("rows") for k in m.report.kernels) == (rows == "on")


def test_the_cpu_fuses_the_layernorm_too():
    """On the CPU as on CUDA: the LayerNorm's statistics and its consumers in one dispatch
    (IREE's default makes 3), matching eager; not without braze's passes (fusion=False: the raw
    toolchain's baseline, whose bf16 round trips IREE's fusion would fold, bench/NOTES.md §37)."""
    model = LayerNormGelu(256).eval()
    args = (torch.randn(4, 32, 256), torch.randn(4, 32, 256))
    m = braze.compile(model, *args, cache=False)
    assert m.report.dispatch_count == 1
    assert m.report.dispatch_fusion.startswith("aggressive")
    plain = braze.compile(model, *args, cache=False, iree_flags=[AGGRESSIVE_FUSION.replace("=true", "=false")])
    assert plain.report.dispatch_count == 3
    baseline = braze.compile(model, *args, cache=False, fusion=False)
    assert baseline.report.dispatch_count == 3 and not baseline.report.dispatch_fusion
    with torch.no_grad():
        expected = model(*args)
    torch.testing.assert_close(m(*args), expected, rtol=1e-5, atol=1e-5)


def test_where_aggressive_fusion_fails_to_compile_iree_s_default_dispatches_are_used():
    """IREE 3.13's CUDA code generator fails on some aggressively fused dispatches (here a
    softmax of a (3, 16) tensor next to the GELU and Linear that read the same input: "'vector.
    transfer_write' op write affecting operations on global resources are restricted to
    workgroup distributed contexts"); braze compiles it with IREE's default dispatches, as the
    raw toolchain does, and says so in the report. (With braze's row kernels, the default, the
    softmax is a generated kernel and IREE's aggressive fusion compiles the rest.)"""
    from braze.testing.randomgraphs import random_graph

    model, args = random_graph(225)
    m = braze.compile(model, *args, device="cuda", target="sm_90", cache=False, pipeline=_rows_off())
    assert m.report.dispatch_fusion.startswith("default (aggressive fusion failed to compile")
    assert "IREE dispatch fusion" in m.report.table()
    with pytest.raises(braze.CompileError):  # the user's own flag is not second-guessed
        braze.compile(model, *args, device="cuda", target="sm_90", cache=False, iree_flags=[AGGRESSIVE_FUSION],
                      pipeline=_rows_off())
    rows = braze.compile(model, *args, device="cuda", target="sm_90", cache=False)
    assert rows.report.dispatch_fusion.startswith("aggressive")


class RoundTripAfterMatmul(torch.nn.Module):
    """Each element's bf16 rounding error after a matmul: zero if the round trip is dropped."""

    def forward(self, x, w):
        y = x @ w
        return y.to(torch.bfloat16).to(torch.float32) - y


@pytest.mark.parametrize("flags", [None, [AGGRESSIVE_FUSION.replace("=true", "=false")]], ids=["aggressive", "default"])
def test_a_bf16_round_trip_after_a_matmul_keeps_its_rounding(flags):
    """IREE 3.13 on the CPU folds extf(truncf(y)) to y once its matmul-epilogue fusion puts
    both in one dispatch (aggressive fusion: random graph 151 of the differential suite);
    fusion-form-groups keeps a bf16 round trip in one group, which fusion-lower-to-linalg
    rounds in integer ops IREE does not fold. Against the rounding of the float64 product."""
    torch.manual_seed(0)
    x, w = torch.randn(16, 32), torch.randn(32, 24)
    m = braze.compile(RoundTripAfterMatmul().eval(), x, w, iree_flags=flags, cache=False)
    y = (x.double() @ w.double()).float()
    want = y.to(torch.bfloat16).float() - y
    got = m(x, w)
    step = y.abs() * 2.0 ** -7  # a summation order other than float64's may flip a rounding
    assert got.abs().max() > 0.25 * want.abs().max()
    assert ((got - want).abs() <= step).float().mean() > 0.95


class CacheWrite(torch.nn.Module):
    """A KV-cache write: the new values go where `pos` says, straight from an argument."""

    def forward(self, cache, pos, v):
        cache.index_copy_(2, pos, v)
        return cache


class IndexPut(torch.nn.Module):
    def forward(self, table, rows, values):
        return table.index_put((rows,), values)


def _scatter_bodies(compiled) -> list[tuple[str, str]]:
    import re

    plan = compiled.plan
    return [(k.name, re.search(rf"\.entry {re.escape(k.name)}\(.*?\n}}", e.ptx[k.module], re.S).group(0))
            for e in plan.executables for k in e.kernels if "scatter" in k.name]


def _cache_write(dtype):
    return (CacheWrite().eval(), torch.zeros(1, 2, 64, 64, dtype=dtype), torch.tensor([3]),
            torch.randn(1, 2, 1, 64).to(dtype))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_a_scatter_of_an_argument_is_spread_over_threads(dtype):
    """fusion-spread-scatters: IREE 3.13 compiles a scatter whose updates it reads from a buffer
    as one loop over them in every thread (no thread index in the PTX; 11.7 us a decode layer on
    an H200, §52); with the pass's elementwise producer IREE distributes it."""
    for model, *args in (_cache_write(dtype), (IndexPut().eval(), torch.zeros(64, 32, dtype=dtype),
                                               torch.tensor([5, 9, 2]), torch.randn(3, 32).to(dtype))):
        compiled = braze.compile(model, *args, device="cuda", target="sm_90", cache=False)
        scatters = _scatter_bodies(compiled)
        assert scatters, [k.name for e in compiled.plan.executables for k in e.kernels]
        for name, body in scatters:
            assert "%tid.x" in body, f"{type(model).__name__}: {name} runs as one loop (no thread index in its PTX)"


def test_without_the_pass_iree_runs_the_scatter_as_one_loop():
    """The canary: the CUDA pipeline without fusion-spread-scatters still gives the scatter no
    thread index. When an IREE upgrade distributes it by itself, this fails and the pass can go."""
    from braze.passes import pipelines

    text = pipelines.for_device("cuda", "sm_90").expand()
    assert text.endswith(",fusion-spread-scatters"), text
    # fusion-fold-concat off too: it makes the concat of the scatter's index columns one elementwise
    # generic, which IREE then fuses into the scatter's dispatch and distributes (braze's doing, not IREE's)
    default = pipelines.DefaultPipeline().expand()
    text = text.replace("fusion-default-pipeline", default.replace("fusion-fold-concat,", ""))
    compiled = braze.compile(*_cache_write(torch.float32), device="cuda", target="sm_90", cache=False,
                             pipeline=text.removesuffix(",fusion-spread-scatters"))
    scatters = _scatter_bodies(compiled)
    assert scatters and all("%tid.x" not in body for _, body in scatters)


from test_gpu import MeanAndStd, SumAndValues  # noqa: E402 - beside their run on the GPU (test_gpu.py)


class SumOnly(torch.nn.Module):
    def forward(self, x):
        return (x * 2 + 1).sum()


_CRASHED = """
import sys, torch, braze
sys.path.insert(0, {here!r})
from test_dispatch_fusion import {name}
braze.compile({name}(), torch.rand(256, 512), device="cuda", target="sm_90", cache=False)
print("compiled")
"""


@pytest.mark.parametrize("name", ["SumAndValues", "MeanAndStd"])
def test_a_reduction_to_one_value_beside_its_shared_producer_compiles_for_cuda(name):
    """IREE 3.13's aggressive fusion put the producer into the one-workgroup reduction's
    dispatch with its whole result as a second output, and LLVM's NVPTX back end aborted the
    process ("SmallVector unable to grow") from 65,536 elements on: braze keeps the two
    dispatches apart (backend._split_full_reductions). In a process of its own: the failure is a crash."""
    import os
    import subprocess
    import sys

    code = _CRASHED.format(here=os.path.dirname(__file__), name=name)
    done = subprocess.run([sys.executable, "-W", "ignore", "-c", code], capture_output=True, text=True, timeout=600,
                          env={**os.environ, "BRAZE_COMPILE_CACHE": "0"})
    assert done.returncode == 0 and "compiled" in done.stdout, (done.returncode, done.stderr[-2000:])


@pytest.mark.parametrize("model, barriers", [(SumAndValues(), 1), (MeanAndStd(), 3), (SumOnly(), 0)],
                         ids=["sum-and-values", "mean-and-std", "sum-only"])
def test_only_a_shared_producer_is_kept_apart_from_its_reduction(model, barriers):
    """The barrier goes where the producer's result is read elsewhere too; a chain read only by
    its reduction stays fused into it (one pass over the input). std takes its own mean in float64:
    a third reduction over a shared value."""
    from braze.compiler.stages import iree_input, lower

    text, _ = iree_input(lower(model, torch.rand(256, 512), device="cuda", target="sm_90"))
    assert text.count("util.optimization_barrier") == barriers

