"""braze's weight literals (frontend._literal_hooks) against torch-mlir's own path.

braze turns a frozen program's tensors into `torch.vtensor.literal`s from their bytes instead of
torch-mlir's `np.array(tensor.tolist())`; the imported module must be the same, text for text
(the resources' hex blobs included), for every dtype the importer takes.

Each tensor is used once: torch-mlir converts a bool tensor to a fresh uint8 tensor at every use,
and whether its own path then shares one constant between two uses depends on Python reusing
the freed temporary's id (braze's keeps each temporary alive, so two uses are two equal
constants): text-identical modules need one use.
"""

import pytest
import torch
import torch.nn as nn

import braze.compiler.frontend as frontend


class Weights(nn.Module):
    def __init__(self):
        super().__init__()
        self.f32 = nn.Linear(16, 8)
        self.bf16 = nn.Linear(16, 8).to(torch.bfloat16)
        self.register_buffer("special", torch.tensor([-0.0, float("nan"), float("inf"), -2.5, 1e-40]))
        self.register_buffer("i64", torch.randint(-9, 9, (2, 3)))
        self.register_buffer("i32", torch.randint(-9, 9, (3,), dtype=torch.int32))
        self.register_buffer("u8", torch.randint(0, 255, (5,), dtype=torch.uint8))
        self.register_buffer("f16", torch.randn(3, 4).half())
        self.register_buffer("f64", torch.randn(3, dtype=torch.float64))
        self.register_buffer("mask", torch.rand(3) > 0.5)
        self.register_buffer("strided", torch.randn(4, 6).t())  # a non-contiguous view
        self.register_buffer("one", torch.tensor([3.0]))  # a splat: torch-mlir's path

    def forward(self, x):
        y = self.f32(x) + self.bf16(x.bfloat16()).float()
        return (y, self.special * 2, self.i64 + 1, self.i32 * 2, self.u8 + 1, self.f16 * 2, self.f64 + 1,
                self.mask & (x[0, :3] > 0), self.strided * 3, x[:, :1] * self.one, self.f32.weight.sum() * x)


def _import(model, args, hooks):
    saved = frontend._literal_hooks
    resolved = []
    if hooks:
        def counting():
            h = saved()
            inner = h.resolve_literal
            h.resolve_literal = lambda *a: resolved.append(inner(*a)) or resolved[-1]
            return h
        frontend._literal_hooks = counting
    else:
        frontend._literal_hooks = lambda: None
    try:
        return str(frontend.import_model(model, args, {}).module), sum(r is not None for r in resolved)
    finally:
        frontend._literal_hooks = saved


@pytest.mark.parametrize("make", [lambda: (Weights(), (torch.randn(2, 16),)),
                                  lambda: (nn.TransformerEncoderLayer(32, 4, 64, batch_first=True).eval(),
                                           (torch.randn(2, 5, 32),))],
                         ids=["dtypes", "encoder"])
def test_literals_match_torch_mlir(make):
    torch.manual_seed(0)
    model, args = make()
    ours, resolved = _import(model, args, hooks=True)
    theirs, _ = _import(model, args, hooks=False)
    assert resolved > 0  # the hook made the literals, not torch-mlir's fallback
    assert ours == theirs


def test_literal_is_a_copy():
    """The attribute owns its bytes: changing the weight after import does not change the module."""
    torch.manual_seed(1)
    model = nn.Linear(8, 4)
    args = (torch.randn(2, 8),)
    imported = frontend.import_model(model, args, {})
    before = str(imported.module)
    with torch.no_grad():
        model.weight.add_(1.0)
    assert str(imported.module) == before


def test_a_mask_used_twice_is_one_constant():
    """A bool buffer read twice (torch-mlir converts it to a new uint8 tensor at each use) is one
    constant, as a causal mask read by every layer must be."""

    class Masked(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("mask", torch.rand(4, 4) > 0.5)

        def forward(self, x):
            return x.masked_fill(self.mask, 0.0) + x.masked_fill(~self.mask, 1.0)

    text, resolved = _import(Masked(), (torch.randn(4, 4),), hooks=True)
    assert resolved == 2 and text.count("dense_resource<") == 1, text
