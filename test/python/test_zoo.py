"""Every zoo model, compiled with and without fusion, equals eager PyTorch on fresh random inputs.

Tolerance per case (braze.testing.zoo.CASES): max |braze - eager| / max |eager| <= 1e-5 for float32
models (1e-4 for the transformer layer, whose softmax and layer norms accumulate rounding),
1e-2 for float16, 2e-2 for bfloat16 (about 3 ulps at their precision), exact for ints and bools.
"""

import pytest
import torch

import braze
from braze.accuracy import max_error
from braze.testing.zoo import CASES, fresh_like


@pytest.mark.slow
@pytest.mark.parametrize("fusion", [True, pytest.param(False, marks=pytest.mark.extended)], ids=["fused", "unfused"])
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_zoo_matches_eager(case, fusion):
    """Each zoo model fused against eager; unfused (fusion=False) with --run-extended only (CI's
    30 minutes, bench/NOTES.md §55: the conformance suite compiles 150 modules unfused in CI)."""
    model, args, kwargs = case.build()
    compiled = braze.compile(model, *args, example_kwargs=kwargs, fusion=fusion)
    args2, kwargs2 = fresh_like((args, kwargs))
    with torch.no_grad():
        expected = model(*args2, **kwargs2)
    got = compiled(*args2, **kwargs2)
    assert max_error(got, expected, floor=0.0) <= case.rtol
    report = compiled.report
    assert report.dispatch_count is not None and report.dispatch_count >= 1
    assert report.linalg_ops_after <= report.linalg_ops_before or not fusion


def test_transformer_encoder_layer_256():
    """The issue's acceptance case: TransformerEncoderLayer(256, 4) to 1e-4 relative."""
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(256, 4, batch_first=True).eval()
    x = torch.randn(2, 16, 256)
    compiled = braze.compile(layer, x)
    x2 = torch.randn(2, 16, 256)
    with torch.no_grad():
        expected = layer(x2)
    assert max_error(compiled(x2), expected, floor=0.0) <= 1e-4
    assert compiled.report.dispatch_count > 0
    assert "IREE dispatches" in str(compiled.report)


def test_pool_weights_distinct_normal_and_repeated():
    """pool_weights (the GPU decoder bench's weights): every matrix different, values of the
    asked spread, each one a window of the same pool (what lets gigabytes compress), vectors kept."""
    import lzma

    from braze.testing.zoo import pool_weights

    model = torch.nn.Sequential(torch.nn.Linear(64, 300), torch.nn.LayerNorm(300), torch.nn.Linear(300, 64))
    norm = model[1].weight.detach().clone()
    pool_weights(model, scale=0.5, pool=4096)
    w1, w2 = model[0].weight.detach().flatten(), model[2].weight.detach().flatten()
    assert torch.equal(model[1].weight, norm)
    assert not torch.equal(w1[:4096], w2[:4096])
    for w in (w1, w2):
        assert 0.45 < float(w.std()) < 0.55 and abs(float(w.mean())) < 0.05
        assert torch.equal(w[:w.numel() - 4096], w[4096:])  # the pool, cyclically
    raw = torch.cat([w1, w2]).numpy().tobytes()
    assert len(lzma.compress(raw)) < len(raw) / 4


def test_pool_weights_rows_never_repeat():
    """No two rows of a big matrix are equal (a tied output embedding with repeated rows makes
    every greedy token a tie of many logits): the default pool's length is a prime."""
    from braze.testing.zoo import pool_weights

    emb = torch.nn.Embedding(40000, 64)  # 2**20 values repeated every 16,384 rows of 64
    pool_weights(emb)
    rows = emb.weight.detach()
    assert torch.unique(rows, dim=0).shape[0] == rows.shape[0]
