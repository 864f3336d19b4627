"""braze.compile(dynamic_shapes=...): one dynamic build and one static build for every size in
range, each call against eager in float64 on random data."""

import copy

import pytest
import torch

import braze
from braze.errors import InputError
from braze.testing.zoo import BertLayer


class Mlp(torch.nn.Module):
    """A Linear + GELU + LayerNorm + Linear with a residual, and a second output that reduces
    over the dynamic dimension (its size is dynamic in one output, fixed in the other)."""

    def __init__(self):
        super().__init__()
        self.up = torch.nn.Linear(24, 40)
        self.norm = torch.nn.LayerNorm(40)
        self.down = torch.nn.Linear(40, 24)

    def forward(self, x):
        y = x + self.down(self.norm(torch.nn.functional.gelu(self.up(x))))
        return y, y.sum(dim=0)


def _close(got, want, tol=1e-5):
    assert got.shape == want.shape, (got.shape, want.shape)
    err = float((got.double() - want).abs().max() / max(float(want.abs().max()), 1e-30))
    assert err < tol, err


def test_every_size_in_range_matches_float64_with_two_builds():
    torch.manual_seed(0)
    model = Mlp().eval()
    batch = torch.export.Dim("batch", min=1, max=64)
    fast = braze.compile(model, torch.randn(8, 24), dynamic_shapes={"x": {0: batch}}, cache=False)
    assert isinstance(fast, braze.DynamicModule)
    assert fast.signature.inputs[0].shape == [-1, 24]
    assert fast.report.extra["dynamic"]["dims"][0]["max"] == 64
    reference = model.double()
    for n in (1, 3, 8, 17, 64):
        x = torch.randn(n, 24)
        y, s = fast(x)
        want_y, want_s = reference(x.double())
        _close(y, want_y)
        _close(s, want_s)
        assert fast.build_for(x) == ("static" if n == 8 else "dynamic")
    assert fast.calls == {"static": 1, "dynamic": 4}
    # Intermediates live in one buffer sized per call by IREE's query: a smaller call after the
    # largest reuses it, a larger one replaces it.
    assert fast.dynamic.abi["transient_storage"]
    x = torch.randn(2, 24)
    _close(fast(x)[0], reference(x.double())[0])


def test_out_of_range_and_mismatched_sizes_are_named():
    torch.manual_seed(1)
    model = Mlp().eval()
    fast = braze.compile(model, torch.randn(4, 24), cache=False, specialize="none",
                         dynamic_shapes={"x": {0: torch.export.Dim("batch", min=2, max=16)}})
    assert fast.static is None
    with pytest.raises(InputError, match=r"dimension 0 is 17, outside the range .*\[2, 16\]"):
        fast(torch.randn(17, 24))
    with pytest.raises(InputError, match=r"shape \[5, 23\] does not match the compiled float32\[\?, 24\]"):
        fast(torch.randn(5, 23))
    x = torch.randn(2, 24)
    _close(fast(x)[0], model.double()(x.double())[0])


def test_bert_layer_with_a_dynamic_batch():
    """The bench's BERT layer (attention from plain ops) in small, every batch from one build."""
    torch.manual_seed(2)
    model = BertLayer(hidden=64, heads=4, intermediate=128).eval()
    x = torch.randn(2, 16, 64)
    batch = torch.export.Dim("batch", min=1, max=64)
    fast = braze.compile(model, x, dynamic_shapes=({0: batch},), cache=False)
    reference = model.double()
    for n in (1, 2, 5):
        x = torch.randn(n, 16, 64)
        _close(fast(x), reference(x.double()), tol=1e-4)


def test_a_dim_the_model_fixes_is_an_error():
    class Fixed(torch.nn.Module):
        def forward(self, x):
            return x.reshape(4, 6) * 2

    with pytest.raises(Exception, match="batch|specializ|Constraints"):
        braze.compile(Fixed(), torch.randn(4, 6), cache=False, dynamic_shapes={"x": {0: torch.export.Dim("batch")}})


def test_specialize_is_checked():
    with pytest.raises(InputError, match="specialize='always'"):
        braze.compile(Mlp().eval(), torch.randn(4, 24), cache=False, specialize="always",
                      dynamic_shapes={"x": {0: torch.export.Dim("batch")}})


def test_saving_is_per_build_and_partial_is_refused(tmp_path):
    """A DynamicModule is two builds: save() names the way (each build saved and loaded back,
    the dynamic one still taking every size); partial=True with dynamic_shapes is refused."""
    torch.manual_seed(5)
    model = Mlp().eval()
    shapes = {"x": {0: torch.export.Dim("batch", min=1, max=16)}}
    module = braze.compile(model, torch.randn(4, 24), dynamic_shapes=shapes, cache=False)
    with pytest.raises(InputError, match="module.dynamic.save"):
        module.save(tmp_path / "both.braze")
    assert not (tmp_path / "both.braze").exists()
    dynamic = braze.load(module.dynamic.save(tmp_path / "dynamic.braze"))
    static = braze.load(module.static.save(tmp_path / "static.braze"))
    for rows in (3, 11):
        x = torch.randn(rows, 24)
        _close(dynamic(x)[0], model.double()(x.double())[0])
    x = torch.randn(4, 24)
    _close(static(x)[0], model.double()(x.double())[0])
    with pytest.raises(InputError, match="partial=True"):
        braze.compile(model, torch.randn(4, 24), dynamic_shapes=shapes, partial=True, cache=False)


def test_both_builds_come_back_from_the_compile_cache(monkeypatch, tmp_path):
    """A second compile (another example size, same Dim) loads both builds; results unchanged."""
    monkeypatch.setenv("BRAZE_CACHE_DIR", str(tmp_path))
    torch.manual_seed(3)
    model = Mlp().eval()
    shapes = {"x": {0: torch.export.Dim("batch", min=1, max=64)}}
    first = braze.compile(model, torch.randn(8, 24), dynamic_shapes=shapes, cache=True)
    assert first.dynamic.report.extra["cache"]["hit"] is False
    again = braze.compile(model, torch.randn(8, 24), dynamic_shapes=shapes, cache=True)
    assert again.dynamic.report.extra["cache"]["hit"] is True
    assert again.static.report.extra["cache"]["hit"] is True
    x = torch.randn(5, 24)
    want = model.double()(x.double())[0]
    _close(again(x)[0], want)
    _close(first(x)[0], want)


class Broadcasts(torch.nn.Module):
    """An expand to the input's own (symbolic) sizes, which is dropped, beside a real broadcast."""

    def forward(self, x, row):
        return x.expand(x.shape[0], 4) * 2 + row.expand(x.shape[0], 4)


def test_expands_to_their_own_sizes_are_dropped_and_broadcasts_kept():
    from braze.compiler import fxfix

    batch = torch.export.Dim("batch", min=1, max=32)
    args = (torch.randn(3, 4), torch.randn(1, 4))
    exported = torch.export.export(Broadcasts(), args, dynamic_shapes=({0: batch}, None)).run_decompositions()
    expands = lambda: sum(n.target == torch.ops.aten.expand.default for n in exported.graph.nodes)  # noqa: E731
    assert expands() == 2
    assert fxfix.drop_same_size_expands(exported.graph_module) == 1
    assert expands() == 1
    fast = braze.compile(Broadcasts(), *args, cache=False, dynamic_shapes=({0: batch}, None))
    for n in (1, 3, 32):
        x, row = torch.randn(n, 4), torch.randn(1, 4)
        _close(fast(x, row), Broadcasts()(x.double(), row.double()))


def test_torch_compile_dynamic_graphs_run_as_dynamic_builds():
    """Dynamo makes the batch dynamic at the second size: that graph becomes one dynamic build
    (compiled at its first call), not a recompile per size and not eager."""
    import warnings

    torch._dynamo.reset()
    torch.manual_seed(4)
    model = BertLayer(hidden=32, heads=2, intermediate=64).eval()
    fast = torch.compile(model, backend="braze")
    reference = copy.deepcopy(model).double()
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("error", braze.BrazeWarning)  # nothing may fall back to eager
        for n in (2, 3, 5, 9, 3):
            x = torch.randn(n, 8, 32)
            _close(fast(x), reference(x.double()), tol=1e-4)
    graphs = braze.dynamo.graphs()
    assert [g.compiled for g in graphs] == [True, True]
    assert graphs[1].calls == 4 and "dynamic sizes" in graphs[1].reason
    assert graphs[1].report.extra["dynamic"]["dims"]
    torch._dynamo.reset()
