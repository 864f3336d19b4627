"""fusion-conv-to-matmul: a 2-D convolution as an explicit im2col copy and one matmul.

    %o = linalg.conv_2d_nchw_fchw {strides = [s, s], dilations = [d, d]}
           ins(%x, %w : tensor<NxCxHxW>, tensor<FxCxKHxKW>) outs(%init : tensor<NxFxOHxOW>)
  ->
    %col = linalg.generic                                  (im2col: C*KH*KW rows of N*OH*OW)
             {(c, kh, kw, n, oh, ow) -> (n, c, oh*s + kh*d, ow*s + kw*d),  -> identity}
             ins(%x) -> tensor<CxKHxKWxNxOHxOW>            braze.kernel_config = ...
    %p = linalg.matmul ins(collapse(%w) : FxK, collapse(%col) : KxM) -> tensor<FxM>
    %o = linalg.generic {(n, f, oh, ow) -> (f, n, oh, ow), identity}      (back to NCHW, + init)
           ins(expand(%p), %init) -> tensor<NxFxOHxOW>

with K = C*KH*KW and M = N*OH*OW. Each output element is still one K-long dot product of the
same products, summed in the order (c, kh, kw).

Why: IREE 3.13 compiles a float32 convolution on CUDA with no tensor cores and a direct
configuration that ran ResNet-18's 3x3 convolutions at 3-4 TFLOP/s on the H200 (24.4 ms of
kernels for batch 8, against 2.4 ms in eager). As a matmul, fusion-configure-kernels gives the
contraction the tiles measured for matmuls, and the im2col copy a tiled configuration of its
own (IREE's `--iree-global-opt-use-im2col-for-convs` makes the same split but leaves both
kernels on IREE's defaults: 14.0 ms). bench/NOTES.md §13 has the figures.

The im2col copy puts OW innermost so that it reads rows of the input and writes rows of the
column matrix; the matmul's B operand is then K x M, read along M. The weight's reshape is a
view and costs nothing. When the input is torch-mlir's zero `tensor.pad` of H and W (Conv2d's
padding), the copy reads the unpadded tensor with a bounds test instead (`read-padding`), and
the padded copy of the input, a dispatch of its own in IREE, goes away. Only static NCHW float
convolutions with one group are rewritten, and with `grouped` (the CPU pipeline) grouped ones
(`linalg.conv_2d_ngchw_gfchw`) too, as one im2col copy and one batch matmul over the groups
(64 channels in 4 groups at 56x56: 12.5 ms in IREE's CPU code, 1.33 as a batch matmul, eager
0.69; bench/NOTES.md §40); with a `target`, only those whose matmul gets tiles
(after fusion-pad-matmuls, which pads shapes no tile divides), and every 16-bit 1x1 convolution.

Why every 16-bit 1x1 convolution: IREE 3.13 turns one into a batched contraction that reads the
input as batch x K x M and the weight as M x K (`matmul_like_2x96x256x16_bf16xbf16xf32`), and
its CUDA code for that is wrong: relative error 1.2 against eager on the H200, for any 1x1
bf16 Conv2d tried (bench/repro/bf16_ops.py, bench/NOTES.md). As im2col + linalg.matmul it is an
ordinary matmul with the weight on the left, which IREE gets right.
"""

from __future__ import annotations

from dataclasses import dataclass

from braze._mlir import ir
from braze.irutil import all_ops, short_location

from ..registry import ModulePass, decide, option, register
from ..template import replace_with_template
from .configs import IM2COL_ATTR
from .cost_model import MATMUL_CANDIDATES, choose_matmul_config, padded
from .options import cuda_target
from .matchers import conv_ints as _ints
from .matchers import generated_conv, zero_padding as _zero_padding


@register
@dataclass(frozen=True)
class ConvToMatmulPass(ModulePass):
    name = "fusion-conv-to-matmul"
    summary = "Rewrite static NCHW 2-D convolutions as an im2col copy and one linalg.matmul"

    target: str = cuda_target("GPU target (e.g. sm_90): rewrite only convolutions whose matmul "
                              "fusion-configure-kernels can tile for it; empty: every one")
    read_padding: bool = option(True, "The im2col copy reads a zero-padded input's source itself "
                                      "(false: it reads the padded copy)")
    leave: str = option("", "Comma-separated element types (f32,bf16,f16) whose convolutions "
                            "fusion-generate-kernels takes as implicit GEMMs: left alone here")
    direct_pixels: int = option(0, "Leave unit-stride, undilated convolutions with at least this many "
                                   "output pixels an image (OH*OW) to IREE's direct convolution; 0: none",
                                minimum=0)
    grouped: bool = option(False, "Also grouped convolutions (linalg.conv_2d_ngchw_gfchw): one im2col copy and "
                                  "one batch matmul over the groups (the CPU pipeline; IREE's CPU code for them "
                                  "ran 18x slower than eager)")

    def run(self, module: ir.Operation) -> None:
        leave = tuple(t for t in self.leave.split(",") if t)
        found = [op for op in all_ops(module, "linalg.conv_2d_nchw_fchw", post_order=True)
                 if _convertible(op) and self._tiled(op) and not generated_conv(op, leave) and not self._direct(op)]
        for op in found:
            if decide(self.name, f"{op.name} {_shape_text(op)} as im2col + matmul at {short_location(str(op.location))}"):
                _rewrite(op, self.read_padding)
        if not self.grouped:
            return
        for op in all_ops(module, "linalg.conv_2d_ngchw_gfchw", post_order=True):
            if _convertible(op) and decide(self.name, f"{op.name} {_shape_text(op)} as im2col + batch matmul over "
                                                      f"the groups at {short_location(str(op.location))}"):
                _rewrite_grouped(op)

    def _direct(self, op: ir.Operation) -> bool:
        """Whether the convolution stays IREE's direct one (direct-pixels): on an AVX-512 CPU
        IREE's direct code beat im2col + matmul on unit-stride convolutions with large outputs
        and lost badly on strided ones (bench/NOTES.md §33); never a 1x1 kernel, whose im2col is
        its input as it is (64->256 at 56x56: 1.14 ms as a matmul, 3.6 direct, §39)."""
        if not self.direct_pixels or _ints(op, "strides") != [1, 1] or _ints(op, "dilations") != [1, 1]:
            return False
        if ir.RankedTensorType(op.operands[1].type).shape[2:] == [1, 1]:
            return False  # a 1x1 convolution is a matmul as it stands: 3.6 ms direct, 1.14 as one (§39)
        _, _, oh, ow = ir.RankedTensorType(op.operands[2].type).shape
        return oh * ow >= self.direct_pixels  # not a decision: leaving IREE's form is the baseline

    def _tiled(self, op: ir.Operation) -> bool:
        """Whether the matmul gets tiles from fusion-configure-kernels' cost model, padded by
        fusion-pad-matmuls where no tile divides it."""
        if not self.target:
            return True
        weight = ir.RankedTensorType(op.operands[1].type)
        f, c, kh, kw = weight.shape
        batch, _, oh, ow = ir.RankedTensorType(op.operands[2].type).shape
        element = str(weight.element_type)
        if element in ("bf16", "f16") and (kh, kw) == (1, 1):
            return True  # IREE's own form of it is miscompiled on CUDA (see the module docstring)
        if element not in MATMUL_CANDIDATES:
            return False
        dims = (f, batch * oh * ow, c * kh * kw)  # the matmul's M, N, K
        return any(choose_matmul_config(1, *d, element, self.target) is not None for d in (dims, padded(*dims)))


def _shape_text(op: ir.Operation) -> str:
    return " x ".join(str(v.type) for v in list(op.operands)[:2])


def _convertible(op: ir.Operation) -> bool:
    types = [v.type for v in op.operands]
    if not all(isinstance(t, ir.RankedTensorType) and ir.RankedTensorType(t).has_static_shape for t in types):
        return False
    elements = {str(ir.RankedTensorType(t).element_type) for t in types}
    return elements <= {"f32", "bf16", "f16"}


def _im2col_reading_unpadded(X: str, col6: str, tx: str, stride, dilation, low, size) -> str:  # noqa: N803
    """The im2col copy reading the unpadded input: positions in the padding read 0. Saves the
    padded copy of the input IREE otherwise makes (a separate dispatch, 30 us per 3x3 layer of
    ResNet-18's first stage on the H200)."""
    (sh, sw), (dh, dw), (top, left), (height, width) = stride, dilation, low, size
    par = ", ".join(['"parallel"'] * 6)
    return f"""
  %e = tensor.empty() : {col6}
  %col = linalg.generic {{indexing_maps = [affine_map<(c, kh, kw, n, oh, ow) -> (c, kh, kw, n, oh, ow)>],
      iterator_types = [{par}], {IM2COL_ATTR}}}
      outs(%e : {col6}) {{
    ^bb0(%out: {tx}):
      %c = linalg.index 0 : index
      %kh = linalg.index 1 : index
      %kw = linalg.index 2 : index
      %n = linalg.index 3 : index
      %oh = linalg.index 4 : index
      %ow = linalg.index 5 : index
      %hpos = affine.apply affine_map<(oh, kh) -> (oh * {sh} + kh * {dh} - {top})>(%oh, %kh)
      %wpos = affine.apply affine_map<(ow, kw) -> (ow * {sw} + kw * {dw} - {left})>(%ow, %kw)
      %zero = arith.constant 0 : index
      %hmax = arith.constant {height - 1} : index
      %wmax = arith.constant {width - 1} : index
      %h0 = arith.cmpi sge, %hpos, %zero : index
      %h1 = arith.cmpi sle, %hpos, %hmax : index
      %w0 = arith.cmpi sge, %wpos, %zero : index
      %w1 = arith.cmpi sle, %wpos, %wmax : index
      %hin = arith.andi %h0, %h1 : i1
      %win = arith.andi %w0, %w1 : i1
      %inside = arith.andi %hin, %win : i1
      %hclamp = arith.maxsi %hpos, %zero : index
      %hc2 = arith.minsi %hclamp, %hmax : index
      %wclamp = arith.maxsi %wpos, %zero : index
      %wc2 = arith.minsi %wclamp, %wmax : index
      %v = tensor.extract %x[%n, %c, %hc2, %wc2] : {X}
      %fill = arith.constant 0.0 : {tx}
      %r = arith.select %inside, %v, %fill : {tx}
      linalg.yield %r : {tx}
  }} -> {col6}
"""


def _rewrite(op: ir.Operation, read_padding: bool) -> None:
    x, w, init = op.operands
    xt, wt, ot = (ir.RankedTensorType(v.type) for v in (x, w, init))
    n, c, _, _ = xt.shape
    f, _, kh, kw = wt.shape
    _, _, oh, ow = ot.shape
    sh, sw = _ints(op, "strides")
    dh, dw = _ints(op, "dilations")
    k, m = c * kh * kw, n * oh * ow
    tx, tw, acc = (str(t.element_type) for t in (xt, wt, ot))
    X, W, O = str(xt), str(wt), str(ot)  # noqa: N806
    col6 = f"tensor<{c}x{kh}x{kw}x{n}x{oh}x{ow}x{tx}>"
    padding = _zero_padding(x) if read_padding else None
    if padding is None:
        im2col = _im2col_copy(X, col6, tx, (sh, sw), (dh, dw))
        source = x
    else:
        source, (top, left) = padding
        im2col = _im2col_reading_unpadded(str(source.type), col6, tx, (sh, sw), (dh, dw), (top, left),
                                          ir.RankedTensorType(source.type).shape[2:])
        X = str(source.type)  # noqa: N806
    text = _matmul_template(X, W, O, im2col, col6, (tx, tw, acc), (f, k, m, n, oh, ow))
    replace_with_template(op, text, [source, w, init])
    if padding is not None and not list(x.uses):
        x.owner.erase()  # the padded copy nothing reads any more


def _im2col_copy(X: str, col: str, tx: str, stride, dilation, grouped: bool = False) -> str:  # noqa: N803
    """The im2col copy of input X ([N, G,] C, H, W) into `col` ([G,] C, KH, KW, N, OH, OW)."""
    (sh, sw), (dh, dw) = stride, dilation
    lead = "g, " if grouped else ""
    par = ", ".join(['"parallel"'] * (7 if grouped else 6))
    return f"""
  %e = tensor.empty() : {col}
  %col = linalg.generic {{indexing_maps = [
      affine_map<({lead}c, kh, kw, n, oh, ow) -> (n, {lead}c, oh * {sh} + kh * {dh}, ow * {sw} + kw * {dw})>,
      affine_map<({lead}c, kh, kw, n, oh, ow) -> ({lead}c, kh, kw, n, oh, ow)>],
      iterator_types = [{par}], {IM2COL_ATTR}}}
      ins(%x : {X}) outs(%e : {col}) {{
    ^bb0(%in: {tx}, %out: {tx}):
      linalg.yield %in : {tx}
  }} -> {col}
"""


def _matmul_template(X: str, W: str, O: str, im2col: str, col: str, types, sizes,  # noqa: N803
                     groups: int | None = None) -> str:
    """The rewrite's function around its im2col copy `col` ([G,] C, KH, KW, N, OH, OW): the copy
    and the weight collapsed to [G,] K x M and [G,] F x K, one matmul (a batch matmul over G
    groups), its result expanded back to [G,] F, N, OH, OW and added to init in NCHW (NGCHW)
    order. One template for both rewrites: a grouped convolution is the same with a leading
    group dimension."""
    tx, tw, acc = types
    f, k, m, n, oh, ow = sizes
    g = [] if groups is None else [groups]
    s = len(g)  # the first dimension after the group

    def tensor(*dims, element: str) -> str:
        return "tensor<" + "x".join(str(d) for d in g + list(dims)) + f"x{element}>"

    def reassociation(*dims: list[int]) -> str:
        """A collapse/expand reassociation, the group dimension kept as its own."""
        return str([[0]] * s + [[d + s for d in group] for group in dims])

    lead = "g, " if g else ""
    matmul = "linalg.batch_matmul" if g else "linalg.matmul"
    B, A, P = tensor(k, m, element=tx), tensor(f, k, element=tw), tensor(f, m, element=acc)  # noqa: N806
    P4 = tensor(f, n, oh, ow, element=acc)  # noqa: N806
    par = ", ".join(['"parallel"'] * (4 + s))
    return f"""
func.func @f(%x: {X}, %w: {W}, %init: {O}) -> {O} {{
{im2col}  %b = tensor.collapse_shape %col {reassociation([0, 1, 2], [3, 4, 5])} : {col} into {B}
  %a = tensor.collapse_shape %w {reassociation([0], [1, 2, 3])} : {W} into {A}
  %zero = arith.constant 0.0 : {acc}
  %pe = tensor.empty() : {P}
  %p0 = linalg.fill ins(%zero : {acc}) outs(%pe : {P}) -> {P}
  %p = {matmul} ins(%a, %b : {A}, {B})
         outs(%p0 : {P}) -> {P}
  %p4 = tensor.expand_shape %p {reassociation([0], [1, 2, 3])} output_shape {g + [f, n, oh, ow]}
         : {P} into {P4}
  %oe = tensor.empty() : {O}
  %o = linalg.generic {{indexing_maps = [
      affine_map<(n, {lead}f, oh, ow) -> ({lead}f, n, oh, ow)>, affine_map<(n, {lead}f, oh, ow) -> (n, {lead}f, oh, ow)>,
      affine_map<(n, {lead}f, oh, ow) -> (n, {lead}f, oh, ow)>],
      iterator_types = [{par}]}}
      ins(%p4, %init : {P4}, {O}) outs(%oe : {O}) {{
    ^bb0(%in: {acc}, %i: {acc}, %out: {acc}):
      %s = arith.addf %in, %i : {acc}
      linalg.yield %s : {acc}
  }} -> {O}
  return %o : {O}
}}"""


def _rewrite_grouped(op: ir.Operation) -> None:
    """A grouped convolution [N, G, C, H, W] * [G, F, C, KH, KW] -> [N, G, F, OH, OW] as one
    im2col copy [G, C, KH, KW, N, OH, OW] and one batch matmul over the groups
    ([G, F, C*KH*KW] x [G, C*KH*KW, N*OH*OW]), each output element the same K-long dot product
    in the order (c, kh, kw) as the one-group rewrite. The input is read as it is (torch-mlir's
    padded copy included)."""
    x, w, init = op.operands
    xt, wt, ot = (ir.RankedTensorType(v.type) for v in (x, w, init))
    n, g, c, _, _ = xt.shape
    _, f, _, kh, kw = wt.shape
    _, _, _, oh, ow = ot.shape
    sh, sw = _ints(op, "strides")
    dh, dw = _ints(op, "dilations")
    k, m = c * kh * kw, n * oh * ow
    tx, tw, acc = (str(t.element_type) for t in (xt, wt, ot))
    X, W, O = str(xt), str(wt), str(ot)  # noqa: N806
    col7 = f"tensor<{g}x{c}x{kh}x{kw}x{n}x{oh}x{ow}x{tx}>"
    im2col = _im2col_copy(X, col7, tx, (sh, sw), (dh, dw), grouped=True)
    text = _matmul_template(X, W, O, im2col, col7, (tx, tw, acc), (f, k, m, n, oh, ow), groups=g)
    replace_with_template(op, text, [x, w, init])
