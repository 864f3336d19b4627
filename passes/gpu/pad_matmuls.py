"""fusion-pad-matmuls: pad a matmul no tile divides, so that fusion-configure-kernels can tile it.

    %c = linalg.matmul ins(%a, %b : tensor<8x512xf32>, tensor<512x1000xf32>) outs(%init : tensor<8x1000xf32>)
  ->
    %ap = tensor.pad %a high[24, 0]   : tensor<32x512xf32>         (zeros)
    %bp = tensor.pad %b high[0, 24]   : tensor<512x1024xf32>
    %p  = linalg.matmul ins(%ap, %bp) outs(fill(0) : tensor<32x1024xf32>)
    %c  = init + tensor.extract_slice %p [0, 0] [8, 1000]

M and N are padded to multiples of 32 and K to a multiple of 16 (`cost_model.PAD`): the smallest
tiles the cost model offers. The padding adds zeros to every dot product and rows/columns that are sliced
off, so the kept results are the same sums. Padding a constant weight folds at compile time
(IREE evaluates constant expressions); padding an activation is a copy of the matrix.

Why: IREE's default kernel for a float32 matmul that no braze tile divides ran 30x slower than
a tiled one (ResNet-18's classifier, 8 x 1000 x 512: 344 us on the H200). Only matmuls that get
no configuration as they are (neither from the tuning cache nor from the cost model) are padded,
and only when the padded one gets one.
"""

from __future__ import annotations

from dataclasses import dataclass

from braze._mlir import ir
from braze.irutil import all_ops, short_location
from braze.passes.gpu.tuning import TuningCache

from ..registry import ModulePass, decide, register
from ..template import replace_with_template
from .cost_model import choose_matmul_config, padded, select_matmul_config
from .options import cuda_target, tuning_cache
from .matchers import matmul_shape


@register
@dataclass(frozen=True)
class PadMatmulsPass(ModulePass):
    name = "fusion-pad-matmuls"
    summary = "Pad static matmuls that no GPU tile divides so that fusion-configure-kernels can tile them"

    target: str = cuda_target("GPU target (e.g. sm_90) whose tiles decide; empty: the pass does nothing")
    tuning_cache: str = tuning_cache()

    def run(self, module: ir.Operation) -> None:
        if not self.target:
            return
        cache = TuningCache.open(self.tuning_cache)
        found = []
        for op in all_ops(module, "linalg.matmul", post_order=True):
            shape = matmul_shape(op)
            if shape is not None and select_matmul_config(shape, self.target, cache) is None:
                dims = padded(shape.m, shape.n, shape.k)
                # Padded, B comes from a tensor.pad: fusion-configure-kernels sees no transposed weight.
                if dims != (shape.m, shape.n, shape.k) and \
                        choose_matmul_config(1, *dims, shape.element, self.target) is not None:
                    found.append((op, dims))
        for op, dims in found:
            if decide(self.name, f"{matmul_shape(op).text()} padded to {'x'.join(map(str, dims))} "
                                 f"at {short_location(str(op.location))}"):
                _pad(op, *dims)


def _pad(op: ir.Operation, mp: int, np_: int, kp: int) -> None:
    a, b, init = op.operands
    (m, k), (_, n) = ir.RankedTensorType(a.type).shape, ir.RankedTensorType(b.type).shape
    ta, tb, to = (ir.RankedTensorType(v.type).element_type for v in (a, b, init))
    A, B, O = (str(v.type) for v in (a, b, init))  # noqa: N806

    def pad(name: str, rows: int, cols: int, high: tuple[int, int], element) -> str:
        return (f"  %{name}p = tensor.pad %{name} low[0, 0] high[{high[0]}, {high[1]}] {{\n"
                f"    ^bb0(%i: index, %j: index):\n"
                f"      %z = arith.constant 0.0 : {element}\n"
                f"      tensor.yield %z : {element}\n"
                f"  }} : tensor<{rows}x{cols}x{element}> to tensor<{rows + high[0]}x{cols + high[1]}x{element}>\n")

    text = (
        f"func.func @f(%a: {A}, %b: {B}, %init: {O}) -> {O} {{\n"
        + pad("a", m, k, (mp - m, kp - k), ta)
        + pad("b", k, n, (kp - k, np_ - n), tb)
        + f"  %zero = arith.constant 0.0 : {to}\n"
        f"  %e = tensor.empty() : tensor<{mp}x{np_}x{to}>\n"
        f"  %f = linalg.fill ins(%zero : {to}) outs(%e : tensor<{mp}x{np_}x{to}>) -> tensor<{mp}x{np_}x{to}>\n"
        f"  %p = linalg.matmul ins(%ap, %bp : tensor<{mp}x{kp}x{ta}>, tensor<{kp}x{np_}x{tb}>)\n"
        f"         outs(%f : tensor<{mp}x{np_}x{to}>) -> tensor<{mp}x{np_}x{to}>\n"
        f"  %s = tensor.extract_slice %p[0, 0] [{m}, {n}] [1, 1] : tensor<{mp}x{np_}x{to}> to {O}\n"
        f"  %oe = tensor.empty() : {O}\n"
        f"  %r = linalg.generic {{indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>,\n"
        f"      affine_map<(i, j) -> (i, j)>], iterator_types = [\"parallel\", \"parallel\"]}}\n"
        f"      ins(%s, %init : {O}, {O}) outs(%oe : {O}) {{\n"
        f"    ^bb0(%x: {to}, %y: {to}, %o: {to}):\n"
        f"      %sum = arith.addf %x, %y : {to}\n"
        f"      linalg.yield %sum : {to}\n"
        f"  }} -> {O}\n"
        f"  return %r : {O}\n}}"
    )
    replace_with_template(op, text, [a, b, init])
