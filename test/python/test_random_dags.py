"""Seeded random DAGs of elementwise PyTorch ops: fused == unfused == eager, and fusion never costs ops.

Each DAG is its own model, compiled twice with `braze.compile` (fusion on, fusion off) for the
CPU. Results must match eager within TOLERANCE (float16 casts round, so the tolerance is that
of float16 on values of magnitude <= ~10), and fusion must not raise `linalg_ops_after` nor
`dispatch_count`. DAGS_PER_CASE DAGs share one pytest case to keep the suite short.
"""

import random

import pytest
import torch

import braze

pytestmark = pytest.mark.slow  # 200 DAGs, two compiles each: ~5 minutes on 2 cores

N_DAGS = 200
DAGS_PER_CASE = 5
TOLERANCE = dict(rtol=2e-3, atol=2e-3)
SHAPE = (3, 5)


UNARY = [
    lambda a: torch.exp(torch.clamp(a, -4, 4)),
    torch.tanh,
    torch.sigmoid,
    torch.relu,
    torch.neg,
    torch.abs,
    lambda a: torch.sqrt(torch.abs(a)),
    lambda a: a.to(torch.float16).to(torch.float32),
    lambda a: a * 0.5 + 1.0,
]
BINARY = [
    torch.add,
    torch.mul,
    torch.sub,
    lambda a, b: a / (torch.abs(b) + 1.0),
    torch.maximum,
    lambda a, b: torch.where(a > b, a, b * 2.0),
]


class Dag(torch.nn.Module):
    """A random DAG over inputs x [3,5], col [3,1], row [1,5], bias [5]."""

    def __init__(self, seed: int):
        super().__init__()
        rng = random.Random(seed)
        self.steps = []
        n_values = 4
        for _ in range(rng.randint(3, 9)):
            if rng.random() < 0.45:
                self.steps.append(("u", rng.randrange(len(UNARY)), rng.randrange(n_values)))
            else:
                self.steps.append(
                    ("b", rng.randrange(len(BINARY)), rng.randrange(n_values), rng.randrange(n_values))
                )
            n_values += 1
        n_out = rng.randint(1, 3)
        self.outputs = sorted({n_values - 1} | {rng.randrange(4, n_values) for _ in range(n_out - 1)})

    def forward(self, x, col, row, bias):
        values = [x, col, row, bias]
        for step in self.steps:
            if step[0] == "u":
                values.append(UNARY[step[1]](values[step[2]]))
            else:
                a, b = values[step[2]], values[step[3]]
                values.append(BINARY[step[1]](a, b))
        outs = [values[i] * 1.0 for i in self.outputs]
        return outs[0] if len(outs) == 1 else tuple(outs)


def _inputs(seed: int):
    g = torch.Generator().manual_seed(seed)
    return (
        torch.randn(*SHAPE, generator=g),
        torch.randn(SHAPE[0], 1, generator=g),
        torch.randn(1, SHAPE[1], generator=g),
        torch.randn(SHAPE[1], generator=g),
    )


def _as_tuple(x):
    return x if isinstance(x, tuple) else (x,)


@pytest.mark.parametrize("first", range(0, N_DAGS, DAGS_PER_CASE))
def test_random_dags(first):
    for seed in range(first, first + DAGS_PER_CASE):
        model = Dag(seed).eval()
        args = _inputs(seed)
        expected = _as_tuple(model(*args))
        fused = braze.compile(model, *args)
        plain = braze.compile(model, *args, fusion=False)
        for name, compiled in (("fused", fused), ("unfused", plain)):
            got = _as_tuple(compiled(*args))
            assert len(got) == len(expected), f"seed {seed} {name}"
            for g, e in zip(got, expected):
                torch.testing.assert_close(g, e, **TOLERANCE, msg=f"seed {seed} {name}: {model.steps}")
        assert fused.report.linalg_ops_after <= plain.report.linalg_ops_after, f"seed {seed}"
        assert fused.report.dispatch_count <= plain.report.dispatch_count, f"seed {seed}"
