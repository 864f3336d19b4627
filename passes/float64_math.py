"""float64 transcendental functions written in float64 arithmetic, for the back ends whose
libraries lack them (the pass fusion-expand-f64-math emits them in place of math.sin & co).

IREE 3.13's CPU code generator lowers float64 sin, cos, tan, atan, atan2, asin, acos, tanh and
log2 to libm calls its runtime library does not have ("iree-lld: error: undefined symbol: sin"),
and math.erf on f64 vectors not at all; SPIR-V's GLSL.std.450 set defines them for 16- and 32-bit
floats only. exp, log, sqrt and floor work in float64 there, so each function here
is range reduction plus a polynomial in those (Horner form, coefficients from their series:
1/n!, 1/(2n+1), no fitted constants):

- sin, cos, tan: x = k pi/2 + r with pi/2 split into three parts (Cody and Waite; the first two
  of 26 bits, so k pi/2 is exact for |k| < 2^27, |x| < 2e8), |r| <= pi/4, Taylor series to r^21
  and r^22 (truncation below 1e-24). Beyond |x| ~ 2e8 the reduction loses digits (no Payne-Hanek).
- atan, atan2, asin, acos: |t| <= 1 by inversion, then for t > 0.2 two half-angle steps
  (atan t = 2 atan(t / (1 + sqrt(1 + t^2)))) to |t| <= tan(pi/16), series to t^25.
- tanh: e / (e + 2) with e = expm1(2|x|) by its series for |x| <= 1/2, 1 - 2 / (exp(2|x|) + 1)
  beyond (|x| clamped at 20: tanh 20 = 1 in float64).
- log2: log(x) / ln 2.
- erf: the series 2/sqrt(pi) exp(-x^2) sum (2x^2)^n x / (1 3 ... (2n+1)), all terms positive, for
  |x| < 2, and erfc's continued fraction (60 terms) beyond.

Each function is written once, with arithmetic operators and the few functions of `ops`
(where, floor, sqrt, abs, exp, log, isnan): `TORCH` runs it on float64 tensors (the
tests compare it with torch's own functions: at most 7 ulp, test_float64_math.py), and the
pass hands it `Emit` values, whose operators build arith and math ops on f64 scalars inside a
linalg body.

Also here: float64 ops whose constants torch-mlir rounds to float32 (rsub, linspace), fixed
on every back end as decompositions before the import.
"""

from __future__ import annotations

import math
from decimal import Decimal, localcontext

_PIO2 = "1.570796326794896619231321691639751442098584699687552910487472"


def _bits(value, bits: int) -> float:
    """`value` (a Decimal) as a double rounded down to `bits` significant bits."""
    m, e = math.frexp(float(value))
    return math.ldexp(math.floor(m * 2 ** bits) / 2 ** bits, e)


with localcontext() as _context:
    _context.prec = 60
    _P1 = _bits(Decimal(_PIO2), 26)
    _P2 = _bits(Decimal(_PIO2) - Decimal(_P1), 26)
    _P3 = float(Decimal(_PIO2) - Decimal(_P1) - Decimal(_P2))
_SIN = [(-1) ** n / math.factorial(2 * n + 1) for n in range(1, 11)]  # r^3 .. r^21
_COS = [(-1) ** n / math.factorial(2 * n) for n in range(1, 12)]  # r^2 .. r^22
_ATAN = [(-1) ** n / (2 * n + 1) for n in range(1, 13)]  # t^3 .. t^25


class _TorchOps:
    """`ops` over torch tensors."""

    @staticmethod
    def where(c, a, b):
        import torch

        return torch.where(c, a, b)

    def __getattr__(self, name):
        import torch

        return getattr(torch, name)


TORCH = _TorchOps()


def _horner(z, coefficients):
    """sum c[i] z^i for i >= 0, where the list holds c[0], c[1], ..."""
    acc = coefficients[-1]
    for c in reversed(coefficients[:-1]):
        acc = acc * z + c
    return acc


def _reduce(ops, x):
    """(quadrant 0..3 as float64, r) with x = k pi/2 + r, |r| <= pi/4, quadrant = k mod 4."""
    k = ops.floor(x * (2.0 / math.pi) + 0.5)
    r = ((x - k * _P1) - k * _P2) - k * _P3
    return k - 4.0 * ops.floor(k * 0.25), r


def _sin_cos(r):
    z = r * r
    return r + r * z * _horner(z, _SIN), 1.0 + z * _horner(z, _COS)


def sin(ops, x):
    q, r = _reduce(ops, x)
    s, c = _sin_cos(r)
    return ops.where(q >= 2.0, -1.0, 1.0) * ops.where((q == 1.0) | (q == 3.0), c, s)


def cos(ops, x):
    q, r = _reduce(ops, x)
    s, c = _sin_cos(r)
    return ops.where((q == 1.0) | (q == 2.0), -1.0, 1.0) * ops.where((q == 1.0) | (q == 3.0), s, c)


def tan(ops, x):
    q, r = _reduce(ops, x)
    s, c = _sin_cos(r)
    return ops.where((q == 1.0) | (q == 3.0), -c / s, s / c)


def _atan_unit(ops, t):
    """atan(t) for 0 <= t <= 1 (NaN passes through)."""
    near = t <= 0.2  # the series alone: the half-angle steps would cost t up to 2 ulp
    for _ in range(2):
        t = ops.where(near, t, t / (1.0 + ops.sqrt(1.0 + t * t)))
    return ops.where(near, 1.0, 4.0) * (t + t * (t * t) * _horner(t * t, _ATAN))


def _negative(x):
    """x < 0, or x is -0.0."""
    return (x < 0.0) | ((x == 0.0) & (1.0 / x < 0.0))


def atan(ops, x):
    a = ops.abs(x)
    big = a > 1.0
    u = _atan_unit(ops, ops.where(big, 1.0 / a, a))
    u = ops.where(big, math.pi / 2 - u, u)
    return ops.where(x < 0.0, -u, u)


def atan2(ops, y, x):
    ay, ax = ops.abs(y), ops.abs(x)
    lo, hi = ops.where(ay < ax, ay, ax), ops.where(ay < ax, ax, ay)
    ratio = ops.where(hi == 0.0, 0.0, lo / hi)
    ratio = ops.where(lo == math.inf, 1.0, ratio)  # atan2(+-inf, +-inf)
    u = _atan_unit(ops, ratio)
    u = ops.where(ay > ax, math.pi / 2 - u, u)
    u = ops.where(_negative(x), math.pi - u, u)
    u = ops.where(_negative(y), -u, u)
    return ops.where(ops.isnan(x) | ops.isnan(y), math.nan, u)


def asin(ops, x):
    return atan2(ops, x, ops.sqrt((1.0 - x) * (1.0 + x)))


def acos(ops, x):
    return 2.0 * atan2(ops, ops.sqrt(1.0 - x), ops.sqrt(1.0 + x))


_EXPM1 = [1.0 / math.factorial(n + 1) for n in range(21)]  # expm1(u) = u (1 + u/2 + u^2/6 + ...)


def tanh(ops, x):
    """|x| <= 0.5: e / (e + 2) with e = expm1(2|x|) from its series (IREE's f64 expm1 is
    exp(u) - 1, which loses digits near 0: 193 ulp); beyond: 1 - 2 / (exp(2|x|) + 1)."""
    a = ops.abs(x)
    u = 2.0 * ops.where(a > 0.5, 0.5, a)
    e = u * _horner(u, _EXPM1)
    near = e / (e + 2.0)
    far = 1.0 - 2.0 / (ops.exp(2.0 * ops.where(a > 20.0, 20.0, a)) + 1.0)
    t = ops.where(a > 0.5, far, near)
    return ops.where(x < 0.0, -t, t)


def log2(ops, x):
    return ops.log(x) * (1.0 / math.log(2.0))


_ERF_TERMS = 60
_ERFC_TERMS = 60


def erf(ops, x):
    a = ops.abs(x)
    # |x| < 2: 2/sqrt(pi) e^{-x^2} |x| sum_n (2x^2)^n / (1 3 5 ... (2n+1)), every term positive
    # (from 2 to 3 its roundings reach 9 ulp; the continued fraction has converged to 1 there)
    small = ops.where(a > 2.0, 2.0, a)
    zs = small * small
    acc = 1.0
    for n in range(_ERF_TERMS, 0, -1):
        acc = 1.0 + acc * (zs * (2.0 / (2 * n + 1)))
    series = (2.0 / math.sqrt(math.pi)) * ops.exp(-zs) * small * acc
    # |x| >= 2: erfc(a) = e^{-a^2} / sqrt(pi) / (a + (1/2) / (a + 1 / (a + (3/2) / (a + ...))))
    big = ops.where(a < 2.0, 2.0, a)
    frac = big
    for n in range(_ERFC_TERMS, 0, -1):
        frac = big + (n / 2.0) / frac
    tail = 1.0 - ops.exp(-(big * big)) / (math.sqrt(math.pi) * frac)
    result = ops.where(a < 2.0, series, tail)
    result = ops.where(ops.isnan(x), x, result)
    return ops.where(x < 0.0, -result, result)


FUNCTIONS = {"math.sin": sin, "math.cos": cos, "math.tan": tan, "math.atan": atan, "math.atan2": atan2,
             "math.asin": asin, "math.acos": acos, "math.tanh": tanh, "math.log2": log2, "math.erf": erf}
"""What fusion-expand-f64-math writes out, by the math op it replaces."""


class Emit:
    """An f64 (or i1) scalar SSA value whose Python operators build arith ops at the current
    insertion point; plain floats become arith.constant."""

    __hash__ = None

    def __init__(self, value):
        self.value = value

    @staticmethod
    def of(v) -> "Emit":
        if isinstance(v, Emit):
            return v
        from braze._mlir import arith, ir

        f64 = ir.F64Type.get()
        return Emit(arith.ConstantOp(f64, ir.FloatAttr.get(f64, float(v))).result)

    def _binary(self, other, op, swap=False):
        a, b = (Emit.of(other), self) if swap else (self, Emit.of(other))
        return Emit(op(a.value, b.value).result)

    def __add__(self, o):
        from braze._mlir import arith
        return self._binary(o, arith.AddFOp)

    def __radd__(self, o):
        from braze._mlir import arith
        return self._binary(o, arith.AddFOp, swap=True)

    def __sub__(self, o):
        from braze._mlir import arith
        return self._binary(o, arith.SubFOp)

    def __rsub__(self, o):
        from braze._mlir import arith
        return self._binary(o, arith.SubFOp, swap=True)

    def __mul__(self, o):
        from braze._mlir import arith
        return self._binary(o, arith.MulFOp)

    def __rmul__(self, o):
        from braze._mlir import arith
        return self._binary(o, arith.MulFOp, swap=True)

    def __truediv__(self, o):
        from braze._mlir import arith
        return self._binary(o, arith.DivFOp)

    def __rtruediv__(self, o):
        from braze._mlir import arith
        return self._binary(o, arith.DivFOp, swap=True)

    def __neg__(self):
        from braze._mlir import arith
        return Emit(arith.NegFOp(self.value).result)

    def _compare(self, other, predicate: str):
        from braze._mlir import arith
        return Emit(arith.CmpFOp(getattr(arith.CmpFPredicate, predicate), self.value, Emit.of(other).value).result)

    def __lt__(self, o):
        return self._compare(o, "OLT")

    def __le__(self, o):
        return self._compare(o, "OLE")

    def __gt__(self, o):
        return self._compare(o, "OGT")

    def __ge__(self, o):
        return self._compare(o, "OGE")

    def __eq__(self, o):
        return self._compare(o, "OEQ")

    def __and__(self, o):
        from braze._mlir import arith
        return Emit(arith.AndIOp(self.value, o.value).result)

    def __or__(self, o):
        from braze._mlir import arith
        return Emit(arith.OrIOp(self.value, o.value).result)


class _EmitOps:
    """`ops` over Emit values: arith.select, math.floor/sqrt/absf/exp/log, and cmpf uno."""

    @staticmethod
    def where(c, a, b):
        from braze._mlir import arith
        return Emit(arith.SelectOp(c.value, Emit.of(a).value, Emit.of(b).value).result)

    @staticmethod
    def _unary(name, x):
        from braze._mlir import math as math_d
        return Emit(getattr(math_d, name)(x.value).result)

    def floor(self, x):
        return self._unary("FloorOp", x)

    def sqrt(self, x):
        return self._unary("SqrtOp", x)

    def abs(self, x):
        return self._unary("AbsFOp", x)

    def exp(self, x):
        return self._unary("ExpOp", x)

    def log(self, x):
        return self._unary("LogOp", x)

    @staticmethod
    def isnan(x):
        from braze._mlir import arith
        return Emit(arith.CmpFOp(arith.CmpFPredicate.UNO, x.value, x.value).result)


EMIT = _EmitOps()


def rsub(x, other, alpha=1):
    """other - alpha x as (-alpha x) + other: torch-mlir 20261001 lowers aten.rsub.Scalar on a
    float64 tensor with the scalar rounded to float32 (`math.pi / 2 - x` off by 4.4e-8)."""
    import torch

    if not _f64(x) or isinstance(other, torch.Tensor):
        return NotImplemented
    return torch.add(torch.neg(x) if alpha == 1 else x * (-alpha), other)


def linspace(start, end, steps, *, dtype=None, layout=None, device=None, pin_memory=None):
    """torch's own decomposition (torch-mlir 20261001 computes a float64 linspace's step in
    float32: 8.7e-8 off for linspace(0, pi, 16))."""
    import torch
    from torch._decomp import decomposition_table

    if dtype != torch.float64 or any(isinstance(v, torch.Tensor) for v in (start, end)):
        return NotImplemented
    return decomposition_table[torch.ops.aten.linspace.default](start, end, steps, dtype=dtype, layout=layout,
                                                                 device=device, pin_memory=pin_memory)


def _f64(x) -> bool:
    import torch

    return isinstance(x, torch.Tensor) and x.dtype == torch.float64


def constant_decompositions() -> dict:
    """float64 ops whose constants torch-mlir rounds to float32, on every back end."""
    import torch

    aten = torch.ops.aten
    return {aten.rsub.Scalar: rsub, aten.linspace.default: linspace}
