"""Fuzzing calls: random models from the differential suite's generator, each compiled once and
called with random valid inputs in unusual layouts (transposed views, slices with an offset,
broadcast strides, numpy arrays, Fortran order) and random invalid ones (wrong dtype, shape,
count, type, sparse). Valid calls must match eager; invalid ones must raise a BrazeError and
leave the inputs as they were. Random models compiled for zero-size inputs (a batch of 0)
must match eager too. Seeds are fixed; about 30 s, and each seed's run is timed."""

import copy
import random
import time

import numpy as np
import pytest
import torch

import braze
from braze.accuracy import max_error
from braze.testing.randomgraphs import random_graph, tolerance

SEEDS = range(1000, 1016)
CALLS = 12
ZERO_SIZE_SEEDS = (2000, 2001, 2002, 2006, 2007, 2008, 2016, 2017)
"""Float graphs whose inputs all take a batch of 0 in eager (2007 reduces it away: a non-empty
result from empty inputs)."""
SEED_SECONDS = 120
"""Bound on one seed's compile and calls: a seed takes about 2 s on a 2-core CI machine, so
one past 60x that is a compile or call that hangs or recompiles per call, not a slow machine."""


def _odd_layout(rng: random.Random, t: torch.Tensor) -> torch.Tensor:
    """The same values as `t` in another memory layout."""
    kind = rng.choice(["contiguous", "transposed", "offset", "expanded", "channels_last", "strided"])
    if kind == "transposed" and t.dim() >= 2:
        return t.transpose(0, 1).contiguous().transpose(0, 1)
    if kind == "offset":
        flat = torch.empty(t.numel() + 7, dtype=t.dtype)
        view = flat[7:].view(t.shape)
        view.copy_(t)
        return view
    if kind == "expanded" and t.dim() >= 1 and t.shape[0] > 1 and bool((t == t[:1]).all()):
        return t[:1].expand(t.shape)
    if kind == "channels_last" and t.dim() == 4:
        return t.contiguous(memory_format=torch.channels_last)
    if kind == "strided" and t.dim() >= 1:
        wide = torch.empty((t.shape[0] * 2, *t.shape[1:]), dtype=t.dtype)
        wide[::2] = t
        return wide[::2]
    return t.clone()


def _invalid(rng: random.Random, args: tuple) -> tuple[tuple, str]:
    i = rng.randrange(len(args))
    a = args[i]
    kind = rng.choice(["dtype", "shape", "count", "type", "sparse", "zero"])
    bad = list(args)
    if kind == "dtype":
        bad[i] = a.to(torch.float64 if a.dtype != torch.float64 else torch.float32)
    elif kind == "shape":
        bad[i] = torch.zeros(*(s + 1 for s in a.shape), dtype=a.dtype)
    elif kind == "count":
        bad = bad + [a]
    elif kind == "type":
        bad[i] = a.tolist()
    elif kind == "sparse" and a.dim() >= 1 and a.dtype.is_floating_point:
        bad[i] = a.to_sparse()
    else:
        bad[i] = torch.zeros(0, dtype=a.dtype)
    return tuple(bad), kind


@pytest.mark.parametrize("seed", SEEDS)
def test_fuzzed_calls(seed):
    start = time.perf_counter()
    model, examples = random_graph(seed)
    compiled = braze.compile(model, *examples)
    wide = copy.deepcopy(model).double()
    rng = random.Random(seed)
    gen = torch.Generator().manual_seed(seed)
    for call in range(CALLS):
        fresh = tuple(torch.randn(a.shape, generator=gen) if a.dtype.is_floating_point else
                      torch.randint(-20, 20, a.shape, generator=gen, dtype=a.dtype) for a in examples)
        with torch.no_grad():
            expected = model(*fresh)
        if rng.random() < 0.3:
            bad, kind = _invalid(rng, fresh)
            before = [b.clone() if isinstance(b, torch.Tensor) and b.layout == torch.strided else None for b in bad]
            with pytest.raises(braze.BrazeError):
                compiled(*bad)
            for b, kept in zip(bad, before):
                if kept is not None:
                    assert torch.equal(b, kept), f"seed {seed} call {call}: a rejected call changed its input ({kind})"
            continue
        if rng.random() < 0.25:
            got = compiled(*[a.numpy() for a in fresh])
            got = tuple(torch.from_numpy(g) for g in got) if isinstance(got, tuple) else torch.from_numpy(got)
        else:
            inputs = tuple(_odd_layout(rng, a) for a in fresh)
            kept = [a.clone() for a in inputs]
            got = compiled(*inputs)
            assert all(torch.equal(a, k) for a, k in zip(inputs, kept)), f"seed {seed}: an input changed"
        with torch.no_grad():
            wide_expected = wide(*[a.double() if a.dtype.is_floating_point else a for a in fresh])
        limit = tolerance(model, max_error(expected, wide_expected))
        assert max_error(got, wide_expected) <= limit, f"{model.describe()} call {call}"
    elapsed = time.perf_counter() - start
    assert elapsed < SEED_SECONDS, f"seed {seed} took {elapsed:.0f} s (bound {SEED_SECONDS} s)"


def _batch_of_zero(examples: tuple) -> tuple:
    """Random inputs of the examples' shapes with dimension 0 set to 0 (kept at 1 where it
    broadcasts)."""
    return tuple(torch.randn(tuple(0 if i == 0 and s != 1 else s for i, s in enumerate(a.shape))) for a in examples)


@pytest.mark.parametrize("seed", ZERO_SIZE_SEEDS)
def test_zero_size_inputs_match_eager(seed):
    """torch-mlir's lowering died of SIGFPE on views and matmuls of zero-size tensors
    (fxfix.fix_empty_tensors)."""
    model, examples = random_graph(seed)
    zero = _batch_of_zero(examples)
    assert any(a.numel() == 0 for a in zero), f"seed {seed} has no zero-size input"
    compiled = braze.compile(model, *zero)
    for call in range(3):
        fresh = _batch_of_zero(examples)
        with torch.no_grad():
            expected = model(*fresh)
        got = compiled(*fresh) if call < 2 else compiled(*[a.numpy() for a in fresh])
        if call == 2:
            got = tuple(torch.from_numpy(g) for g in got) if isinstance(got, tuple) else torch.from_numpy(got)
        assert max_error(got, expected) <= 1e-5, f"{model.describe()} call {call}"


def test_numpy_views_and_fortran_order():
    model, examples = random_graph(3)
    compiled = braze.compile(model, *examples)
    arrays = [np.asfortranarray(a.numpy()) for a in examples]
    got = compiled(*arrays)
    expected = model(*examples)
    got = tuple(torch.from_numpy(g) for g in got) if isinstance(got, tuple) else torch.from_numpy(got)
    assert max_error(got, expected) <= 1e-5
