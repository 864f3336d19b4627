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


def test_where_aggressive_fusion_fails_to_compile_iree_s_default_dispatches_are_used():
    """IREE 3.13's CUDA code generator fails on some aggressively fused dispatches (here a
    softmax of a (3, 16) tensor next to the GELU and Linear that read the same input: "'vector.
    transfer_write' op write affecting operations on global resources are restricted to
    workgroup distributed contexts"); braze compiles it with IREE's default dispatches, as the
    raw toolchain does, and says so in the report."""
    from braze.randomgraphs import random_graph

    model, args = random_graph(225)
    m = braze.compile(model, *args, device="cuda", target="sm_90", cache=False)
    assert m.report.dispatch_fusion.startswith("default (aggressive fusion failed to compile")
    assert "IREE dispatch fusion" in m.report.table()
    with pytest.raises(braze.CompileError):  # the user's own flag is not second-guessed
        braze.compile(model, *args, device="cuda", target="sm_90", cache=False, iree_flags=[AGGRESSIVE_FUSION])
