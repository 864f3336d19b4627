"""fusion-channels-last: convolutions, their epilogues and the pooling between them in NHWC.

    %p = tensor.pad %x low[0, 0, 1, 1] ...                          (NCHW)
    %c = linalg.conv_2d_nchw_fchw ins(%p, %w) outs(%fill)
    %r = linalg.generic {(d0, d1, d2, d3) -> (d1, 0, 0) ...} ins(%c, %scale) ...     (BatchNorm, ReLU)
  ->
    %xt = linalg.transpose %x [0, 2, 3, 1]                           (once, at the model's input)
    %p  = tensor.pad %xt low[0, 1, 1, 0] ...                         (NHWC)
    %wt = linalg.transpose %w [0, 2, 3, 1]                           (a constant: IREE computes it once)
    %c  = linalg.conv_2d_nhwc_fhwc ins(%p, %wt) outs(%fill')
    %r  = linalg.generic {(d0, d1, d2, d3) -> (d3, 0, 0) ...} ins(%c, %scale) ...    (the same body)
    ... = linalg.transpose %r [0, 3, 1, 2]                           (only where an NCHW reader is left)

Each static NCHW convolution of one group that fusion-generate-kernels takes (its element
types: `types`) of at least `min-channels` input channels becomes an NHWC one with its weight
transposed to [F, KH, KW, C], and the layout
flows forward through the function's block, in order:
- an elementwise generic (all loops parallel, each result written whole) with an NHWC input
  runs over NHWC loops (its maps renamed, d1 -> d3: a per-channel [C, 1, 1] operand is read
  at (d3, 0, 0)) and writes NHWC;
- any other generic (the average pool's reduction) reads an NHWC input through a permuted map,
  its own result unchanged;
- a max or sum pooling of an NHWC input, and the zero or -inf pad before it, become NHWC ones;
- a convolution's input, fill or bias broadcast is made NHWC where it is read (a transpose of
  the model's input is the one layout copy left).
Every op converted leaves an NHWC -> NCHW transpose for its old readers; a later NHWC reader of
that transpose reads the NHWC value instead, so transposes between converted ops cancel and
canonicalize erases the ones nothing reads. What is left transposes only where NCHW is needed
(a function result, an op this pass does not know).

Why: implicit-GEMM convolutions gather their A tile along K = (kh, kw, c). In NHWC a K step is
a run of channels, one 16-byte vector a thread, where NCHW makes it a scattered gather, and the
result is stored as a GEMM's [pixels, channels]; the 1x1 convolutions (half of a ResNet-50's
flops) read their input as a plain row-major matrix. cuDNN runs NHWC for the same reason.
bench/NOTES.md §49 has the figures.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from braze._mlir import ir
from braze.irutil import all_ops, op_id, short_location

from ..registry import ModulePass, decide, option, register
from ..template import inline_template, replace_with_template
from ..template import map_text as _map
from .matchers import conv_ints, float_literal, generated_conv, map_results, owner

TO_NHWC = (0, 2, 3, 1)
TO_NCHW = (0, 3, 1, 2)
CONV = "linalg.conv_2d_nchw_fchw"
POOLS = {"linalg.pooling_nchw_max": "linalg.pooling_nhwc_max", "linalg.pooling_nchw_sum": "linalg.pooling_nhwc_sum"}
DEAD = ("linalg.transpose", "tensor.empty", "tensor.pad", "linalg.fill", "linalg.broadcast")
"""Ops erased where nothing reads them once the walk is done (they have no side effects)."""
IDENTITY4 = ["d0", "d1", "d2", "d3"]
_RENAME = {"d0": "d0", "d1": "d3", "d2": "d1", "d3": "d2"}
"""NCHW loops (n, c, h, w) as NHWC ones (n, h, w, c): the channel loop d1 becomes d3."""


@register
@dataclass(frozen=True)
class ChannelsLastPass(ModulePass):
    name = "fusion-channels-last"
    summary = ("Static NCHW convolutions (and the elementwise ops, pads and pooling around them) in NHWC, "
               "transposes left only where an NCHW reader remains")

    types: str = option("f32,bf16,f16", "Comma-separated element types whose convolutions become NHWC "
                                         "(those fusion-generate-kernels takes as implicit GEMMs)")
    min_convs: int = option(2, "Convert a function only where it has at least this many such convolutions: "
                               "a lone one would pay a layout copy of its input and of its output for it",
                            minimum=1)
    min_channels: int = option(16, "Convolutions of fewer input channels (a network's 3-channel stem) stay "
                                   "NCHW: their NHWC kernel reading the NCHW input at the 128x64x64 tile gave "
                                   "wrong results on the GPU (bench/NOTES.md §49), where the NCHW one is exact",
                               minimum=1)
    whole: bool = option(False, "Convert a function only where every convolution in it is one this pass "
                                "converts or leaves NCHW for its few channels (none depthwise, grouped or of "
                                "another element type): the networks whose NHWC build was verified on the GPU")
    pools: bool = option(True, "Max and sum pooling of an NHWC input become NHWC (false: they stay NCHW, "
                               "transposes around them)")
    fold: bool = option(True, "Other generics (reductions) read an NHWC input through a permuted map (false: "
                              "they read it transposed back to NCHW)")

    def run(self, module: ir.Operation) -> None:
        types = tuple(t for t in self.types.split(",") if t)
        for f in all_ops(module, "func.func"):
            if not f.regions[0].blocks:
                continue
            ops = [op.operation for op in f.regions[0].blocks[0].operations]
            convs = [op for op in ops if _convertible(op, types, self.min_channels)]
            if self.whole and any(_is_conv(op) and op not in convs and not _few_channels(op, self.min_channels)
                                  for op in ops):
                continue
            if len(convs) >= self.min_convs:
                with f.location:
                    _Layout(f, types, self.name, self.pools, self.fold, self.min_channels).run()


def _is_conv(op: ir.Operation) -> bool:
    return op.name.startswith(("linalg.conv_", "linalg.depthwise_conv_"))


def _channels(op: ir.Operation) -> int:
    """A dense NCHW convolution's input channels."""
    return ir.RankedTensorType(op.operands[0].type).shape[1]


def _few_channels(op: ir.Operation, min_channels: int) -> bool:
    """A dense NCHW convolution of fewer input channels than min_channels (left NCHW)."""
    return op.name == CONV and _channels(op) < min_channels


def _convertible(op: ir.Operation, types: tuple[str, ...], min_channels: int) -> bool:
    """A convolution this pass makes NHWC: one fusion-generate-kernels takes, of enough input channels."""
    return op.name == CONV and generated_conv(op, types) and _channels(op) >= min_channels


def _map_texts(op: ir.Operation) -> list[str]:
    return [str(m) for m in ir.ArrayAttr(op.attributes["indexing_maps"])]


def _rank4(v: ir.Value) -> bool:
    t = v.type
    return isinstance(t, ir.RankedTensorType) and ir.RankedTensorType(t).rank == 4 and \
        ir.RankedTensorType(t).has_static_shape


def _permuted(t: ir.Type, perm: tuple[int, ...]) -> ir.RankedTensorType:
    rt = ir.RankedTensorType(t)
    return ir.RankedTensorType.get([rt.shape[p] for p in perm], rt.element_type)


def _inputs(op: ir.Operation) -> int:
    return list(ir.DenseI32ArrayAttr(op.attributes["operandSegmentSizes"]))[0]


class _Layout:
    """One function's walk: `nhwc` maps a value to its NHWC twin (by op_id of the value's
    transpose or producer: Values are not hashable across Python wrappers)."""

    def __init__(self, f: ir.Operation, types: tuple[str, ...], pass_name: str, pools: bool = True,
                 fold: bool = True, min_channels: int = 1):
        self.f, self.types, self.pass_name, self.pools, self.fold = f, types, pass_name, pools, fold
        self.min_channels = min_channels
        self.nhwc: dict = {}

    # -- values ------------------------------------------------------------------------------

    def _key(self, v: ir.Value):
        if isinstance(v, ir.OpResult):
            return ("r", op_id(v.owner), v.result_number)
        return ("a", ir.BlockArgument(v).arg_number)

    def twin(self, v: ir.Value) -> ir.Value | None:
        return self.nhwc.get(self._key(v))

    def reaches(self, v: ir.Value) -> bool:
        """Whether `v` has an NHWC twin, or is a pad of a value that has one."""
        if self.twin(v) is not None:
            return True
        o = owner(v)
        return o is not None and o.name == "tensor.pad" and _rank4(v) and self.twin(o.operands[0]) is not None

    def as_nhwc(self, v: ir.Value, before: ir.Operation) -> ir.Value:
        """`v`'s NHWC twin, made before `before` where it has none: an empty tensor, fill, bias
        broadcast or pad is cloned in NHWC, anything else transposed."""
        found = self.twin(v)
        if found is not None:
            return found
        o = owner(v)
        made = None
        if o is not None and o.name == "tensor.empty" and not list(o.operands):
            made = self._clone(o, before, v.type)
        elif o is not None and o.name == "linalg.fill":
            made = self._clone(o, before, v.type)
            made.operands[1] = self.as_nhwc(o.operands[1], made)
        elif o is not None and o.name == "linalg.broadcast" and \
                list(ir.DenseI64ArrayAttr(o.attributes["dimensions"])) == [0, 2, 3]:
            made = self._clone(o, before, v.type)
            made.operands[1] = self.as_nhwc(o.operands[1], made)
            made.attributes["dimensions"] = ir.DenseI64ArrayAttr.get([0, 1, 2])
        elif o is not None and o.name == "tensor.pad" and "static_low" in o.attributes:
            made = self._clone(o, before, v.type)
            made.operands[0] = self.as_nhwc(o.operands[0], made)
            for side in ("static_low", "static_high"):
                pads = list(ir.DenseI64ArrayAttr(o.attributes[side]))
                made.attributes[side] = ir.DenseI64ArrayAttr.get([pads[p] for p in TO_NHWC])
        if made is not None:
            result = made.results[0]
        else:
            result = transpose(v, TO_NHWC, before)
        self.nhwc[self._key(v)] = result
        return result

    def _clone(self, o: ir.Operation, before: ir.Operation, nchw: ir.Type) -> ir.Operation:
        made = o.clone(ir.InsertionPoint(before))
        made.results[0].set_type(_permuted(nchw, TO_NHWC))
        return made

    def replaced(self, old: ir.Operation, results: list[ir.Value]) -> None:
        """`old`'s NCHW results are now the NHWC `results`: old readers read them transposed
        back (a transpose a later NHWC reader sees through), and `old` is erased."""
        for r_old, r_new in zip(old.results, results):
            if not list(r_old.uses):
                continue
            back = transpose(r_new, TO_NCHW, old)
            r_old.replace_all_uses_with(back)
            self.nhwc[self._key(back)] = r_new
        old.erase()

    # -- the walk ----------------------------------------------------------------------------

    def run(self) -> None:
        block = self.f.regions[0].blocks[0]
        for op in [o.operation for o in block.operations]:
            if _convertible(op, self.types, self.min_channels):
                if decide(self.pass_name, f"{op.name} {' x '.join(str(v.type) for v in list(op.operands)[:2])} "
                                          f"in NHWC at {short_location(str(op.location))}"):
                    self.conv(op)
            elif op.name in POOLS and self.pools and all(_rank4(v) for v in op.operands[:1]) and self.reaches(op.operands[0]):
                self.pool(op)
            elif op.name == "linalg.generic":
                self.generic(op)
        for op in reversed([o.operation for o in block.operations]):  # the transposes nothing reads, and
            if op.name in DEAD and not any(list(r.uses) for r in op.results):  # the NCHW ops made NHWC
                op.erase()

    def conv(self, op: ir.Operation) -> None:
        x, w, init = op.operands
        self._named(op, "linalg.conv_2d_nhwc_fhwc", self.as_nhwc(x, op), transpose(w, TO_NHWC, op))

    def pool(self, op: ir.Operation) -> None:
        x, window, _ = op.operands
        self._named(op, POOLS[op.name], self.as_nhwc(x, op), window)

    def _named(self, op: ir.Operation, name: str, x: ir.Value, second: ir.Value) -> None:
        """Replace the convolution or pooling `op` by the NHWC op `name` of the same strides and
        dilations over `x` and `second` (the transposed weight, or the window), into `op`'s init
        made NHWC."""
        init = self.as_nhwc(op.operands[2], op)
        strides, dilations = conv_ints(op, "strides"), conv_ints(op, "dilations")
        text = (f"func.func @f(%x: {x.type}, %w: {second.type}, %i: {init.type}) -> {init.type} {{\n"
                f"  %c = {name} {{dilations = dense<{dilations}> : vector<2xi64>, "
                f"strides = dense<{strides}> : vector<2xi64>}} ins(%x, %w : {x.type}, {second.type}) "
                f"outs(%i : {init.type}) -> {init.type}\n"
                f"  return %c : {init.type}\n}}")
        self.replaced(op, [inline_template(text, [x, second, init], op)])

    def generic(self, op: ir.Operation) -> None:
        n_in = _inputs(op)
        maps = _map_texts(op)
        ins = [i for i in range(n_in) if _rank4(op.operands[i]) and self.twin(op.operands[i]) is not None]
        if not ins:
            return
        n_loops = len(ir.ArrayAttr(op.attributes["iterator_types"]))
        outs = list(range(n_in, len(op.operands)))
        elementwise = (n_loops == 4 and "reduction" not in str(op.attributes["iterator_types"])
                       and all(_rank4(op.operands[i]) and map_results(maps[i]) == IDENTITY4 for i in outs)
                       and not all_ops(op, "linalg.index"))
        if not elementwise and not self.fold:
            return
        if not elementwise:  # read the NHWC twins through permuted maps; the results stay as they are
            for i in ins:
                r = map_results(maps[i])
                maps[i] = _map(n_loops, [r[p] for p in TO_NHWC])
                op.operands[i] = self.twin(op.operands[i])
            op.attributes["indexing_maps"] = ir.Attribute.parse(f"[{', '.join(maps)}]")
            widen_sum(op)
            return
        made = op.clone(ir.InsertionPoint(op))
        new_maps = []
        for i, m in enumerate(maps):
            if i in ins and map_results(m) == IDENTITY4:
                made.operands[i] = self.twin(op.operands[i])
                new_maps.append(_map(4, IDENTITY4))
            elif i in outs:
                made.operands[i] = self.as_nhwc(op.operands[i], made)
                new_maps.append(_map(4, IDENTITY4))
            else:
                new_maps.append(_map(4, [re.sub(r"\bd[0-3]\b", lambda d: _RENAME[d.group(0)], r)
                                         for r in map_results(m)]))
        made.attributes["indexing_maps"] = ir.Attribute.parse(f"[{', '.join(new_maps)}]")
        for r in made.results:
            r.set_type(_permuted(r.type, TO_NHWC))
        self.replaced(op, list(made.results))


def transpose(v: ir.Value, perm: tuple[int, ...], before: ir.Operation) -> ir.Value:
    """`v` (rank 4) transposed by `perm`, built before `before`."""
    out = _permuted(v.type, perm)
    text = (f"func.func @f(%x: {v.type}) -> {out} {{\n"
            f"  %e = tensor.empty() : {out}\n"
            f"  %t = linalg.transpose ins(%x : {v.type}) outs(%e : {out}) permutation = [{', '.join(map(str, perm))}]\n"
            f"  return %t : {out}\n}}")
    return inline_template(text, [v], before)


def widen_sum(op: ir.Operation) -> bool:
    """Rewrite a 16-bit sum (a generic with reduction loops whose body adds each input element to
    a bf16/f16 accumulator, from a zero fill: torch-mlir's average pool and mean) to accumulate in
    float32 and round once, as eager does. Why here: read through a channels-last map, the
    reduced dimensions are no longer innermost, IREE sums each output's 49 pixels one after the
    other, and bf16 rounding at every step gave ResNet-50's output 10x eager's error (7.8e-4
    against 6.9e-5 from float64, bench/NOTES.md §49). Returns whether it did."""
    if len(op.results) != 1 or _inputs(op) != 1 or "reduction" not in str(op.attributes["iterator_types"]):
        return False
    out = ir.RankedTensorType(op.results[0].type)
    element = str(out.element_type)
    if element not in ("bf16", "f16") or not out.has_static_shape:
        return False
    block = op.regions[0].blocks[0]
    body = [o.operation for o in block.operations]
    if len(body) != 2 or body[0].name != "arith.addf" or body[1].name != "linalg.yield" or \
            body[1].operands[0] != body[0].results[0] or \
            {_arg_number(v) for v in body[0].operands} != {0, 1}:
        return False
    fill = owner(op.operands[1])
    if fill is None or fill.name != "linalg.fill" or float_literal(fill.operands[0]) != 0.0:
        return False
    x = op.operands[0]
    wide = ir.RankedTensorType.get(out.shape, ir.F32Type.get())
    rank = out.rank
    ident = _map(rank, [f"d{i}" for i in range(rank)])
    parallel = ", ".join(['"parallel"'] * rank)
    iterators = ", ".join(f'"{t}"' for t in re.findall(r"parallel|reduction", str(op.attributes["iterator_types"])))
    text = (f"func.func @f(%x: {x.type}) -> {out} {{\n"
            f"  %z = arith.constant 0.0 : f32\n"
            f"  %e = tensor.empty() : {wide}\n"
            f"  %f = linalg.fill ins(%z : f32) outs(%e : {wide}) -> {wide}\n"
            f"  %s = linalg.generic {{indexing_maps = [{', '.join(_map_texts(op))}], iterator_types = "
            f"[{iterators}]}} ins(%x : {x.type}) outs(%f : {wide}) {{\n"
            f"  ^bb0(%a: {element}, %o: f32):\n"
            f"    %w = arith.extf %a : {element} to f32\n"
            f"    %r = arith.addf %w, %o : f32\n"
            f"    linalg.yield %r : f32\n"
            f"  }} -> {wide}\n"
            f"  %e2 = tensor.empty() : {out}\n"
            f"  %t = linalg.generic {{indexing_maps = [{ident}, {ident}], iterator_types = [{parallel}]}} "
            f"ins(%s : {wide}) outs(%e2 : {out}) {{\n"
            f"  ^bb0(%a: f32, %o: {element}):\n"
            f"    %r = arith.truncf %a : f32 to {element}\n"
            f"    linalg.yield %r : {element}\n"
            f"  }} -> {out}\n"
            f"  return %t : {out}\n}}")
    replace_with_template(op, text, [x])
    return True


def _arg_number(v: ir.Value) -> int:
    return ir.BlockArgument(v).arg_number if isinstance(v, ir.BlockArgument) else -1
