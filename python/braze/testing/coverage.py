"""Fixed coverage cases for the differential suite (issue 14): the classes of model the random
graphs and the zoo do not reach, each small, named and seeded.

    float64             float64 in and out: Linear, elementwise, matmul, sum and amax
    zero_output         one of two results has no elements
    zero_input          an input with no elements (reduced, concatenated, returned scaled)
    depthwise_<dtype>   Conv2d with groups = channels, 3x3, bias
    grouped2_<dtype>    Conv2d with groups = 2, 3x3, 8 -> 16 channels
    grouped4_<dtype>    Conv2d with groups = 4, 1x1, stride 2 (a grouped pointwise convolution)

with <dtype> float32, float16 and bfloat16. Needs only torch, like braze.testing.randomgraphs.

    for case in CASES:
        model, inputs = case.build()
        allowed = case.tolerance(max_error(eager, eager_float64))
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import torch
from torch import nn


@dataclass(frozen=True)
class Case:
    name: str
    build: Callable[[], tuple[nn.Module, tuple]]
    """Returns (model in eval mode, example inputs); the same for every call."""
    dtype: torch.dtype
    """The dtype the model computes in."""
    description: str
    known: dict = field(default_factory=dict)
    """device -> (stage, why), as in braze.testing.zoo.Case: failures of IREE itself, expected strictly."""

    def tolerance(self, reference_error: float) -> float:
        """Allowed max_error against float64 eager: ten times eager's own error in the model's
        dtype (float32's or the 16-bit type's rounding), at least 1e-5; in float64, at least
        1e-12, so a result computed in float32 anywhere fails."""
        if self.dtype == torch.float64:
            return max(10 * reference_error, 1e-12)
        return 10 * reference_error + 1e-5


class Float64Mix(nn.Module):
    """Elementwise, matmul and reductions in float64 (no transcendental functions: IREE's CPU
    runtime library has no float64 exp/tanh/sin, test_reliability covers that error)."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(16, 8)

    def forward(self, x, y):
        h = torch.relu(self.fc(x)) * 0.5 + x[:, :8] / (y.abs() + 1.0)
        return h @ y.t(), h.sum(-1), torch.sqrt(h.abs() + 1.0).amax(0)


class ZeroOutput(nn.Module):
    def forward(self, x, w):
        h = torch.tanh(x) * 2.0
        return h @ w[:, :0], h.sum(-1)


class ZeroInput(nn.Module):
    def forward(self, empty, y):
        return y * 2.0 + empty.sum(0), torch.cat([empty, y], 0).relu(), empty * 3.0


def _seeded(make, shapes, dtype):
    def build():
        torch.manual_seed(0)
        model = make().eval().to(dtype)
        gen = torch.Generator().manual_seed(1)
        return model, tuple(torch.randn(s, generator=gen).to(dtype) for s in shapes)

    return build


_CONVS = {
    "depthwise": (lambda: nn.Conv2d(8, 8, 3, padding=1, groups=8), (2, 8, 10, 10),
                  "Conv2d(8, 8, 3, groups=8): depthwise"),
    "grouped2": (lambda: nn.Conv2d(8, 16, 3, padding=1, groups=2), (2, 8, 10, 10),
                 "Conv2d(8, 16, 3, groups=2)"),
    "grouped4": (lambda: nn.Conv2d(8, 8, 1, stride=2, groups=4, bias=False), (2, 8, 10, 10),
                 "Conv2d(8, 8, 1, stride 2, groups=4): grouped pointwise"),
}
_DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}

CASES = [
    Case("float64", _seeded(Float64Mix, [(4, 16), (4, 8)], torch.float64), torch.float64,
         "float64 in and out: Linear, elementwise, matmul, sum, amax"),
    Case("zero_output", _seeded(ZeroOutput, [(4, 8), (8, 3)], torch.float32), torch.float32,
         "a (4, 0) result beside a (4,) one"),
    Case("zero_input", _seeded(ZeroInput, [(0, 8), (4, 8)], torch.float32), torch.float32,
         "a (0, 8) input: summed, concatenated, returned scaled"),
] + [
    Case(f"{kind}_{dname}", _seeded(make, [shape], dtype), dtype, f"{what} in {dname}")
    for kind, (make, shape, what) in _CONVS.items()
    for dname, dtype in _DTYPES.items()
]

BY_NAME = {c.name: c for c in CASES}
