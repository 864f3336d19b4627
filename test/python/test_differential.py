"""The differential suite in CI: 200 seeded random graphs (elementwise chains and DAGs,
reductions, normalizations, matmuls, convolutions, pooling, reshapes, casts, integer graphs),
each compiled with braze's passes and without, and every third one also with the CUDA
pipeline's passes compiled for the CPU, compared with eager PyTorch in float64; the fixed
coverage cases of braze.testing.coverage the same way; and the bench's workloads at their CPU sizes.
bench/differential.py runs the same on a GPU host, and here on any seed range (its default: the
first 300; CI ran 300 until its 30 minutes ran out on a slow day, bench/NOTES.md §31). CI
runs the first CI_GRAPHS of the N_GRAPHS, and the rest are marked extended (`--run-extended`):
200 graphs took 16 of CI's minutes on 2 cores (bench/NOTES.md §55).

A result passes within `randomgraphs.tolerance`: ten times float32 eager's own error against
float64, plus the rounding step of any 16-bit cast in the graph.
"""

import copy

import pytest
import torch

import braze
from braze.testing import coverage
from braze.accuracy import max_error
from braze.testing.randomgraphs import random_graph, tolerance
from braze.testing.zoo import CPU_DEFAULT, WORKLOADS

pytestmark = pytest.mark.slow

N_GRAPHS = 200
CI_GRAPHS = 10
PER_CASE = 10
CUDA_PIPELINE = "fusion-cuda-pipeline{target=sm_90}"
FUSION_ALONE = "fusion-cpu-pipeline{conv=direct data-tiling=off}"
"""braze's CPU pipeline without its contraction choices: what fusion's dispatch count is checked on."""


def _float64(model, args):
    wide = copy.deepcopy(model).double()
    with torch.no_grad():
        return wide(*[a.double() if a.dtype.is_floating_point else a for a in args])


@pytest.mark.parametrize("first", [pytest.param(first, marks=[pytest.mark.extended] if first >= CI_GRAPHS else [])
                                   for first in range(0, N_GRAPHS, PER_CASE)])
def test_random_graphs_match_eager(first):
    failures = []
    for seed in range(first, first + PER_CASE):
        model, args = random_graph(seed)
        with torch.no_grad():
            e32 = model(*args)
        e64 = _float64(model, args)
        limit = tolerance(model, max_error(e32, e64))
        variants = {"braze": {}, "unfused": {"fusion": False}}
        if seed % 3 == 0:
            variants["cuda-passes"] = {"pipeline": CUDA_PIPELINE}
        compiled = {}
        for name, options in variants.items():
            try:
                compiled[name] = braze.compile(model, *args, **options)
                error = max_error(compiled[name](*args), e64)
            except braze.BrazeError as e:
                failures.append(f"{model.describe()} [{name}]: {type(e).__name__}: {e}")
                continue
            if error > limit:
                failures.append(f"{model.describe()} [{name}]: error {error:.2e} > {limit:.2e}")
        if {"braze", "unfused"} <= set(compiled):
            fused, plain = compiled["braze"].report, compiled["unfused"].report
            if fused.cpu_codegen.startswith("data tiling") or any("conv-to-matmul" in d for d in fused.decisions):
                # Packed operands and im2col copies are dispatches of their own: fusion's
                # count is that of the same pipeline without them.
                try:
                    alone = braze.compile(model, *args, pipeline=FUSION_ALONE)
                    error = max_error(alone(*args), e64)
                    if error > limit:
                        failures.append(f"{model.describe()} [fusion alone]: error {error:.2e} > {limit:.2e}")
                    fused = alone.report
                except braze.BrazeError as e:
                    failures.append(f"{model.describe()} [fusion alone]: {type(e).__name__}: {e}")
                    continue
            if fused.dispatch_count > plain.dispatch_count:
                failures.append(f"{model.describe()}: fusion costs dispatches "
                                f"({fused.dispatch_count} > {plain.dispatch_count})")
    assert not failures, "\n".join(failures)


def test_the_suite_can_fail(monkeypatch):
    """A miscompiling lowering (every fused addf made a subf) is caught by the same check."""
    from braze.passes import lower_to_linalg

    original = lower_to_linalg.lower_group

    def broken(group):
        fused = original(group)
        if fused is not None:
            for op in fused.regions[0].blocks[0].operations:
                if op.operation.name == "arith.addf":
                    a, b = op.operation.operands
                    with braze._mlir.ir.InsertionPoint(op), op.operation.location:
                        sub = braze._mlir.arith.SubFOp(a, b).result
                    op.operation.results[0].replace_all_uses_with(sub)
        return fused

    monkeypatch.setattr(lower_to_linalg, "lower_group", broken)
    caught = 0
    for seed in range(200):  # until three graphs with a fused add are caught
        model, args = random_graph(seed)
        if not any(s.op == "add" for s in model.steps):
            continue
        e64 = _float64(model, args)
        with torch.no_grad():
            limit = tolerance(model, max_error(model(*args), e64))
        caught += max_error(braze.compile(model, *args)(*args), e64) > limit
        if caught == 3:
            break
    assert caught >= 3


@pytest.mark.parametrize("case", coverage.CASES, ids=[c.name for c in coverage.CASES])
def test_coverage_cases_match_eager(case):
    """float64 in and out, zero-element inputs and results, depthwise and grouped convolutions in
    float32, float16 and bfloat16: eager's dtypes and values, with braze's passes, without, and
    with the CUDA pipeline's passes compiled for the CPU."""
    model, args = case.build()
    with torch.no_grad():
        e32 = model(*args)
    e64 = _float64(model, args)
    limit = case.tolerance(max_error(e32, e64))
    dtypes = [t.dtype for t in (e32 if isinstance(e32, tuple) else (e32,))]
    for options in ({}, {"fusion": False}, {"pipeline": CUDA_PIPELINE}):
        got = braze.compile(model, *args, **options)(*args)
        assert [t.dtype for t in (got if isinstance(got, tuple) else (got,))] == dtypes, options
        assert max_error(got, e64) <= limit, options


EXTENDED_WORKLOADS = {"resnet18"}
"""Bench workloads whose compiles (fused and unfused, 44 s) run only with --run-extended: ResNet-18
on the CPU also runs under torch.compile in test_dynamo."""


@pytest.mark.parametrize("name", [pytest.param(n, marks=[pytest.mark.extended] if n in EXTENDED_WORKLOADS else [])
                                  for n in CPU_DEFAULT])
def test_bench_workloads_match_eager(name):
    model, args = WORKLOADS[name].build("cpu")
    with torch.no_grad():
        e32 = model(*args)
    e64 = _float64(model, args) if WORKLOADS[name].dtype == "float32" else e32.double()
    base = max_error(e32, e64)
    limit = 10 * base + 1e-5 if WORKLOADS[name].dtype == "float32" else 3e-2
    for options in ({}, {"fusion": False}):
        got = braze.compile(model, *args, **options)(*args)
        assert max_error(got, e64) <= limit, (name, options)
