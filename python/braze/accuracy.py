"""How far a result is from its reference: the one error metric of braze (library, tests, bench,
GPU-host scripts and `braze check`).

    max_error(got, expected)   ->   max |got - expected| / max(floor, max |expected|)

over every leaf of two results (tensors, numpy arrays or numbers in nested tuples, lists and
dicts, as torch's pytree flattens them). It is NaN- and inf-aware, because Python's
`max(0.0, nan)` is 0.0 and a metric built from it passes a result that is all NaN:

- a NaN or an infinity in `got` where `expected` has none, or a NaN or infinity of `expected`
  that `got` does not have at the same place (with the same sign), is an infinite error;
- positions where both hold the same non-finite value agree (a model may compute an inf);
- a different number of leaves, a different shape or a different kind of dtype (float, complex,
  integer, bool) is an infinite error, and so is a different dtype, except that a float64
  `expected` (the reference braze compares with) may stand for any floating result; pass
  `like=` (the model's own eager result) to require its dtypes exactly;
- integer and bool leaves must be equal; a None leaf must be None in both.

`floor` is the smallest scale: 1.0 (the default) makes the error absolute for results under 1
in magnitude, as the differential suite and `braze check` measure; the zoo's per-model
tolerances are purely relative (floor=1e-30).

Needs torch and nothing of braze's compiler: GPU hosts import it too.
"""

from __future__ import annotations

import math

INF = float("inf")


def _leaves(value) -> list:
    from torch.utils._pytree import tree_leaves

    return list(tree_leaves(value))


def _tensor(x):
    import numpy as np
    import torch

    if isinstance(x, torch.Tensor):
        return x.detach()
    if isinstance(x, np.ndarray):
        return torch.from_numpy(np.ascontiguousarray(x))
    if isinstance(x, (bool, int, float, complex, np.generic)):
        return torch.as_tensor(x)
    raise TypeError(f"cannot compare a {type(x).__name__} as a result")


def _kind(dtype) -> str:
    if dtype.is_complex:
        return "complex"
    if dtype.is_floating_point:
        return "float"
    return "bool" if str(dtype) == "torch.bool" else "integer"


def leaf_error(got, expected, *, floor: float = 1.0, dtype=None) -> float:
    """max_error of one pair of leaves (`dtype`: the dtype `got` must have; None: see module doc)."""
    import torch

    if got is None or expected is None:  # a model may return None (torch's pytree keeps it as a leaf)
        return 0.0 if got is None and expected is None else INF
    g, e = _tensor(got), _tensor(expected)
    if tuple(g.shape) != tuple(e.shape) or _kind(g.dtype) != _kind(e.dtype):
        return INF
    if dtype is not None and g.dtype != dtype:
        return INF
    if dtype is None and g.dtype != e.dtype and e.dtype not in (torch.float64, torch.complex128):
        return INF
    if e.numel() == 0:
        return 0.0
    g, e = g.cpu(), e.cpu()
    if _kind(e.dtype) in ("integer", "bool"):
        return 0.0 if torch.equal(g, e) else INF
    wide = torch.complex128 if e.dtype.is_complex else torch.float64
    g, e = g.to(wide), e.to(wide)
    g_finite, e_finite = torch.isfinite(g), torch.isfinite(e)
    if not torch.equal(g_finite, e_finite):
        return INF
    if not bool(e_finite.all()):
        odd = ~e_finite
        gn, en = g[odd], e[odd]
        if e.is_complex():  # each part on its own: equal, or NaN in both
            gn, en = torch.view_as_real(gn), torch.view_as_real(en)
        if not bool(((gn == en) | (torch.isnan(gn) & torch.isnan(en))).all()):
            return INF
        g, e = g[e_finite], e[e_finite]
        if e.numel() == 0:
            return 0.0
    diff = float((g - e).abs().max())
    scale = max(floor, float(e.abs().max()))
    error = diff / scale if scale > 0 else (0.0 if diff == 0 else INF)
    return error if not math.isnan(error) else INF


def max_error(got, expected, *, floor: float = 1.0, like=None) -> float:
    """The largest leaf_error over the leaves of `got` and `expected` (see the module doc)."""
    got_leaves, expected_leaves = _leaves(got), _leaves(expected)
    if len(got_leaves) != len(expected_leaves):
        return INF
    dtypes = [None] * len(expected_leaves)
    if like is not None:
        like_leaves = _leaves(like)
        if len(like_leaves) != len(expected_leaves):
            return INF
        dtypes = [None if x is None else _tensor(x).dtype for x in like_leaves]
    worst = 0.0
    for g, e, d in zip(got_leaves, expected_leaves, dtypes):
        try:
            error = leaf_error(g, e, floor=floor, dtype=d)
        except TypeError:
            return INF
        worst = max(worst, error)  # no NaN reaches this max: leaf_error returns INF for one
    return worst


def reference(eager, wide):
    """The float64 `wide` result, except where the model's own dtype overflows: where `eager`
    (the model in its own dtype) holds an infinity or a NaN, that is the model's behaviour, not
    an error braze makes, and the reference takes eager's value, which braze must then match."""
    import torch
    from torch.utils._pytree import tree_flatten, tree_unflatten

    eager_leaves = _leaves(eager)
    wide_leaves, spec = tree_flatten(wide)
    if len(eager_leaves) != len(wide_leaves):
        return wide
    out = []
    for a, w in zip(eager_leaves, wide_leaves):
        if isinstance(a, torch.Tensor) and isinstance(w, torch.Tensor) and a.shape == w.shape and \
                a.dtype.is_floating_point and w.dtype.is_floating_point:
            a64 = a.detach().to(device=w.device, dtype=w.dtype)
            w = torch.where(torch.isfinite(a64), w, a64)
        out.append(w)
    return tree_unflatten(out, spec)
