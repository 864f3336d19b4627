"""fusion-split-k: split the K loop of a matmul with few output tiles into S partial products.

    %c = linalg.matmul ins(%a, %b : tensor<MxK>, tensor<KxN>) outs(%init : tensor<MxN>)
  ->
    %a3 = copy of %a as tensor<S x M x K/S>          (expand_shape [M, S, K/S], then a transpose)
    %b3 = tensor.expand_shape %b : tensor<S x K/S x N>  (a view)
    %p  = linalg.batch_matmul ins(%a3, %b3) outs(fill(0) : tensor<S x M x N>)
    %c  = linalg.generic {reduction over S} ins(%p) outs(%init)    (init + the S partial sums)

Why: a matmul whose output is small next to its K (the second Linear of an MLP on 256 rows,
256 x 1024 x 4096; ResNet-18's last stage as matmuls, 512 x 416 x 4608) has too few output
tiles to fill the H200's 132 SMs, each running one long K loop; the batch_matmul gives each
split its own workgroups and fusion-configure-kernels tiles it like any batch_matmul. Cost: a
copy of A and S x M x N partial sums written and read once.

When (the cost model, `split=0`): float32 matmuls of at least 2^28 multiply-adds whose 64 x 64
output tiles number fewer than the target's SMs, split by the smallest S in 2, 4, 8 that gives at least two tiles per SM, while
K/S stays a multiple of 16 and at least 256. `split=1` never splits, `split=N` splits every
static f32 matmul whose K N divides (for measuring). Each dot product becomes S partial sums
added at the end: the same products, summed in a different order.
"""

from __future__ import annotations

from dataclasses import dataclass

from braze._mlir import ir
from braze.irutil import all_ops, short_location
from braze.targets import cuda_sm_count

from ..registry import ModulePass, decide, option, register
from ..template import replace_with_template
from .options import cuda_target
from .matchers import matmul_shape

SPLITS = (2, 4, 8)
MIN_SPLIT_K = 256
MIN_WORK = 1 << 28
"""Multiply-adds below which a matmul is left whole: on small ones the extra copy and reduction
dispatches cost more than the idle SMs (a 32 x 1024 x 512 classifier runs in ~20 us either way)."""


def choose_split(m: int, n: int, k: int, sms: int) -> int:
    """S for an f32 matmul, or 1 (no split); see the module docstring."""
    tiles = -(-m // 64) * -(-n // 64)
    if tiles >= sms or m * n * k < MIN_WORK:
        return 1
    best = 1
    for s in SPLITS:
        if k % s or (k // s) % 16 or k // s < MIN_SPLIT_K:
            break
        best = s
        if tiles * s >= 2 * sms:
            break
    return best


@register
@dataclass(frozen=True)
class SplitKPass(ModulePass):
    name = "fusion-split-k"
    summary = "Split the K loop of f32 matmuls with few output tiles into a batch_matmul and a sum"

    target: str = cuda_target("GPU target (e.g. sm_90) whose SM count the cost model uses; empty: no splits")
    split: int = option(0, "0: the cost model; 1: never; N: split every f32 matmul whose K N divides", minimum=0)

    def run(self, module: ir.Operation) -> None:
        if not self.target or self.split == 1:
            return
        sms = cuda_sm_count(self.target)
        found = []
        for op in all_ops(module, "linalg.matmul", post_order=True):
            shape = matmul_shape(op)
            if shape is not None and shape.element == "f32":
                m, n, k = shape.m, shape.n, shape.k
                s = self.split if self.split > 1 and k % self.split == 0 else choose_split(m, n, k, sms)
                if s > 1:
                    found.append((op, s))
        for op, s in found:
            if decide(self.name, f"{matmul_shape(op).text()} split {s} ways at {short_location(str(op.location))}"):
                _split(op, s)


def _split(op: ir.Operation, s: int) -> None:
    a, b, init = op.operands
    (m, k), (_, n) = ir.RankedTensorType(a.type).shape, ir.RankedTensorType(b.type).shape
    ta, tb, to = (str(ir.RankedTensorType(v.type).element_type) for v in (a, b, init))
    A, B, O = (str(v.type) for v in (a, b, init))  # noqa: N806
    ks = k // s
    text = f"""
func.func @f(%a: {A}, %b: {B}, %init: {O}) -> {O} {{
  %a1 = tensor.expand_shape %a [[0], [1, 2]] output_shape [{m}, {s}, {ks}] : {A} into tensor<{m}x{s}x{ks}x{ta}>
  %ae = tensor.empty() : tensor<{s}x{m}x{ks}x{ta}>
  %a3 = linalg.transpose ins(%a1 : tensor<{m}x{s}x{ks}x{ta}>) outs(%ae : tensor<{s}x{m}x{ks}x{ta}>) permutation = [1, 0, 2]
  %b3 = tensor.expand_shape %b [[0, 1], [2]] output_shape [{s}, {ks}, {n}] : {B} into tensor<{s}x{ks}x{n}x{tb}>
  %zero = arith.constant 0.0 : {to}
  %pe = tensor.empty() : tensor<{s}x{m}x{n}x{to}>
  %p0 = linalg.fill ins(%zero : {to}) outs(%pe : tensor<{s}x{m}x{n}x{to}>) -> tensor<{s}x{m}x{n}x{to}>
  %p = linalg.batch_matmul ins(%a3, %b3 : tensor<{s}x{m}x{ks}x{ta}>, tensor<{s}x{ks}x{n}x{tb}>)
         outs(%p0 : tensor<{s}x{m}x{n}x{to}>) -> tensor<{s}x{m}x{n}x{to}>
  %r = linalg.generic {{indexing_maps = [affine_map<(i, j, p) -> (p, i, j)>, affine_map<(i, j, p) -> (i, j)>],
      iterator_types = ["parallel", "parallel", "reduction"]}}
      ins(%p : tensor<{s}x{m}x{n}x{to}>) outs(%init : {O}) {{
    ^bb0(%x: {to}, %acc: {to}):
      %sum = arith.addf %x, %acc : {to}
      linalg.yield %sum : {to}
  }} -> {O}
  return %r : {O}
}}"""
    replace_with_template(op, text, [a, b, init])
