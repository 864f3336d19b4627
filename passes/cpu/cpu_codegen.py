"""fusion-cpu-codegen: choose how IREE's llvm-cpu back end compiles the module's contractions.

    module {                                   module attributes {braze.data_tiling =
      %w = arith.constant dense<...>             "linalg.matmul 64x512x512 reads a constant operand"} {
      %y = linalg.matmul ins(%x, %w ...)   ->    (the ops unchanged)
    }

IREE 3.13's llvm-cpu back end compiles a matmul as it stands, in a row-major loop nest, unless
data tiling is on (`--iree-opt-data-tiling=true`, off by default in 3.13): then each operand is
packed into tiles of the host's vector width (pack/unpack dispatches) and the product is
IREE's `mmt4d` microkernel (`--iree-llvmcpu-enable-ukernels=all`). A constant operand (a
Linear's weight, a convolution's after fusion-conv-to-matmul) is packed once, when the module
is loaded, so only the activations pay for packing. Measured on a 2-core EPYC (AVX2, one
thread; bench/NOTES.md §24, `bench/experiments/cpu_contractions.py`): the GELU MLP 0.69x ->
1.10x of eager, the BERT layer 0.79x -> 1.00x, ResNet-18 (with its convolutions as matmuls)
0.17x -> 1.13x. Where no contraction has a constant operand (attention alone: both products
are of activations), packing is paid on both sides every call and it lost (0.77x -> 0.64x).

So, with `data-tiling=auto` (the default), data tiling is on when some contraction reads an
operand computed from constants only; the module attribute `braze.data_tiling` names it, and
braze.compile turns it into IREE's flags (`backend.data_tiling_flags`). `on` and `off` force it.
The choice is a decision (`compile(decision_limit=)` can bisect it).

`reassociate=auto` (the default) also lets IREE reassociate float reductions
(`--iree-llvmcpu-reassociate-fp-reductions`, off by default in 3.13) wherever the module reduces
floats (a sum, a maximum, a contraction): without it IREE reduces each 16-wide vector step by
step in scalar code, a chain of dependent adds (400 vaddss in LayerNorm + GELU's one dispatch,
256 vmaxss + 256 vcmpunordss in the bench attention's softmax). With it, side by side in one
run (bench/NOTES.md §39): LayerNorm + GELU 5.08 -> 3.46 ms on a 2-core EPYC at one thread, 6.47
-> 3.67 on a 16-core Xeon at one thread and 1.13 -> 0.52 at 16; at 16 threads there also the
TransformerEncoderLayer 2.87 -> 2.50, BERT 2.50 -> 2.13, ResNet-18 4.33 -> 3.55; no workload
slower beyond the noise. (Session 12 had seen LayerNorm + GELU slower with it, 10.1 -> 13.2 ms,
when IREE formed three dispatches there; §34 then chose it only for a maximum.) Reassociated
sums round differently, as torch's own vectorized CPU sums do, and are tree sums: the errors
against float64 fell (LayerNorm + GELU 7.0e-7 -> 3.5e-7). The module attribute
`braze.reassociate_reductions` names the first reduction found.

`channels-last=auto` (the default) has IREE compute the convolutions braze leaves in NCHW
(IREE's direct convolution, fusion-conv-to-matmul's direct-pixels rule on AVX-512 CPUs) in
channels-last layout: IREE's preprocessing pass `iree-preprocessing-convert-conv-to-channels-last`
puts transposes around each (the weights' are folded, the activations' fused into neighbouring
dispatches), and its NHWC convolution code vectorizes along the channels. Measured one thread on
a 2-core EPYC with AVX-512 (bench/NOTES.md §39): conv + BN + ReLU 3.00 -> 2.26 ms (eager 2.58),
ResNet-18 16.5 -> 13.7; 3x3 convolutions at 56x56, 28x28 and 14x14 2.86/3.52/3.33 -> 2.18/2.27/2.26
ms (eager 2.22/2.28/2.31); depthwise, grouped and pooling unchanged. The module attribute
`braze.channels_last` names the convolution; braze.compile turns it into the preprocessing
flag unless the user passes a preprocessing pipeline of their own.
"""

from __future__ import annotations

from dataclasses import dataclass

from braze._mlir import ir
from braze.irutil import all_ops, producer_through_reshapes

from ..gpu.configs import IM2COL_ATTR
from ..registry import ModulePass, decide, one_of, option, register

DATA_TILING_ATTR = "braze.data_tiling"
"""String attribute on the module: data tiling is on, and why (the contraction that asked for it)."""

CHANNELS_LAST_ATTR = "braze.channels_last"
"""String attribute on the module: IREE converts its NCHW convolutions to channels-last, and why."""

MMT4D_TILES_ATTR = "braze.mmt4d_tiles"
"""String attribute on the module, with data tiling: how braze configures IREE's float32 mmt4d
dispatches (braze.compiler.cpu_tiles: auto, microkernel or loops); absent for IREE's own tiles."""

REASSOCIATE_ATTR = "braze.reassociate_reductions"
"""String attribute on the module: IREE may reassociate float reductions, and why (the first one found)."""

_FLOAT_COMBINERS = ("arith.addf", "arith.maximumf", "arith.maxnumf", "arith.minimumf", "arith.minnumf", "arith.mulf")
"""Body ops that make a linalg reduction a float reduction whose order IREE's flag frees."""

_REDUCING_NAMED = ("linalg.conv_", "linalg.depthwise_conv_", "linalg.pooling_", "linalg.reduce")
"""Named linalg ops (besides CONTRACTIONS) that reduce."""

CONTRACTIONS = ("linalg.matmul", "linalg.batch_matmul", "linalg.matmul_transpose_a", "linalg.matmul_transpose_b",
                "linalg.batch_matmul_transpose_a", "linalg.batch_matmul_transpose_b", "linalg.vecmat",
                "linalg.matvec", "linalg.batch_matvec")

_SOURCES = ("arith.constant", "tensor.empty", "ml_program.global_load_const")


@register
@dataclass(frozen=True)
class CpuCodegenPass(ModulePass):
    name = "fusion-cpu-codegen"
    summary = ("Choose IREE llvm-cpu data tiling (packed operands, mmt4d microkernels) for the "
               "module's contractions: on where one reads a constant operand")

    data_tiling: str = option("auto", "auto (where a contraction reads a constant operand), on, off",
                              check=one_of("auto", "on", "off"))

    reassociate: str = option("auto", "IREE's reassociation of float reductions: auto (where the module reduces "
                                      "floats: a sum, a maximum, a contraction), on, off",
                              check=one_of("auto", "on", "off"))

    channels_last: str = option("auto", "IREE's conversion of NCHW convolutions to channels-last: auto (where a "
                                        "static linalg.conv_2d_nchw_fchw remains), on, off",
                                check=one_of("auto", "on", "off"))

    mmt4d_tiles: str = option("auto", "With data tiling, the tiles of IREE's float32 mmt4d dispatches: auto (by the "
                                      "target CPU), iree (IREE's own), microkernel or loops (braze's workgroups of "
                                      "128 rows with IREE's microkernel or its vectorised loops)",
                              check=one_of("auto", "iree", "microkernel", "loops"))

    def run(self, module: ir.Operation) -> None:
        for attr in (DATA_TILING_ATTR, REASSOCIATE_ATTR, CHANNELS_LAST_ATTR, MMT4D_TILES_ATTR):
            if attr in module.attributes:
                del module.attributes[attr]
        if self.channels_last != "off":
            why = "forced (channels-last=on)" if self.channels_last == "on" else _nchw_convolution(module)
            if why and decide(self.name, f"convolutions channels-last: {why}"):
                module.attributes[CHANNELS_LAST_ATTR] = ir.StringAttr.get(why)
        if self.reassociate != "off":
            why = "forced (reassociate=on)" if self.reassociate == "on" else _float_reduction(module)
            if why and decide(self.name, f"reassociate float reductions: {why}"):
                module.attributes[REASSOCIATE_ATTR] = ir.StringAttr.get(why)
        if self.data_tiling == "off":
            return
        why = "forced (data-tiling=on)" if self.data_tiling == "on" else _constant_contraction(module)
        if why and decide(self.name, f"data tiling: {why}"):
            module.attributes[DATA_TILING_ATTR] = ir.StringAttr.get(why)
            if self.mmt4d_tiles != "iree":
                module.attributes[MMT4D_TILES_ATTR] = ir.StringAttr.get(self.mmt4d_tiles)


def _constant_contraction(module: ir.Operation) -> str:
    """The first contraction with an operand computed from constants only, described; '' if none."""
    constant: dict[ir.Value, bool] = {}
    for op in all_ops(module):
        if not op.results:
            continue
        known = op.name in _SOURCES or (bool(op.operands) and all(constant.get(v, False) for v in op.operands))
        for r in op.results:
            constant[r] = known
        if _is_contraction(op) and not _grouped_im2col(op):
            inputs = list(op.operands)[:2]
            if any(constant.get(v, False) for v in inputs):
                return f"{op.name} ({', '.join(str(v.type) for v in inputs)}) reads a constant operand"
    return ""


def _grouped_im2col(op: ir.Operation) -> bool:
    """Whether `op` is the batch matmul of a grouped convolution's im2col (fusion-conv-to-matmul
    grouped=true): packing made those 2.2x slower (a [4, 16, 144] weight against 3136 columns:
    2.94 ms packed, 1.33 as IREE's loops), so they do not ask for data tiling."""
    if op.name != "linalg.batch_matmul":
        return False
    return any((p := producer_through_reshapes(v)) is not None and IM2COL_ATTR in p.attributes
               for v in list(op.operands)[:2])


def _nchw_convolution(module: ir.Operation) -> str:
    """The first static NCHW 2-D convolution (IREE's direct one), described; '' if none."""
    for op in all_ops(module, "linalg.conv_2d_nchw_fchw"):
        types = [ir.RankedTensorType(v.type) for v in list(op.operands)[:3]]
        if all(t.has_static_shape for t in types):
            return f"{op.name} ({', '.join(str(t) for t in types[:2])})"
    return ""


def _float_reduction(module: ir.Operation) -> str:
    """The first linalg op that reduces floats (a reduction whose body combines floats, a
    contraction, a convolution or a pooling), described; '' if none."""
    for op in all_ops(module):
        name = op.name
        if not name.startswith("linalg.") or not op.results:
            continue
        if name == "linalg.generic":
            if "reduction" not in str(op.attributes["iterator_types"]):
                continue
            combiners = [o.name for o in op.regions[0].blocks[0].operations if o.name in _FLOAT_COMBINERS]
            if not combiners:
                continue
            found = combiners[-1]  # the one that meets the accumulator: a matmul's addf after its mulf
            what = f"a {found} reduction"
        elif name in CONTRACTIONS or name.startswith(_REDUCING_NAMED):
            what = f"a {name}"
        else:
            continue
        ty = op.results[0].type
        if isinstance(ty, ir.ShapedType) and isinstance(ir.ShapedType(ty).element_type, ir.FloatType):
            return f"{what} of {op.operands[0].type}"
    return ""


def _is_contraction(op: ir.Operation) -> bool:
    if op.name in CONTRACTIONS:
        return True
    if op.name != "linalg.generic" or "reduction" not in str(op.attributes["iterator_types"]):
        return False
    g = op.opview
    if len(list(g.inputs)) != 2:
        return False
    body = [o.operation.name for o in g.regions[0].blocks[0].operations]
    return any(n in body for n in ("arith.mulf", "arith.muli")) and any(n in body for n in ("arith.addf", "arith.addi"))

