"""IREE's aggressive dispatch fusion on CUDA (backend.AGGRESSIVE_FUSION): a LayerNorm and what
follows it is one dispatch, where IREE's default makes three (a sum, the variance, the
normalization); turned off by a later iree_flags entry. Cross-compiled here: the dispatch count
is known at compile time. (Its speed and numerics on the H200: bench/NOTES.md §22.)"""

from __future__ import annotations

import pytest
import torch

import braze
from braze.backend import AGGRESSIVE_FUSION


class LayerNormGelu(torch.nn.Module):
    def __init__(self, d: int):
        super().__init__()
        self.norm = torch.nn.LayerNorm(d)

    def forward(self, x, r):
        return torch.nn.functional.gelu(self.norm(x + r))


@pytest.mark.parametrize("flags, dispatches", [(None, 1), ([AGGRESSIVE_FUSION.replace("=true", "=false")], 3)])
def test_a_layernorm_and_its_consumers_are_one_cuda_dispatch(flags, dispatches):
    model = LayerNormGelu(256).eval()
    args = (torch.randn(4, 32, 256), torch.randn(4, 32, 256))
    m = braze.compile(model, *args, device="cuda", target="sm_90", iree_flags=flags, cache=False)
    assert m.report.dispatch_count == dispatches
    assert (m.report.launch_plan or "").startswith(f"{dispatches} kernels")


def test_the_cpu_keeps_iree_s_default_dispatches():
    model = LayerNormGelu(256).eval()
    args = (torch.randn(4, 32, 256), torch.randn(4, 32, 256))
    m = braze.compile(model, *args, cache=False)
    assert m.report.dispatch_count == 3
    with torch.no_grad():
        expected = model(*args)
    torch.testing.assert_close(m(*args), expected, rtol=1e-5, atol=1e-5)
