"""torch.compile(model, backend="braze"): every zoo model against eager, graph breaks, an
unsupported op left to eager, autograd left to eager, options."""

import warnings

import numpy as np
import pytest
import torch

import braze
import braze.dynamo
from braze.accuracy import max_error
from braze.testing.zoo import CASES, CPU_DEFAULT, WORKLOADS, fresh_like


@pytest.fixture(autouse=True)
def fresh_dynamo():
    torch._dynamo.reset()
    braze.dynamo.reset()
    yield
    torch._dynamo.reset()


def test_registered_as_a_dynamo_backend():
    assert "braze" in torch._dynamo.list_backends(exclude_tags=())
    assert torch._dynamo.lookup_backend("braze") is braze.dynamo.backend


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_zoo_under_torch_compile(case):
    model, args, kwargs = case.build()
    args2, kwargs2 = fresh_like((args, kwargs))
    with torch.no_grad():
        expected = model(*args2, **kwargs2)
        got = torch.compile(model, backend="braze")(*args2, **kwargs2)
    assert max_error(got, expected, floor=0.0) <= case.rtol
    made = braze.dynamo.graphs()
    assert made and all(g.compiled or g.reason == "nothing to compile" for g in made), made


IN_CI = {"resnet18", "transformer_encoder", "elementwise_chain"}
"""The bench workloads CI runs under torch.compile; the others with --run-extended (CI's 30
minutes, bench/NOTES.md §55: each also runs through braze.compile in test_differential)."""


@pytest.mark.slow
@pytest.mark.parametrize("name", [pytest.param(n, marks=[] if n in IN_CI else [pytest.mark.extended])
                                  for n in CPU_DEFAULT])
def test_bench_workloads_under_torch_compile(name):
    import copy

    model, args = WORKLOADS[name].build("cpu")
    with torch.no_grad():
        e32 = model(*args)
        got = torch.compile(model, backend="braze")(*args)
    if WORKLOADS[name].dtype == "float32":
        with torch.no_grad():
            e64 = copy.deepcopy(model).double()(*[a.double() for a in args])
        limit = 10 * max_error(e32, e64) + 1e-5
    else:
        e64, limit = e32.double(), 3e-2
    assert max_error(got, e64) <= limit
    assert all(g.compiled for g in braze.dynamo.graphs() if g.reason != "nothing to compile")


class Breaks(torch.nn.Module):
    """Three graph breaks (print, a data-dependent branch, explicit breaks) and an op torch-mlir
    cannot lower (erfinv): its graph is compiled around it, erfinv runs in eager."""

    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(16, 32)
        self.b = torch.nn.Linear(32, 32)
        self.c = torch.nn.Linear(32, 8)

    def forward(self, x):
        y = torch.relu(self.a(x))
        print("a graph break")
        if y.mean() > 0.1:  # data-dependent Python
            y = y * 2
        z = torch.tanh(self.b(y)) * float(np.sqrt(np.float64(y.shape[-1])))
        torch._dynamo.graph_break()
        w = torch.erfinv(z.clamp(-0.5, 0.5)) * 0.5 + torch.sigmoid(z)
        torch._dynamo.graph_break()
        return self.c(w).softmax(-1)


def test_graph_breaks_and_an_unsupported_op(capsys):
    torch.manual_seed(0)
    model = Breaks().eval()
    x = torch.randn(4, 16)
    with torch.no_grad():
        expected = model.double()(x.double())
        model.float()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            got = torch.compile(model, backend="braze")(x)
    assert (got.double() - expected).abs().max().item() < 1e-5
    made = braze.dynamo.graphs()
    assert sum(g.compiled for g in made) >= 4, made
    (split,) = [g for g in made if g.report is not None and getattr(g.report, "fallbacks", None)]
    assert [f["op"] for f in split.report.fallbacks] == ["aten.erfinv"]
    assert "test_dynamo.py" in split.report.fallbacks[0]["source"]
    assert len(split.report.pieces) >= 1 and "erfinv" in split.reason
    assert any("in eager" in str(w.message) and "erfinv" in str(w.message) for w in caught)
    assert "a graph break" in capsys.readouterr().out


def test_without_partial_the_graph_with_the_op_runs_in_eager():
    model = Breaks().eval()
    x = torch.randn(4, 16)
    with torch.no_grad():
        expected = model(x)
        with pytest.warns(braze.BrazeWarning, match="runs in eager: braze could not compile it.*erfinv"):
            got = torch.compile(model, backend="braze", options={"partial": False})(x)
    torch.testing.assert_close(got, expected)
    assert sum(not g.compiled and "erfinv" in g.reason for g in braze.dynamo.graphs()) == 1


class TwoUnsupported(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = torch.nn.Linear(8, 8), torch.nn.Linear(8, 4)

    def forward(self, x):
        y = torch.relu(self.a(x))
        z = torch.erfinv(y.clamp(0, 0.5))
        w = torch.special.bessel_j0(z)
        return self.b(torch.tanh(w) + y)


def test_braze_compile_partial_lists_the_fallbacks():
    torch.manual_seed(2)
    model, x = TwoUnsupported().eval(), torch.randn(3, 8)
    with pytest.raises(braze.UnsupportedOpError, match="cannot lower") as whole:
        braze.compile(model, x)
    assert whole.value.op in ("aten.erfinv", "aten.special_bessel_j0")
    with pytest.warns(braze.BrazeWarning, match="2 op\\(s\\) in eager"):
        partial = braze.compile(model, x, partial=True)
    assert sorted(f["op"] for f in partial.report.fallbacks) == ["aten.erfinv", "aten.special_bessel_j0"]
    assert len(partial.pieces) == 2
    x2 = torch.randn(3, 8)
    with torch.no_grad():
        want = model.double()(x2.double())
    assert (partial(x2).double() - want).abs().max().item() < 1e-5
    with pytest.raises(braze.BrazeError, match="cannot be saved"):
        partial.save("never.braze")


def test_autograd_runs_in_eager_with_one_warning():
    torch.manual_seed(1)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.Linear(16, 1))
    reference = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.Linear(16, 1))
    reference.load_state_dict(model.state_dict())
    x = torch.randn(5, 8)
    with pytest.warns(braze.BrazeWarning, match="needs autograd"):
        loss = torch.compile(model, backend="braze")(x).sum()
    loss.backward()
    reference(x).sum().backward()
    for p, q in zip(model.parameters(), reference.parameters()):
        torch.testing.assert_close(p.grad, q.grad)
    assert not braze.dynamo.graphs()[0].compiled


def test_options_reach_braze_and_unknown_ones_are_named():
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU()).eval()
    x = torch.randn(2, 8)
    with torch.no_grad():
        torch.compile(model, backend="braze", options={"fusion": False})(x)
    (graph,) = braze.dynamo.graphs()
    assert graph.compiled and graph.report.fusion is False
    torch._dynamo.reset()
    with pytest.raises(Exception, match="unknown option.*fusoin"):
        with torch.no_grad():
            torch.compile(model, backend="braze", options={"fusoin": False})(x)


def test_repeated_calls_reuse_the_compiled_graph():
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.SiLU()).eval()
    compiled = torch.compile(model, backend="braze")
    with torch.no_grad():
        for _ in range(3):
            x = torch.randn(2, 8)
            torch.testing.assert_close(compiled(x), model(x))
    (graph,) = braze.dynamo.graphs()
    assert graph.calls == 3


class DiagonalWrite(torch.nn.Module):
    """torch-mlir fails to lower diagonal_scatter with a diagnostic that names no aten op
    ("failed to legalize operation 'torch.constant.int'"): the piece is bisected."""

    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(5, 5)

    def forward(self, x, d):
        y = torch.relu(self.fc(x)) * 2
        z = torch.diagonal_scatter(y, d, 1)
        return torch.tanh(z).sum(0) + y.mean()


class Float64Remainder(torch.nn.Module):
    """IREE 3.13's CPU runtime has no float64 fmod ("undefined symbol: fmod"), which float64
    remainder lowers to: a CompileError from IREE, whose message names no node; the piece is
    bisected."""

    def forward(self, x):
        y = x * 2 + 1
        return torch.remainder(y, 1.5) * 3 + y


def _float64_reference(model, *args):
    import copy

    with torch.no_grad():
        return copy.deepcopy(model).double()(*[a.double() for a in args])


@pytest.mark.parametrize("case", ["lowering", "iree"])
def test_partial_falls_back_at_the_failing_op_found_by_bisection(case):
    torch.manual_seed(3)
    if case == "lowering":
        model, args, op, whole_error = DiagonalWrite().eval(), (torch.randn(5, 5), torch.randn(4)), \
            "aten.diagonal_scatter", braze.UnsupportedOpError
    else:
        model, args, op, whole_error = Float64Remainder().eval(), (torch.randn(6, dtype=torch.float64),), \
            "aten.remainder", braze.CompileError
    with pytest.raises(whole_error):
        braze.compile(model, *args, cache=False)
    with pytest.warns(braze.BrazeWarning, match="1 op\\(s\\) in eager"):
        partial = braze.compile(model, *args, partial=True, cache=False)
    assert [f["op"] for f in partial.report.fallbacks] == [op]
    assert "bisected" in partial.report.fallbacks[0]["why"] and "test_dynamo.py" in partial.report.fallbacks[0]["source"]
    assert len(partial.pieces) >= 1
    fresh = tuple(torch.randn_like(a) for a in args)
    got, want = partial(*fresh), _float64_reference(model, *fresh)
    assert (got.double() - want).abs().max().item() < 1e-5 * max(1.0, want.abs().max().item())


def test_under_torch_compile_an_iree_failure_falls_back_at_the_op():
    """Was: the whole graph in eager ("braze could not compile it (CompileError ...)")."""
    model, x = Float64Remainder().eval(), torch.randn(6, dtype=torch.float64)
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = torch.compile(model, backend="braze")(x)
    torch.testing.assert_close(got, model(x))
    (graph,) = [g for g in braze.dynamo.graphs() if g.report is not None and getattr(g.report, "fallbacks", None)]
    assert [f["op"] for f in graph.report.fallbacks] == ["aten.remainder"] and graph.compiled


class MaskRows(torch.nn.Module):
    def forward(self, x, mask):
        return torch.relu(x[:, mask] * 2).sum(1) + x.sum(1)


def test_a_data_dependent_size_is_refused_whole_and_runs_in_eager_in_pieces():
    """x[:, mask] has a size torch.export cannot know (u0): torch-mlir's lowering of it crashed
    the process; braze refuses it naming the op, and partial=True runs every op that makes or
    reads such a size in eager, so other masks (other sizes) work."""
    x, mask = torch.randn(3, 4), torch.tensor([True, False, True, True])
    with pytest.raises(braze.UnsupportedOpError, match="'aten.index' .* depends on the values of its input"):
        braze.compile(MaskRows().eval(), x, mask, cache=False)
    with pytest.warns(braze.BrazeWarning, match="in eager"):
        partial = braze.compile(MaskRows().eval(), x, mask, cache=False, partial=True)
    assert "aten.index" in {f["op"] for f in partial.report.fallbacks} and len(partial.pieces) == 1
    for m in (mask, torch.tensor([False, False, True, False]), torch.zeros(4, dtype=torch.bool)):
        x2 = torch.randn(3, 4)
        torch.testing.assert_close(partial(x2, m), MaskRows()(x2, m))
