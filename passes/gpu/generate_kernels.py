"""fusion-generate-kernels: give matmuls, with their casts and epilogue, a kernel of braze's.

    %a32 = extf(%a : MxK bf16)        %bt = linalg.transpose %w (NxK -> KxN)    %b32 = extf(%bt)
    %c   = linalg.matmul ins(%a32, %b32) outs(fill(0.0) : MxN f32)
    %d   = linalg.generic ins(%c, %bias : MxN, N) { addf }            (each op's only reader)
    %e   = linalg.generic ins(%d) { truncf to bf16 } ...
  ->
    %e = func.call @braze_kernel0(%a, %w, %bias)
    func.func private @braze_kernel0(...) attributes {braze.kernel = "<GemmSpec JSON>"} {
      <the same ops, so the module still means the same without the back end's kernels>
    }

The back end (braze.compiler.kernel_embed) builds the spec's Triton kernel and makes the function's body
one dispatch of it. Why: IREE 3.13's CUDA code generator has no wgmma, TMA or TF32, and bf16
GEMMs reach 14-25% of cuBLAS; a Triton kernel inside IREE's program ran at cuBLAS speed on the
H200 (../shared/DESIGN.md, "Generated kernels inside IREE's program"). IREE fuses nothing into
an external dispatch, so every epilogue op goes into the kernel here, or it stays a dispatch.

What is taken: a static linalg.matmul or linalg.batch_matmul with bf16 or f16 operands (seen
through torch-mlir's extf generic, B also through a linalg.transpose of its last two dimensions,
which makes it K-major), accumulating in f32 from a zero fill; and float32 ones whose B is
K-major (a Linear's weight), as three TF32 products (`fp32=tf32x3`, float32-accurate, what
torch's default `allow_tf32=False` asks for) or one (`fp32=tf32`, where torch allows TF32;
braze.compile reads torch.backends.cuda.matmul.allow_tf32). Its epilogue: the chain of
all-parallel generics each of which is the only reader of the previous result, with identity
maps on it, other operands read whole, by column, by row or as scalars, and bodies of the ops in
braze.kernels.gemm.EPILOGUE_OPS over constants (a widening extf stays with the matmul reading
it). Convolutions: a static NCHW conv_2d_nchw_fchw as an implicit GEMM, a depthwise one
(linalg.depthwise_conv_2d_nchw_chw, groups = channels) as a direct kernel of f32 FMAs, each with
its bias, BatchNorm and activation (grouped convolutions keep IREE's path). `report.decisions`
names each kernel and its tile; a matmul left alone gets a `braze.kernel_skipped` reason.

Row programs (`rows=on`, the default): each reduction of the last dimension left in the
function, grown to the elementwise work around it over the same rows (a LayerNorm with
torch-mlir's f64 variance, an RMSNorm, a softmax; braze.passes.gpu.match_rows), becomes one
call of a generated row kernel (braze.kernels.rows, a RowSpec) that keeps whole rows in
registers; a reduction left to IREE gets the reason.

Tiles: the cost model's (braze.kernels.gemm.choose_tile, attention.choose_tile), unless the
tuning cache (`tuning-cache=`, written by `braze tune import`) holds a measured tile under the
kernel's tuning signature, or `tiles=` forces one (what `braze tune build --kernels` compiles);
the report says which (`tile_from`).
"""

from __future__ import annotations

import functools

from dataclasses import dataclass

from braze._mlir import ir
from braze.irutil import all_ops, captured_values, op_id, remap_operands, short_location
from braze.kernels import build as kbuild
from braze.kernels.gemm import DYNAMIC_M, EPILOGUE_OPS
from braze.kernels.spec import ATTR, AttentionSpec, GemmSpec, Input, parse_tile, read_spec
from braze.targets import cuda_sm_count
from braze.passes.gpu.tuning import TuningCache

from ..registry import ModulePass, decide, one_of, option, register
from .options import cuda_target, forced_tiles, kernel_tiles, tuning_cache
from .match_rows import match_rows
from .match_rows import _reduction as row_reduction
from .matchers import MATMULS, NHWC_CONV, conv_init_bias, conv_ints, generated_conv, is_extf, zero_padding
from .matchers import element_type as _element
from .matchers import float_literal as _float_literal
from .matchers import int_literal as _int_literal
from .matchers import map_results as _map_results
from .matchers import owner as _owner

TF32_MIN_CHANNELS = 32
"""A float32 convolution with fewer input channels a group runs float32-accurate (tf32x3) even
where TF32 is allowed (conv-fp32=tf32): cuDNN runs such convolutions in float32 (on the H200, with
TF32 allowed, 2-4 input channels a group and 3-channel 7x7 stems came back with float32's error,
1.4e-7 against float64, where a TF32 product makes 8e-4; bench/NOTES.md §42), and so the
conformance suite's small Conv modules expect float32's accuracy. Their K is short: three TF32
products cost little there."""

TF32X3_MAX_INTENSITY = 12.0
"""A float32 convolution doing fewer flops per byte of its input, weight and output (float32) than
this runs float32-accurate (tf32x3) even where TF32 is allowed: cuDNN, with TF32 allowed, picks
float32 kernels for such memory-bound convolutions (the 1x1 stride-2 64 -> 128 at 8 and 64 x 56x56,
10.6 flop/B: 1.1e-6 against float64 where TF32 makes 8.9e-4; its 16 flop/B 1x1 64 -> 64 and every
denser shape measured ran TF32), and there three TF32 products cost 0.75-1.11x one (H100,
bench/results/conv-tf32x3-cost-h100-2026-12-05.txt; bench/NOTES.md §44)."""


def conv_intensity(n: int, c: int, h: int, w: int, f: int, kh: int, kw: int, oh: int, ow: int,
                   groups: int = 1) -> float:
    """Flops over the bytes of a float32 convolution's input, weight and output."""
    cg = c // groups
    flops = 2 * n * oh * ow * f * cg * kh * kw
    return flops / (4 * (n * c * h * w + f * cg * kh * kw + n * f * oh * ow))


SKIPPED_ATTR = "braze.kernel_skipped"
TILE_FROM_ATTR = "braze.kernel_tile_from"
EPILOGUE_END_ATTR = "braze.kernel_epilogue_end"
GENERATED = ("bf16", "f16")
ATTENTION = "tm_tensor.attention"
DEPTHWISE = "linalg.depthwise_conv_2d_nchw_chw"
GROUPED = "linalg.conv_2d_ngchw_gfchw"
CONTRACTIONS = MATMULS + ("linalg.conv_2d_nchw_fchw", NHWC_CONV, DEPTHWISE, GROUPED, ATTENTION)


@register
@dataclass(frozen=True)
class GenerateKernelsPass(ModulePass):
    name = "fusion-generate-kernels"
    summary = ("Outline matmuls with their casts and epilogue chain into functions the back end "
               "compiles to generated (Triton) kernels")

    target: str = cuda_target("CUDA target (sm_90); empty: nothing is outlined")
    fp32: str = option("tf32x3", "float32 matmuls: tf32x3 (float32-accurate, torch's default), tf32 (when "
                                 "torch allows TF32), off (IREE's matmul)", check=one_of("tf32x3", "tf32", "off"))
    conv_fp32: str = option("tf32", "2-D convolutions as implicit GEMMs: tf32 (float32 ones in TF32, as cuDNN "
                                     "by default), tf32x3, off (16-bit ones only), im2col (none: "
                                     "fusion-conv-to-matmul's form)",
                            check=one_of("tf32", "tf32x3", "off", "im2col"))
    mode: str = option("auto", "on: outline for the target; off: never; auto: on where braze can build "
                               "the kernels here (Triton installed)", check=one_of("auto", "on", "off"))
    tuning_cache: str = tuning_cache()
    tiles: str = kernel_tiles()
    rows: str = option("on", "Row programs (a reduction of the last dimension with the elementwise work around "
                             "it: LayerNorm, RMSNorm, softmax) as generated row kernels: on, off",
                       check=one_of("on", "off"))

    def run(self, module: ir.Operation) -> None:
        if not self.target or self.mode == "off":
            return
        if kbuild.available(self.target) is not None and (self.mode == "auto" or self.target not in kbuild.ARCHS):
            return
        sms = cuda_sm_count(self.target)
        cache = TuningCache.open(self.tuning_cache)
        forced = forced_tiles(self.tiles)
        count = 0
        for f in list(all_ops(module, "func.func")):
            if ATTR in f.attributes:
                continue
            for mm in all_ops(f, CONTRACTIONS):
                if mm.name in MATMULS:
                    found = _match(mm, self.fp32)
                elif mm.name == ATTENTION:
                    found = _match_attention(mm, self.fp32)
                elif self.conv_fp32 == "im2col":
                    continue
                else:
                    found = _match_conv(mm, self.conv_fp32)
                if isinstance(found, str):
                    mm.attributes[SKIPPED_ATTR] = ir.StringAttr.get(found)
                    continue
                spec, plan = found
                try:
                    spec.check()
                except ValueError as e:  # a computation the templates cannot take (a grid too large)
                    mm.attributes[SKIPPED_ATTR] = ir.StringAttr.get(str(e))
                    continue
                closure = _closure(plan)
                if isinstance(closure, str):
                    mm.attributes[SKIPPED_ATTR] = ir.StringAttr.get(closure)
                    continue
                spec, tile_from = self._tiled(spec, sms, cache, forced)
                label = f"braze_kernel{count}"
                if not decide(self.name, f"@{label}: {spec.describe()} at {short_location(str(mm.location))}"):
                    continue
                outlined = _outline(module, f, plan, spec, label)
                outlined.attributes[TILE_FROM_ATTR] = ir.StringAttr.get(tile_from)
                count += 1
            if self.rows == "on":
                count = self._row_kernels(module, f, count, sms, cache, forced)

    def _row_kernels(self, module, f, count: int, sms: int, cache, forced: dict) -> int:
        """Outline each row program of `f` (braze.passes.gpu.match_rows), seeded by its reductions
        in block order; a reduction left to IREE gets the reason."""
        while True:
            order = {op_id(o.operation): i for i, o in enumerate(f.regions[0].blocks[0].operations)}
            seed = next((g for g in all_ops(f, "linalg.generic") if SKIPPED_ATTR not in g.attributes
                         and not isinstance(row_reduction(g), str)), None)
            if seed is None:
                return count
            found = match_rows(seed, order)
            if isinstance(found, str):
                seed.attributes[SKIPPED_ATTR] = ir.StringAttr.get(found)
                continue
            spec, args, ops, result, last = found
            spec, tile_from = self._tiled(spec, sms, cache, forced)
            label = f"braze_kernel{count}"
            if not decide(self.name, f"@{label}: {spec.describe()} at {short_location(str(seed.location))}"):
                seed.attributes[SKIPPED_ATTR] = ir.StringAttr.get("left to IREE by the decision limit")
                continue
            plan = _Plan(args, ops, result, last)
            closure = _closure(plan)
            if isinstance(closure, str):
                seed.attributes[SKIPPED_ATTR] = ir.StringAttr.get(closure)
                continue
            outlined = _outline(module, f, plan, spec, label)
            outlined.attributes[TILE_FROM_ATTR] = ir.StringAttr.get(tile_from)
            count += 1

    def _tiled(self, spec, sms: int, cache: TuningCache | None, forced: dict) -> tuple:
        """The spec with its tile: forced (tiles=), else measured (the tuning cache: an entry that
        does not fit the template is ignored, as a damaged cache never stops a compile), else the
        cost model's; and which of the three it was."""
        signature = spec.tuning_signature()
        if signature in forced:
            tiled = type(spec)(**{**spec.__dict__, "tile": forced[signature]})
            try:
                tiled.check()
            except ValueError as e:
                self.option_error("tiles", f"gives {signature} ({spec.describe()}) a tile that does not fit: {e}")
            return tiled, "forced"
        stored = cache.lookup(signature, self.target) if cache is not None else None
        if stored is not None:
            try:
                tiled = type(spec)(**{**spec.__dict__, "tile": parse_tile(stored)})
                tiled.check()
                return tiled, f"measured ({cache.path})"
            except ValueError:
                pass
        tile = kbuild.template(spec).choose_tile(spec, sms)
        return type(spec)(**{**spec.__dict__, "tile": tile}), "cost model"


@dataclass
class _Plan:
    args: list            # the outlined function's operands: A, B, epilogue inputs
    ops: list             # the ops the kernel replaces, in block order (matmul first among its chain)
    result: ir.Value      # the value the call replaces
    last: ir.Operation    # the op the call goes before
    epilogue_end: str = ""  # why the epilogue stops where it does (for the report)


def _peel(v: ir.Value, batched: bool) -> tuple[ir.Value, list, bool]:
    """(source, ops peeled, transposed): v seen through an extf generic and a transpose of the
    last two dimensions, in either order."""
    peeled, transposed = [], False
    for _ in range(2):
        o = _owner(v)
        if o is None:
            break
        if o.name == "linalg.generic" and is_extf(o) and not any(p.name == "linalg.generic" for p in peeled):
            peeled.append(o)
            v = o.operands[0]
        elif o.name == "linalg.transpose" and not transposed:
            perm = list(ir.DenseI64ArrayAttr(o.attributes["permutation"]))
            want = [0, 2, 1] if batched else [1, 0]
            if perm != want:
                break
            peeled.append(o)
            transposed = True
            v = o.operands[0]
        else:
            break
    return v, peeled, transposed


def _zero_fill(v: ir.Value) -> ir.Operation | None:
    o = _owner(v)
    if o is None or o.name != "linalg.fill":
        return None
    c = _owner(o.operands[0])
    if c is None or c.name != "arith.constant":
        return None
    try:
        return o if ir.FloatAttr(c.attributes["value"]).value == 0.0 else None
    except (ValueError, TypeError):
        return None


def _match(mm: ir.Operation, fp32: str) -> tuple[GemmSpec, _Plan] | str:
    """The spec and rewrite plan for a matmul, or why it keeps IREE's path."""
    batched = mm.name == "linalg.batch_matmul"
    lhs, rhs, init = list(mm.operands)[:3]
    types = [ir.RankedTensorType(v.type) for v in (lhs, rhs, init)]
    dynamic_m = not all(t.has_static_shape for t in types)
    if dynamic_m and (batched or not types[1].has_static_shape or types[0].is_dynamic_dim(1)
                      or not types[0].is_dynamic_dim(0) or types[2].is_dynamic_dim(1)):
        return "dynamic shape other than the rows (M) of a matmul"
    if _element(init) != "f32":
        return f"accumulates in {_element(init)}"
    if "indexing_maps" in mm.attributes and str(mm.attributes["indexing_maps"]).count("affine_map") == 3:
        default = ("(d0, d1, d2) -> (d0, d2)", "(d0, d1, d2) -> (d2, d1)", "(d0, d1, d2) -> (d0, d1)")
        maps = str(mm.attributes["indexing_maps"])
        if not batched and not all(m in maps for m in default):
            return "a matmul with its own indexing maps"
    fill = _zero_fill(init)
    if fill is None:
        return "accumulates onto a tensor, not from zero"
    a, a_ops, a_t = _peel(lhs, batched)
    b, b_ops, b_t = _peel(rhs, batched)
    if a_t:
        return "A is transposed"
    ta, tb = _element(a), _element(b)
    precision = ""
    if ta == tb == "f32" and fp32 != "off":
        if not b_t:
            return "float32 B stored [K, N]: TF32 kernels read it 5x slower than K-major (IREE's matmul)"
        precision = fp32
    elif ta not in GENERATED or tb != ta:
        return f"operands {ta} x {tb}: generated kernels take bf16, f16 or float32 (fp32={fp32})"
    shape = types[0].shape
    batch, m, k = (shape[0], shape[1], shape[2]) if batched else (0, DYNAMIC_M if dynamic_m else shape[0], shape[1])
    n = types[1].shape[-1]
    if k < 16:
        return f"K = {k} is below the 16 a tensor-core MMA needs"
    inputs: list[Input] = []
    args = [a, b]
    ops_text: list = []
    chain = [fill, mm]
    widened: list = []
    cur = mm.results[0]
    names = {cur: "acc"}
    while True:
        steps = _absorb(cur, names, args, inputs, ops_text, batched, widened, n=n)
        if isinstance(steps, str):
            ended = steps
            break
        chain.extend(steps)
        cur = steps[-1].results[0]
    spec = GemmSpec(m=m, n=n, k=k, a=ta, b=tb, b_layout="nk" if b_t else "kn", out=_element(cur),
                    inputs=tuple(inputs), ops=tuple(ops_text), result=names[cur], batch=batch,
                    precision=precision, dynamic_m=dynamic_m)
    ops = a_ops + b_ops + widened + chain
    return spec, _Plan(args, ops, cur, chain[-1], ended)


def _access(map_text: str, rank: int) -> str | None:
    """How a generic operand's indexing map reads it over the [.., M, N] iteration space."""
    dims = _map_results(map_text)
    lead = [f"d{i}" for i in range(rank - 2)]
    m, n = f"d{rank - 2}", f"d{rank - 1}"
    if dims == lead + [m, n]:
        return "full"
    if dims == lead + [n] or dims == [n] and not lead:
        return "row"
    if dims == lead + [m] or dims == [m] and not lead:
        return "col"
    if not dims:
        return "scalar"
    return None


CHANNEL_READS = {False: (["d1"], ["d1", "0", "0"]), True: (["d3"], ["d3", "0", "0"], ["0", "0", "0", "d3"])}
"""The maps through which a generic reads a per-output-channel vector ([F] or [F, 1, 1]) over a
convolution's NCHW result (channel loop d1) or an NHWC one (fusion-channels-last's: d3)."""


def _conv_access(map_text: str, rank: int, nhwc: bool = False) -> str | None:
    """How a generic reads an operand over a convolution's [N, F, OH, OW] result, or an NHWC
    [N, OH, OW, F] one (a GEMM's [M, N]): whole, per output channel, or as a scalar."""
    dims = _map_results(map_text)
    if rank != 4:
        return None
    if dims == ["d0", "d1", "d2", "d3"]:
        return "full"
    if dims in CHANNEL_READS[nhwc]:
        return "row"
    if not dims:
        return "scalar"
    return None


NCHW_INPUT_CHANNELS = 16
"""An NHWC convolution of fewer input channels (a network's 3-channel stem) reads its input as
NCHW where that is a transpose of an NCHW tensor (the model's input): its template gathers such
an input element by element in either layout, so the transpose's copy goes away."""


def _match_conv(op: ir.Operation, fp32: str) -> tuple[GemmSpec, _Plan] | str:
    """The implicit-GEMM spec and rewrite plan for a convolution, or why it keeps braze's
    im2col + matmul (or IREE's) path."""
    elements = ("f32", "bf16", "f16") if fp32 != "off" else ("bf16", "f16")
    depthwise, grouped, nhwc = op.name == DEPTHWISE, op.name == GROUPED, op.name == NHWC_CONV
    if nhwc and not generated_conv(op, elements, NHWC_CONV):
        return "not a static NHWC convolution of one group accumulating in f32 from zero or a bias"
    if depthwise and not generated_conv(op, elements, DEPTHWISE):
        return "not a static NCHW depthwise convolution accumulating in f32 from zero or a bias"
    if grouped:
        views = _grouped_views(op, elements)
        if isinstance(views, str):
            return views
        x, w, init, peeled, groups = views
    elif not depthwise and not nhwc and not generated_conv(op, elements):
        return "not a static NCHW convolution of one group accumulating in f32 from zero or a bias"
    else:
        (x, w, init), peeled, groups = op.operands, [], 1
    source, (pt, pl) = x, (0, 0)
    padding = zero_padding(x, nhwc)
    if padding is not None:
        source, (pt, pl) = padding
        peeled.append(_owner(x))
    nchw_input = False
    if nhwc:
        n, h, wd, c = ir.RankedTensorType(source.type).shape
        t = _owner(source)
        if c < NCHW_INPUT_CHANNELS and t is not None and t.name == "linalg.transpose" and \
                list(ir.DenseI64ArrayAttr(t.attributes["permutation"])) == [0, 2, 3, 1]:
            source, nchw_input = t.operands[0], True  # gathered element by element anyway: read NCHW
            peeled.append(t)
        f, kh, kw, _ = ir.RankedTensorType(w.type).shape
        oh, ow = ir.RankedTensorType(init.type).shape[1:3]
    else:
        n, c, h, wd = ir.RankedTensorType(source.type).shape
        if depthwise:  # the weight [C, KH, KW]: one filter per channel
            f, kh, kw = ir.RankedTensorType(w.type).shape
        else:
            f, _, kh, kw = ir.RankedTensorType(w.type).shape
        oh, ow = ir.RankedTensorType(init.type).shape[-2:]
    sh, sw = conv_ints(op, "strides")
    dh, dw = conv_ints(op, "dilations")
    ta = _element(source)
    kind, bias, init_op = conv_init_bias(init, nhwc)
    args, inputs, ops_text = [source, w], [], []
    names = {op.results[0]: "acc"}
    if kind == "bias":
        args.append(bias)
        inputs.append(Input(_element(bias), "row"))
        ops_text.append(("%b", "addf", ["acc", "in0"], "f32", None))
        names[op.results[0]] = "%b"
    chain = [init_op, op]
    widened: list = []
    cur = op.results[0]
    if grouped:  # the [N, G, F/G, OH, OW] result seen as [N, F, OH, OW], as torch-mlir reads it
        collapse = _single_user(cur)
        chain.append(collapse)
        cur = collapse.results[0]
        names[cur] = names[op.results[0]]
    while True:
        steps = _absorb(cur, names, args, inputs, ops_text, False, widened,
                       functools.partial(_conv_access, nhwc=nhwc))
        if isinstance(steps, str):
            ended = steps
            break
        chain.extend(steps)
        cur = steps[-1].results[0]
    precision = fp32 if ta == "f32" and not depthwise else ""
    if precision == "tf32" and (c // groups < TF32_MIN_CHANNELS or
                                conv_intensity(n, c, h, wd, f, kh, kw, oh, ow, groups) < TF32X3_MAX_INTENSITY):
        precision = "tf32x3"
    spec = GemmSpec(m=n * oh * ow, n=f // groups, k=kh * kw if depthwise else c // groups * kh * kw, a=ta, b=ta,
                    b_layout="nk", out=_element(cur), inputs=tuple(inputs), ops=tuple(ops_text), result=names[cur],
                    precision=precision, depthwise=depthwise, groups=groups, nhwc=nhwc, nchw_input=nchw_input,
                    conv=(n, c, h, wd, kh, kw, sh, sw, dh, dw, pt, pl, oh, ow))
    return spec, _Plan(args, peeled + widened + chain, cur, chain[-1], ended)


def _grouped_views(op: ir.Operation, elements: tuple[str, ...]):
    """A grouped convolution as torch-mlir writes it (the input [N, C, H, W] and the weight
    [F, C/G, KH, KW] expanded to [N, G, C/G, H, W] and [G, F/G, C/G, KH, KW], the result collapsed
    back to [N, F, OH, OW], accumulating from a zero fill or from its bias's [N, F, OH, OW]
    broadcast expanded the same way): (input, weight, the [N, F, OH, OW] init, the expands,
    groups), or why it keeps IREE's path."""
    x5, w5, init = op.operands
    want = ("[[0], [1, 2], [3], [4]]", "[[0, 1], [2], [3], [4]]")
    biased = _owner(init)  # a bias: its [N, F, OH, OW] broadcast, expanded as the result is
    if biased is not None and biased.name == "tensor.expand_shape" and str(biased.attributes["reassociation"]) == want[0] \
            and (conv_init_bias(biased.operands[0]) or ("",))[0] == "bias" and _single_user(init) is not None:
        init = biased.operands[0]
    else:
        biased = None
    if not generated_conv(op, elements, GROUPED) and biased is None:
        return "not a static grouped NCHW convolution accumulating in f32 from zero or a bias"
    types = [ir.RankedTensorType(v.type) for v in (x5, w5, op.operands[2])]
    if not all(t.has_static_shape for t in types) or len({str(t.element_type) for t in types[:2]}) != 1 \
            or str(types[0].element_type) not in elements or str(types[2].element_type) != "f32":
        return "not a static grouped NCHW convolution accumulating in f32"
    views = [_owner(x5), _owner(w5)]
    if any(v is None or v.name != "tensor.expand_shape" or _single_user(v.results[0]) is None for v in views):
        return "a grouped convolution not over expanded [N, C, H, W] and [F, C/G, KH, KW] tensors"
    if any(str(v.attributes["reassociation"]) != r for v, r in zip(views, want)):
        return "a grouped convolution whose operands are not expanded along their channels"
    if biased is not None:
        views.append(biased)
    collapse = _single_user(op.results[0])
    if collapse is None or collapse.name != "tensor.collapse_shape" or \
            str(collapse.attributes["reassociation"]) != want[0]:
        return "a grouped convolution whose result is not collapsed back to [N, F, OH, OW]"
    groups = ir.RankedTensorType(x5.type).shape[1]
    return views[0].operands[0], views[1].operands[0], init, views, groups


def _contiguous_strides(shape: list[int]) -> list[int]:
    strides, step = [], 1
    for d in reversed(shape):
        strides.append(step)
        step *= d
    return strides[::-1]


def _is_causal_mask(g: ir.Operation) -> bool:
    """A generic with no inputs yielding select(index 2 >= index 3, 0.0, -inf): torch-mlir's
    is_causal mask over [B, H, L, S]."""
    if g.name != "linalg.generic" or len(g.operands) != 1 or len(g.results) != 1:
        return False
    body = [o.operation for o in g.regions[0].blocks[0].operations]
    if [o.name for o in body] != ["linalg.index", "linalg.index", "arith.cmpi", "arith.select", "linalg.yield"]:
        return False
    dim = {o.results[0]: ir.IntegerAttr(o.attributes["dim"]).value for o in body[:2]}
    cmp, sel = body[2], body[3]
    pred = ir.IntegerAttr(cmp.attributes["predicate"]).value  # sge 5, sle 3
    lhs, rhs = (dim.get(v) for v in cmp.operands)
    ordered = (pred == 5 and (lhs, rhs) == (2, 3)) or (pred == 3 and (lhs, rhs) == (3, 2))
    return (ordered and sel.operands[0] == cmp.results[0] and _float_literal(sel.operands[1]) == 0.0
            and _float_literal(sel.operands[2]) == float("-inf") and body[4].operands[0] == sel.results[0])


def _broadcast_source(g: ir.Operation) -> tuple[ir.Value, list[int]] | None:
    """(source, per-dimension element strides of the result read from it, 0 where broadcast)
    for a generic that only copies its one input into a larger shape."""
    if g.name != "linalg.generic" or len(g.operands) != 2 or len(g.results) != 1:
        return None
    body = [o.operation for o in g.regions[0].blocks[0].operations]
    block = g.regions[0].blocks[0]
    if len(body) != 1 or body[0].operands[0] != block.arguments[0]:
        return None
    source = g.operands[0]
    maps = [str(m) for m in ir.ArrayAttr(g.attributes["indexing_maps"])]
    rank = ir.RankedTensorType(g.results[0].type).rank
    if _map_results(maps[1]) != [f"d{i}" for i in range(rank)]:
        return None
    src_type = ir.RankedTensorType(source.type)
    if not src_type.has_static_shape:
        return None
    src_strides = _contiguous_strides(list(src_type.shape))
    reads = _map_results(maps[0])
    strides = []
    for i in range(rank):
        where = [p for p, d in enumerate(reads) if d == f"d{i}"]
        strides.append(src_strides[where[0]] if where else 0)
    if any(d != "0" and not d.startswith("d") for d in reads):
        return None
    return source, strides


def _first_size(v: ir.Value, init: ir.Value | None = None) -> ir.Value | None:
    """The value that sized v's dynamic first dimension where v was made: an expand_shape's
    output size, or (v an op's result on `init`) the size of init's `tensor.empty`."""
    o = _owner(v)
    if o is not None and o.name == "tensor.expand_shape" and ir.RankedTensorType(v.type).is_dynamic_dim(0):
        return o.operands[1] if len(o.operands) > 1 else None
    fill = _owner(init) if init is not None else None
    empty = _owner(fill.operands[-1]) if fill is not None and fill.name == "linalg.fill" else None
    if empty is not None and empty.name == "tensor.empty" and len(empty.operands) == 1:
        return empty.operands[0]
    return None


def _dims_from(r: ir.Value, init: ir.Value) -> None:
    """Read the dynamic first size of an attention's result, and of the expand of it, where
    they were made instead of with `tensor.dim`: a tensor.dim of the result would keep the ops
    it measures out of the kernel (IREE's dynamic shapes read sizes that way, to size the
    expand and the transpose of the heads)."""
    todo = [(r, init)]
    while todo:
        v, v_init = todo.pop()
        size = _first_size(v, v_init)
        for use in list(v.uses):
            d = use.owner
            if d.name == "tensor.dim" and _int_literal(d.operands[1]) == 0 and size is not None:
                d.results[0].replace_all_uses_with(size)
                d.erase()
            elif d.name == "tensor.expand_shape" and v is r:
                todo.append((d.results[0], None))


def _single_user(v: ir.Value) -> ir.Operation | None:
    users = {op_id(u.owner): u.owner for u in v.uses}
    return next(iter(users.values())) if len(users) == 1 else None


def _last_dim_kept(o: ir.Operation, rank: int) -> list[int] | None:
    """The permutation of a linalg.transpose of `rank` dimensions that keeps the last in place."""
    if o is None or o.name != "linalg.transpose":
        return None
    perm = list(ir.DenseI64ArrayAttr(o.attributes["permutation"]))
    return perm if len(perm) == rank and perm[-1] == rank - 1 else None


def _is_head_split(o: ir.Operation) -> bool:
    return str(o.attributes["reassociation"]).replace(" ", "") == "[[0,1],[2],[3]]"


def _head_view(x: ir.Value):
    """How an attention operand [B*H, R, W] sits in memory when it is a transpose's copy:
    (source, heads or None, (per b, per h, per row) strides, ops) for collapse(transpose(src))
    of [B, H, R, W] (heads H) or transpose(src) of 3 dimensions (strides per batch index, heads
    None: (per index, 0, per row)); None when it is read as it is."""
    o = _owner(x)
    if o is not None and o.name == "tensor.collapse_shape" and _is_head_split(o) and _single_user(x) is not None:
        t4 = o.operands[0]
        p = _owner(t4)
        perm = _last_dim_kept(p, 4)
        if perm is None or _single_user(t4) is None:
            return None
        src = p.operands[0]
        st = _contiguous_strides(list(ir.RankedTensorType(src.type).shape))
        heads = ir.RankedTensorType(t4.type).shape[1]
        return src, heads, (st[perm[0]], st[perm[1]], st[perm[2]]), [o, p]
    perm = _last_dim_kept(o, 3)
    if perm is not None and _single_user(x) is not None:
        src = o.operands[0]
        st = _contiguous_strides(list(ir.RankedTensorType(src.type).shape))
        return src, None, (st[perm[0]], 0, st[perm[1]]), [o]
    return None


def _gqa_view(x: ir.Value):
    """How an attention operand k or v [B*H, S, W] sits in memory when it is grouped-query
    attention's copy (transformers' repeat_kv, SDPA's enable_gqa): collapse([[0, 1, 2], [3],
    [4]]) of a broadcast of [B, KVH, S, W] to [B, KVH, G, S, W], the source possibly a
    transpose's copy of [B, S, KVH, W]: (source, KVH, G, (per b, per k/v head, per row)
    strides, ops); None otherwise."""
    o = _owner(x)
    if o is None or o.name != "tensor.collapse_shape" or _single_user(x) is None:
        return None
    if str(o.attributes["reassociation"]).replace(" ", "") != "[[0,1,2],[3],[4]]":
        return None
    t5 = o.operands[0]
    g = _owner(t5)
    if g is None or _single_user(t5) is None:
        return None
    found = _broadcast_source(g)
    if found is None:
        return None
    src, strides = found
    _, kvh, group, _, _ = ir.RankedTensorType(t5.type).shape
    st = _contiguous_strides(list(ir.RankedTensorType(src.type).shape))
    if ir.RankedTensorType(src.type).rank != 4 or strides != [st[0], st[1], 0, st[2], st[3]] or group < 2:
        return None
    ops = [o, g]
    perm = _last_dim_kept(_owner(src), 4)
    if perm is not None and _single_user(src) is not None:
        p = _owner(src)
        base = p.operands[0]
        bst = _contiguous_strides(list(ir.RankedTensorType(base.type).shape))
        st = [bst[perm[i]] for i in range(4)]
        src = base
        ops.append(p)
    return src, kvh, group, (st[0], st[1], st[2]), ops


def _slice_view(x: ir.Value):
    """(parent, element offset, {x's contiguous stride: the parent's}, ops) when x, [B, L, H, E],
    is the heads split (expand [[0], [1], [2, 3]]) off a slice of a [B, L, W] tensor's last
    dimension (q, k, v `split` off one projection's result); None otherwise."""
    e = _owner(x)
    if e is None or e.name != "tensor.expand_shape" or _single_user(x) is None:
        return None
    if str(e.attributes["reassociation"]).replace(" ", "") != "[[0],[1],[2,3]]":
        return None
    sl = e.operands[0]
    o = _owner(sl)
    if o is None or o.name != "tensor.extract_slice" or _single_user(sl) is None or len(o.operands) != 1:
        return None
    offsets = list(ir.DenseI64ArrayAttr(o.attributes["static_offsets"]))
    steps = list(ir.DenseI64ArrayAttr(o.attributes["static_strides"]))
    parent = o.operands[0]
    pshape, sshape = list(ir.RankedTensorType(parent.type).shape), list(ir.RankedTensorType(sl.type).shape)
    if len(pshape) != 3 or steps != [1, 1, 1] or offsets[:2] != [0, 0] or pshape[:2] != sshape[:2]:
        return None
    b, l, h, w = ir.RankedTensorType(x.type).shape
    st_x = _contiguous_strides([b, l, h, w])
    st_p = [l * pshape[2], pshape[2], w, 1]
    if len(set(st_x)) != 4:
        return None
    return parent, offsets[2], dict(zip(st_x, st_p)), [e, o]


def _unbind_view(x: ir.Value):
    """(source, heads, (per b, per h, per row) strides, element offset, ops, transpose) when x,
    [B*H, R, W], is one of q, k, v unbound from a transpose's copy of one projection's result
    seen as [B, R, 3, H, W] (ViT's qkv.reshape(B, N, 3, H, E).permute(2, 0, 3, 1, 4).unbind(0)):
    collapse([[0, 1, 2], [3], [4]]) of the slice [s] of a 5-d linalg.transpose that keeps its last
    dimension last. The transpose is shared by the three slices: the caller checks that nothing
    else reads it. None otherwise."""
    c = _owner(x)
    if c is None or c.name != "tensor.collapse_shape" or _single_user(x) is None:
        return None
    if str(c.attributes["reassociation"]).replace(" ", "") != "[[0,1,2],[3],[4]]":
        return None
    sliced = c.operands[0]
    sl = _owner(sliced)
    if sl is None or sl.name != "tensor.extract_slice" or _single_user(sliced) is None or len(sl.operands) != 1:
        return None
    whole = sl.operands[0]
    t = _owner(whole)
    if t is None or t.name != "linalg.transpose" or not ir.RankedTensorType(whole.type).has_static_shape:
        return None
    shape = list(ir.RankedTensorType(whole.type).shape)
    offsets = list(ir.DenseI64ArrayAttr(sl.attributes["static_offsets"]))
    sizes = list(ir.DenseI64ArrayAttr(sl.attributes["static_sizes"]))
    steps = list(ir.DenseI64ArrayAttr(sl.attributes["static_strides"]))
    perm = list(ir.DenseI64ArrayAttr(t.attributes["permutation"]))
    if len(shape) != 5 or steps != [1] * 5 or offsets[1:] != [0] * 4 or sizes != [1] + shape[1:] or perm[-1] != 4:
        return None
    src = t.operands[0]
    st = _contiguous_strides(list(ir.RankedTensorType(src.type).shape))
    per = [st[d] for d in perm]
    return src, shape[2], (per[1], per[2], per[3]), offsets[0] * per[0], [c, sl], t


def _unbound_views(q: ir.Value, k: ir.Value, v: ir.Value) -> dict:
    """{operand index: _unbind_view(...)} for those of q, k, v unbound from one transpose that
    only they read (the transpose's copy is then not made at all)."""
    found = {i: u for i, x in enumerate((q, k, v)) if (u := _unbind_view(x)) is not None}
    slices = {op_id(u[4][1]) for u in found.values()}
    return {i: u for i, u in found.items()
            if all(op_id(use.owner) in slices for use in u[5].results[0].uses)}


def _result_view(r: ir.Value):
    """(value, heads or None, strides, ops) when the attention's result [B*H, L, EV] is only
    copied by a transpose (after an expand to [B, H, L, EV]): the kernel stores straight into
    the transposed layout; None when it is stored as it is."""
    u = _single_user(r)
    if u is not None and u.name == "tensor.expand_shape" and _is_head_split(u):
        t = _single_user(u.results[0])
        perm = _last_dim_kept(t, 4)
        if perm is None:
            return None
        st = _contiguous_strides(list(ir.RankedTensorType(t.results[0].type).shape))
        where = [perm.index(d) for d in range(4)]
        heads = ir.RankedTensorType(u.results[0].type).shape[1]
        return t.results[0], heads, (st[where[0]], st[where[1]], st[where[2]]), [u, t]
    perm = _last_dim_kept(u, 3)
    if perm is not None:
        st = _contiguous_strides(list(ir.RankedTensorType(u.results[0].type).shape))
        where = [perm.index(d) for d in range(3)]
        return u.results[0], None, (st[where[0]], 0, st[where[1]]), [u]
    return None


def _match_attention(op: ir.Operation, fp32: str) -> tuple[AttentionSpec, _Plan] | str:
    """The flash-attention spec and rewrite plan for torch-mlir's attention op, or why it keeps
    IREE's attention kernel. The mask is read where it comes from: a causal mask is not read
    at all, a mask broadcast over heads (or batch, rows, columns) is read at stride 0."""
    operands = list(op.operands)
    if len(operands) not in (4, 5) or len(op.results) != 1:
        return "an attention op of another form"
    q, k, v, init = operands[0], operands[1], operands[2], operands[-1]
    mask = operands[3] if len(operands) == 5 else None
    types = [ir.RankedTensorType(x.type) for x in operands]
    dynamic = not all(t.has_static_shape for t in types)
    if dynamic and any(t.is_dynamic_dim(a) for t in types for a in range(1, t.rank)):
        return "dynamic shape other than the number of heads"
    if dynamic:
        _dims_from(op.results[0], init)
    if any(ir.RankedTensorType(x.type).rank != 3 for x in (q, k, v)):
        return "attention operands of rank other than 3"
    dtype = _element(q)
    if dtype not in ("f32", "bf16", "f16") or _element(k) != dtype or _element(v) != dtype:
        return f"attention on {dtype}, {_element(k)}, {_element(v)}"
    if dtype == "f32" and fp32 == "off":
        return "float32 attention with fp32=off"
    batch, l, e = ir.RankedTensorType(q.type).shape
    s, ev = ir.RankedTensorType(k.type).shape[1], ir.RankedTensorType(v.type).shape[2]
    scale = 1.0 / e ** 0.5
    if "scale" in op.attributes:
        scale = float(ir.FloatAttr(op.attributes["scale"]).value)
    args, ops, extra = [q, k, v], [], {}
    if mask is not None:
        if not str(ir.RankedTensorType(mask.type).element_type).startswith(("f", "bf")):
            return f"a {ir.RankedTensorType(mask.type).element_type} mask"
        extra = {"mask": "add", "mask_dtype": _element(mask), "heads": 1, "mask_strides": (l * s, 0, s, 1)}
        found = _owner(mask)
        if found is not None and found.name == "tensor.collapse_shape" and _is_head_split(found):
            full = found.operands[0]
            b4, h4 = ir.RankedTensorType(full.type).shape[:2]
            extra.update(heads=h4, mask_strides=(h4 * l * s, l * s, s, 1))
            ops.append(found)
            g = _owner(full)
            source = None
            if g is not None and len(list(full.uses)) == 1:
                if _is_causal_mask(g):
                    extra = {"mask": "causal"}
                    ops.append(g)
                    fill = _owner(g.operands[0])
                    if fill is not None and fill.name == "linalg.fill":
                        ops.append(fill)
                elif (source := _broadcast_source(g)) is not None:
                    src, strides = source
                    extra.update(mask_strides=tuple(strides), mask_dtype=_element(src))
                    ops.append(g)
                    args.append(src)
            if extra["mask"] == "add" and source is None:
                args.append(full)
        elif extra["mask"] == "add":
            args.append(mask)
    fill = _owner(init)
    if fill is not None and fill.name == "linalg.fill":
        ops.append(fill)
    ops.append(op)
    # q, k, v and the result read and written where a transpose copies them from or to
    views = [_head_view(x) for x in (q, k, v)] + [_result_view(op.results[0])]
    # q, k, v unbound from one transposed projection (ViT): read at an offset where it wrote them
    unbound = {} if dynamic else _unbound_views(q, k, v)
    taken: set = set()
    for i, (src, h, st, _, view_ops, t) in unbound.items():
        views[i] = (src, h, st, view_ops + ([t] if op_id(t) not in taken else []))
        taken.add(op_id(t))
    heads = extra.get("heads", 1) if extra.get("mask") == "add" else None
    for view in views:
        if view is not None and view[1] is not None and heads is None:
            heads = view[1]
    # grouped-query k and v read where the copy to every head came from
    gqa = [None, None] if dynamic else [_gqa_view(x) for x in (k, v)]
    if None in gqa or gqa[0][1:3] != gqa[1][1:3] or (heads is not None and heads != gqa[0][1] * gqa[0][2]):
        gqa = [None, None]
    group = 1
    if gqa[0] is not None:
        heads, group = gqa[0][1] * gqa[0][2], gqa[0][2]
        for i, (src, _, _, st, view_ops) in enumerate(gqa, start=1):
            views[i] = (src, "gqa", st, view_ops)
    heads = heads or 1
    strides, result, last = [], op.results[0], op
    for i, (x, view) in enumerate(zip((q, k, v, op.results[0]), views)):
        rows, width = ((l, e), (s, e), (s, ev), (l, ev))[i]
        if view is None or view[1] not in (None, heads, "gqa"):
            strides.append((heads * rows * width, rows * width, width))
            continue
        src, _, (per_b, per_h, per_row), view_ops = view
        if view[1] is None:  # strides per batch index: b*H + h
            per_b, per_h = heads * per_b, per_b
        strides.append((per_b, per_h, per_row))
        if i < 3:
            args[i] = src
            ops[:0] = view_ops
        else:
            result, last = src, view_ops[-1]
            ops.extend(view_ops)
    # q, k, v split off one projection's result: read there, at an offset, not sliced out
    offsets = [unbound[i][3] if i in unbound and views[i][1] == heads else 0 for i in range(3)]
    for i in range(3):
        if views[i] is None or views[i][1] not in (heads, "gqa") or i in unbound:
            continue
        found = _slice_view(args[i])
        if found is None or any(st not in found[2] for st in strides[i]):
            continue
        parent, offsets[i], remap, slice_ops = found
        strides[i] = tuple(remap[st] for st in strides[i])
        args[i] = parent
        ops[:0] = slice_ops
    if extra.get("mask") != "add":
        extra["heads"] = heads
    if group > 1:
        extra["group"] = group
    if any(offsets):
        extra["offsets"] = tuple(offsets)
    if dynamic:
        if any(min(st) < 0 for st in strides) or min(extra.get("mask_strides", (0,))) < 0:
            return "dynamic shape in a layout whose strides are known per call"
        batch = heads * 8  # the count the tile is chosen for: 8 of the batch
        extra["dynamic_batch"] = True
    contiguous = all(st == ((heads if i in (0, 3) else heads // group) * r * w, r * w, w) for i, (st, (r, w)) in
                     enumerate(zip(strides, ((l, e), (s, e), (s, ev), (l, ev)))))
    spec = AttentionSpec(batch=batch, l=l, s=s, e=e, ev=ev, dtype=dtype, out=_element(op.results[0]),
                         scale=scale, precision=fp32 if dtype == "f32" else "",
                         strides=() if contiguous else tuple(strides), **extra)
    plan = _Plan(args, ops, result, last)
    if dynamic:  # the sizes its tensors' linalg form reads come in as arguments after the kernel's
        sizes: list = []
        _closure(plan, sizes)
        args.extend(dict.fromkeys(sizes))
    return spec, plan  # the pass checks the spec, as every contraction's


RESHAPES = ("tensor.expand_shape", "tensor.collapse_shape")


def _flat_access(map_text: str, rank: int) -> str | None:
    """How a generic reads an operand when its iteration space is the [M, N] result reshaped
    (its last dimension not N): only whole, in the same element order, or as a scalar."""
    dims = _map_results(map_text)
    if dims == [f"d{i}" for i in range(rank)]:
        return "full"
    return "scalar" if not dims else None


def _absorb(cur: ir.Value, names: dict, args: list, inputs: list, ops_text: list, batched: bool,
            peeled: list, access_of=None, n: int | None = None):
    """The ops after `cur` that can join the epilogue (appending the generic's body to
    ops_text): [generic], or [reshape, generic] where the generic reads a reshape of `cur`
    (a matmul's [M, N] seen as [B, S, N] or flattened: row-major, the same element order, so
    the kernel's linear store and loads stay right); else why the epilogue ends there."""
    g = _single_user(cur)
    if g is None:
        return "its result has more than one reader"
    reshape = None
    if g.name in RESHAPES and access_of is None and not batched and n is not None:
        reshape = g
        g = _single_user(reshape.results[0])
        if g is None:
            return "the reshape of its result has more than one reader"
        names[reshape.results[0]] = names[cur]
        cur = reshape.results[0]
        shape = list(ir.RankedTensorType(cur.type).shape)
        if len(shape) < 2 or shape[-1] != n:
            access_of = _flat_access
    if g.name != "linalg.generic" or len(g.results) != 1:
        return ("the result is the function's output" if g.name == "func.return"
                else "the next op is {} (not an elementwise generic)".format(g.name))
    if is_extf(g):
        return "the next op widens to float32 (a cast stays with its reader)"
    iters = str(g.attributes["iterator_types"])
    if "reduction" in iters:
        return "the next op is a reduction"
    rank = ir.RankedTensorType(cur.type).rank
    out_type = ir.RankedTensorType(g.results[0].type)
    if out_type.rank != rank or list(out_type.shape) != list(ir.RankedTensorType(cur.type).shape):
        return "the next op changes the shape"
    access_of = access_of or _access
    maps = [str(m) for m in ir.ArrayAttr(g.attributes["indexing_maps"])]
    n_in = len(g.operands) - 1
    if access_of(maps[-1], rank) != "full":
        return "the next op writes a different layout"
    body = g.regions[0].blocks[0]
    if len(list(body.arguments[n_in].uses)):
        return "the next op reads its output tensor"
    local: dict = {}
    pending_inputs = []
    for i in range(n_in):
        v = g.operands[i]
        access = access_of(maps[i], rank)
        if v == cur:
            if access != "full":
                return "the next op reads the result other than element by element"
            local[body.arguments[i]] = names[cur]
            continue
        o = _owner(v)
        widened = None
        if o is not None and o.name == "linalg.generic" and is_extf(o) and \
                list(ir.RankedTensorType(o.operands[0].type).shape) == list(ir.RankedTensorType(v.type).shape):
            widened, v = o, o.operands[0]  # read the 16-bit tensor; the kernel widens it as it loads
        if access is None or _element(v) not in ("f32", "bf16", "f16"):
            return "the next op reads a {} operand or in a layout the template does not read".format(_element(v))
        if access != "scalar" and batched and access != "full":
            return "the next op reads a per-batch vector"
        pending_inputs.append((i, v, access, widened))
    roundings, parts = _bf16_roundings(body)
    inside = {op_id(o.operation) for o in body.operations}
    for v in captured_values(g):
        if _float_literal(v) is None and not (_int_literal(v) is not None and all(
                op_id(u.owner) in parts for u in v.uses if op_id(u.owner) in inside)):
            return "the next op captures a value that is not a float constant"
    lines = []
    counter = len(ops_text)
    for o in body.operations:
        o = o.operation
        if o.name == "linalg.yield":
            yielded = o.operands[0]
            break
        if op_id(o) in parts:
            continue
        if op_id(o) in roundings:  # braze's spelling of a bf16 round trip: the template's .to(bf16)
            x = roundings[op_id(o)]
            operand = local.get(x) if x in local else (("input", x.arg_number)
                                                       if isinstance(x, ir.BlockArgument) and x.owner == body else None)
            if operand is None:
                return "the next op rounds a value from outside it"
            dst = f"%{counter}"
            counter += 1
            lines.append([dst, "truncf", [operand], "bf16", None])
            local[o.results[0]] = dst
            continue
        dialect_op = o.name.split(".", 1)[1]
        if o.name == "arith.constant":
            lit = _float_literal(o.results[0])
            if lit is None:
                return "the next op holds a non-float constant"
            local[o.results[0]] = lit
            continue
        if dialect_op not in EPILOGUE_OPS or not o.name.startswith(("arith.", "math.")) or len(o.results) != 1:
            return "the next op holds {} (not an epilogue op)".format(o.name)
        operands = []
        for v in o.operands:
            if v in local:
                operands.append(local[v])
            elif (lit := _float_literal(v)) is not None:
                operands.append(lit)
            elif isinstance(v, ir.BlockArgument) and v.owner == body:
                idx = v.arg_number
                operands.append(("input", idx))
            else:
                return "the next op reads a value from outside it"
        extra = None
        if o.name == "arith.cmpf":
            extra = ir.IntegerAttr(o.attributes["predicate"]).value
        ty = str(o.results[0].type)
        if ty not in ("f32", "bf16", "f16", "i1"):
            return "the next op computes in {}".format(ty)
        if ty == "i1" and o.name != "arith.cmpf":
            return "the next op has an integer result"
        dst = f"%{counter}"
        counter += 1
        lines.append([dst, dialect_op, operands, ty if ty != "i1" else "i1", extra])
        local[o.results[0]] = dst
    else:
        return "the next op has no yield"
    if yielded not in local and not (isinstance(yielded, ir.BlockArgument)):
        return "the next op yields a value from outside it"
    # Commit: bind the inputs this generic reads, then its ops.
    bound = {}
    for i, v, access, widened in pending_inputs:
        if widened is not None and all(op_id(widened) != op_id(p) for p in peeled):
            peeled.append(widened)
        for j, existing in enumerate(args[2:]):
            if existing == v and inputs[j].access == access:
                bound[i] = f"in{j}"
                break
        else:
            args.append(v)
            inputs.append(Input(_element(v), access))
            bound[i] = f"in{len(inputs) - 1}"
    for idx in range(n_in):
        if body.arguments[idx] in local and idx not in bound:
            bound[idx] = local[body.arguments[idx]]

    def resolve(x):
        return bound[x[1]] if isinstance(x, tuple) else x

    for dst, op, operands, ty, extra in lines:
        ops_text.append((dst, op, [resolve(x) for x in operands], ty, extra))
    if isinstance(yielded, ir.BlockArgument):
        names[g.results[0]] = bound[yielded.arg_number]
    else:
        names[g.results[0]] = local[yielded]
    return [reshape, g] if reshape is not None else [g]


def _bf16_roundings(body: ir.Block) -> tuple[dict, set]:
    """Each rounding of an f32 to bf16 precision that braze's fusion spells in integer ops
    (passes/lower_to_linalg.round_bfloat16_round_trips: select(isnan(x), x, bitcast((bits +
    0x7fff + ((bits >> 16) & 1)) & 0xffff0000))): ({select: x}, the keys of the ops it is made
    of). The epilogue computes it as one truncf to bf16 (the template's .to(tl.bfloat16), the
    same round to nearest even, NaN kept)."""
    found, parts = {}, set()

    def op(v, name):
        o = _owner(v)
        return o if o is not None and o.name == name else None

    for o in body.operations:
        o = o.operation
        if o.name != "arith.select":
            continue
        cond, x, r = o.operands
        nan, back = op(cond, "arith.cmpf"), op(r, "arith.bitcast")
        if nan is None or ir.IntegerAttr(nan.attributes["predicate"]).value != 14 or list(nan.operands) != [x, x]:
            continue
        mask = op(back.operands[0], "arith.andi") if back is not None else None
        if mask is None or _int_literal(mask.operands[1]) != -65536:
            continue
        total = op(mask.operands[0], "arith.addi")
        biased = op(total.operands[0], "arith.addi") if total is not None else None
        lsb = op(total.operands[1], "arith.andi") if total is not None else None
        if biased is None or lsb is None or _int_literal(biased.operands[1]) != 0x7FFF or _int_literal(lsb.operands[1]) != 1:
            continue
        shift = op(lsb.operands[0], "arith.shrui")
        bits = op(biased.operands[0], "arith.bitcast")
        if shift is None or bits is None or _int_literal(shift.operands[1]) != 16 or shift.operands[0] != bits.results[0] \
                or bits.operands[0] != x:
            continue
        pieces = [nan, back, mask, total, biased, lsb, shift, bits]
        keys = {op_id(p) for p in pieces} | {op_id(o)}
        if any(op_id(u.owner) not in keys for p in pieces for u in p.results[0].uses):
            continue  # a piece read elsewhere: not only a rounding
        found[op_id(o)] = x
        parts |= {op_id(p) for p in pieces}
    return found, parts


TAKEN_ALONG = ("arith.constant", "tensor.empty", "tensor.collapse_shape", "tensor.expand_shape")
"""Ops the outlined function clones besides the kernel's own: what its ops read that is not
one of the kernel's operands (an empty init, a scalar constant, a reshape of an empty init)."""


def _closure(plan: _Plan, sizes: list | None = None) -> set | str:
    """Keys of the ops the outlined function holds, or why the plan reads something else.
    `sizes`: collect the dynamic sizes the ops read from outside (instead of computing them
    from M in the outlined function)."""
    wanted = {op_id(o) for o in plan.ops}
    args = set(plan.args)
    todo = [(v, o) for o in plan.ops for v in list(o.operands) + captured_values(o)]
    while todo:
        v, reader = todo.pop()
        o = _owner(v)
        if o is None or v in args or op_id(o) in wanted:
            continue
        if str(v.type) == "index" and o.name != "arith.constant":
            if sizes is not None:
                sizes.append(v)
                continue
            if _fixed_sizes(reader) is None:
                return f"the matmul's ops read a size ({o.name}) that is not one of a tensor with M x N elements"
            continue  # a dynamic size: the outlined function computes it from M (_outline)
        if o.name not in TAKEN_ALONG:
            return f"the matmul's ops read a {o.name} result that is not a kernel operand"
        wanted.add(op_id(o))
        todo.extend((x, o) for x in o.operands)
    return wanted


def _fixed_sizes(o: ir.Operation) -> int | None:
    """For an op of a kernel's chain that reads a dynamic size (an empty tensor, a reshape's
    result: tensors of M x N elements with one dynamic dimension): the product of its result's
    static sizes, so that the size is M * N / it; None for any other op."""
    if o.name not in ("tensor.empty", "tensor.expand_shape") or len(o.results) != 1:
        return None
    ty = ir.RankedTensorType(o.results[0].type)
    dynamic = [a for a in range(ty.rank) if ty.is_dynamic_dim(a)]
    if len(dynamic) != 1:
        return None
    fixed = 1
    for a in range(ty.rank):
        if a != dynamic[0]:
            fixed *= ty.get_dim_size(a)
    return fixed


def _outline(module: ir.Operation, f: ir.Operation, plan: _Plan, spec: GemmSpec, label: str) -> ir.Operation:
    """Move the plan's ops into a new private function `label` and call it in their place."""
    arg_types = [str(v.type) for v in plan.args]
    result_type = str(plan.result.type)
    params = ", ".join(f"%arg{i}: {t}" for i, t in enumerate(arg_types))
    spec_text = spec.to_json().replace("\\", "\\\\").replace('"', '\\"')
    scratch = ir.Module.parse(
        f'func.func private @{label}({params}) -> {result_type} attributes {{{ATTR} = "{spec_text}"}} {{\n'
        f"  %c0 = arith.constant 0 : index\n"
        f"  %0 = tensor.empty({', '.join(['%c0'] * result_type.count('?'))}) : {result_type}\n"
        f"  return %0 : {result_type}\n}}"
    )
    new = scratch.body.operations[0].operation
    if plan.epilogue_end:
        new.attributes[EPILOGUE_END_ATTR] = ir.StringAttr.get(plan.epilogue_end)
    block = new.regions[0].blocks[0]
    *dummies, ret = [o.operation for o in block.operations]
    mapping = {v: block.arguments[i] for i, v in enumerate(plan.args)}
    order = [o.operation for o in f.regions[0].blocks[0].operations]
    wanted = _closure(plan)
    if isinstance(wanted, str):
        raise AssertionError(wanted)
    with ir.InsertionPoint(ret), ret.location:
        index = ir.IndexType.get()
        constant = lambda n: ir.Operation.create(  # noqa: E731
            "arith.constant", results=[index], attributes={"value": ir.IntegerAttr.get(index, n)}).results[0]
        total = None  # M x N (M read off A), where a dynamic size needs it
        for o in order:
            if op_id(o) not in wanted:
                continue
            local = mapping
            for v in o.operands:
                if v in mapping or str(v.type) != "index" or _owner(v) is None \
                        or _owner(v).name == "arith.constant" or op_id(_owner(v)) in wanted:
                    continue
                if total is None:
                    rows = ir.Operation.create("tensor.dim", results=[index],
                                               operands=[block.arguments[0], constant(0)]).results[0]
                    total = ir.Operation.create("arith.muli", results=[index],
                                                operands=[rows, constant(spec.n)]).results[0]
                local = dict(local)  # this op's one dynamic size, from M
                local[v] = ir.Operation.create("arith.divui", results=[index],
                                               operands=[total, constant(_fixed_sizes(o))]).results[0]
            clone = o.clone()
            remap_operands(clone, local)
            for old, newv in zip(o.results, clone.results):
                mapping[old] = newv
    ret.operands[0] = mapping[plan.result]
    for dummy in reversed(dummies):
        dummy.erase()
    new.move_after(list(module.regions[0].blocks[0].operations)[-1].operation)
    with ir.InsertionPoint(plan.last), plan.last.location:
        call = ir.Operation.create("func.call", results=[plan.result.type], operands=plan.args,
                                   attributes={"callee": ir.FlatSymbolRefAttr.get(label)})
    plan.result.replace_all_uses_with(call.results[0])
    position = {op_id(o): i for i, o in enumerate(order)}
    for o in sorted(plan.ops, key=lambda o: position[op_id(o)], reverse=True):
        if all(not list(r.uses) for r in o.results):
            o.erase()
    return new


def generated_kernels(module: ir.Operation) -> list[dict]:
    """What fusion-generate-kernels did, for the report: each outlined kernel (function, what it
    computes, where) and each matmul it left to IREE, with why."""
    found = []
    for f in all_ops(module, "func.func"):
        if ATTR in f.attributes:
            spec = read_spec(ir.StringAttr(f.attributes[ATTR]).value)
            mm = next(iter(all_ops(f, CONTRACTIONS)), None) or next(
                (g for g in all_ops(f, "linalg.generic") if not isinstance(row_reduction(g), str)), None)
            entry = {"function": ir.StringAttr(f.attributes["sym_name"]).value, "kernel": spec.describe(),
                     "generated": True, "location": short_location(str(mm.location)) if mm is not None else ""}
            if EPILOGUE_END_ATTR in f.attributes:
                entry["epilogue_end"] = ir.StringAttr(f.attributes[EPILOGUE_END_ATTR]).value
            entry["signature"] = spec.tuning_signature()
            if TILE_FROM_ATTR in f.attributes:
                entry["tile_from"] = ir.StringAttr(f.attributes[TILE_FROM_ATTR]).value
            found.append(entry)
    for mm in all_ops(module, CONTRACTIONS + ("linalg.generic",)):
        if SKIPPED_ATTR in mm.attributes:
            what = (f"row reduction of {mm.operands[0].type}" if mm.name == "linalg.generic" else
                    f"{mm.name} {' x '.join(str(v.type) for v in list(mm.operands)[:2])}")
            found.append({"function": "", "kernel": what,
                          "generated": False, "reason": ir.StringAttr(mm.attributes[SKIPPED_ATTR]).value,
                          "location": short_location(str(mm.location))})
    return found
