"""fusion-expand-erf: compute erf as one rational function instead of IREE's piecewise one.

    %q = arith.divf %in, %sqrt2 : f32            %q = arith.mulf %in, %rsqrt2 : f32     (1/sqrt 2)
    %e = math.erf %q : f32               ->      %c = clamp(%q, -3.92, 3.92)
                                                 %s = %c * %c
                                                 %p = fma(fma(...), %s, P0)  (degree 6 in s)
                                                 %r = fma(fma(...), %s, Q0)  (degree 5 in s)
                                                 %e = clamp(%c * %p / %r, -1, 1)

IREE 3.13 lowers math.erf with MLIR's polynomial approximation: three intervals of |x|, each
with its own rational coefficients, picked per element by selects. On the CPU that is most of
a LayerNorm + GELU: the normalization + GELU dispatch of the bench's LayerNorm + GELU had 144
vblendvps and 211 vbroadcastss for its coefficients and 18 vdivps (bench/NOTES.md §31). This
pass writes every f32 math.erf in a linalg body as erf(x) = x P(x^2) / Q(x^2) on x clamped to
±3.92 (beyond it erf rounds to ±1 in f32), one set of coefficients, Horner in math.fma: no
selects but the two clamps, one division.

Accuracy (float32, against float64 erf on 4M points of [-6, 6]): max abs error 3.5e-7, about
6 ulp of 1 (the float32 roundings of the evaluation; the function itself is within 4.7e-9
relative of erf), against IREE's 2.6e-7 and torch's CPU erf 3.2e-8; erf(-x) = -erf(x)
exactly, erf(-0) = -0 (IREE's gives +0), |erf| <= 1, NaN stays NaN (the clamps are ordered
compare + select). The coefficients are a least-squares fit on the relative error
(`bench/experiments/erf_fit.py` prints them and these errors). The price is near saturation:
for |x| in [2.5, 3.9] the error stays about 3e-7 where IREE's third interval has 0.4-1.4e-7,
and 1 + erf(x) (GELU's negative tail, x < -3.5 there) keeps fewer correct digits. A second
piece of the form 1 + P(u)/Q(u) for |x| >= 2 brought the tail to 5.8e-8 but gave back most
of the speed (bench/NOTES.md §31).

Measured (one thread, this 2-core EPYC, `bench/experiments/cpu_erf.py`): the bench's LayerNorm
+ GELU 18.6 -> 13.5 ms.

A `divf x, sqrt(2)` whose only users are erfs becomes `mulf x, 1/sqrt(2)`: GELU's erf(x/√2),
as torch-mlir imports it, where eager multiplies by M_SQRT1_2; a division per element fewer.

bf16 and f16 erf are computed in f32 (extf, the same expansion, truncf), as IREE does.
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass

from braze._mlir import arith, ir
from braze._mlir import math as math_d
from braze.irutil import all_ops

from ..registry import ModulePass, decide, option, register

CLAMP = 3.92
"""|x| beyond which f32 erf(x) is ±1 (erf(3.92) = 1 - 5.2e-9); the fit's interval is [0, CLAMP]."""

P = (1.1283791691143037, 0.1850716624671825, 0.05421436749436482, 0.003833366759239607,
     0.00037578191515039074, 4.583752407787828e-06, -1.2658264714193734e-08)
"""Numerator coefficients, in powers of s = x^2 (P[0] = 2/sqrt(pi) to 9 digits)."""

Q = (1.0, 0.49734889556151557, 0.1138287253223043, 0.015415996911248453, 0.0012991633845695284,
     6.216145218971951e-05)
"""Denominator coefficients, in powers of s."""


@register
@dataclass(frozen=True)
class ExpandErfPass(ModulePass):
    name = "fusion-expand-erf"
    summary = ("Write math.erf as one clamped rational function x*P(x^2)/Q(x^2) (IREE's picks "
               "coefficients per element with selects), and x/sqrt(2) feeding it as x*(1/sqrt(2))")

    rational: bool = option(True, "Expand erf (false: only the division by sqrt(2) becomes a multiplication)")

    def run(self, module: ir.Operation) -> None:
        for op in [op for op in all_ops(module) if op.name == "math.erf" and _in_body(op)]:
            kind = op.results[0].type
            if not isinstance(kind, (ir.F32Type, ir.BF16Type, ir.F16Type)):
                continue
            if not self.rational:
                _scaled_input(op.operands[0])
                continue
            if not decide(self.name, f"erf ({kind}) at {op.location}: rational, one interval"):
                continue
            _expand(op)


def _in_body(op: ir.Operation) -> bool:
    """Whether op is a scalar op inside a linalg (or other) region, not on tensors."""
    return not isinstance(op.results[0].type, ir.ShapedType)


def _expand(op: ir.Operation) -> None:
    f32 = ir.F32Type.get()
    kind = op.results[0].type
    with ir.InsertionPoint(op), op.location:
        x = _scaled_input(op.operands[0])
        if kind != f32:
            x = arith.ExtFOp(f32, x).result
        c = lambda v: arith.ConstantOp(f32, ir.FloatAttr.get(f32, v)).result  # noqa: E731
        x = _clamp(x, c(-CLAMP), c(CLAMP))
        s = arith.MulFOp(x, x).result
        p = _horner(P, s, c)
        q = _horner(Q, s, c)
        y = arith.DivFOp(arith.MulFOp(x, p).result, q).result
        y = _clamp(y, c(-1.0), c(1.0))
        if kind != f32:
            y = arith.TruncFOp(kind, y).result
    op.results[0].replace_all_uses_with(y)
    op.erase()


def _horner(coefficients: tuple[float, ...], s: ir.Value, c) -> ir.Value:
    acc = c(coefficients[-1])
    for k in reversed(coefficients[:-1]):
        acc = math_d.FmaOp(acc, s, c(k)).result
    return acc


def _clamp(x: ir.Value, low: ir.Value, high: ir.Value) -> ir.Value:
    """min(max(x, low), high) as ordered compares and selects: NaN passes through (where
    arith.minnumf would return the bound), and LLVM emits one vmaxps/vminps for each."""
    x = arith.SelectOp(arith.CmpFOp(arith.CmpFPredicate.OLT, x, low).result, low, x).result
    return arith.SelectOp(arith.CmpFOp(arith.CmpFPredicate.OGT, x, high).result, high, x).result


def _scaled_input(value: ir.Value) -> ir.Value:
    """erf's operand, with `divf v, sqrt(2)` spelled `mulf v, 1/sqrt(2)` where the division is
    f32, by the f32 constant sqrt(2), and has only erfs as users (GELU's erf(x / sqrt 2))."""
    div = value.owner if isinstance(value, ir.OpResult) else None
    if div is None or div.name != "arith.divf" or not isinstance(value.type, ir.F32Type):
        return value
    divisor = div.operands[1].owner if isinstance(div.operands[1], ir.OpResult) else None
    if divisor is None or divisor.name != "arith.constant":
        return value
    attr = divisor.attributes["value"]
    if not isinstance(attr, ir.FloatAttr) or ir.FloatAttr(attr).value != _f32(math.sqrt(2.0)):
        return value
    if any(use.owner.name != "math.erf" for use in value.uses):
        return value
    f32 = ir.F32Type.get()
    with ir.InsertionPoint(div), div.location:
        half = arith.ConstantOp(f32, ir.FloatAttr.get(f32, math.sqrt(0.5))).result
        scaled = arith.MulFOp(div.operands[0], half).result
    value.replace_all_uses_with(scaled)
    div.erase()
    return scaled


def _f32(v: float) -> float:
    return struct.unpack("f", struct.pack("f", v))[0]

