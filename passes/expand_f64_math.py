"""fusion-expand-f64-math: float64 sin, cos, tan, atan, atan2, asin, acos, tanh, log2 and erf
written out in float64 arithmetic, for back ends whose libraries lack them.

    %y = math.sin %x : f64       ->    %k = math.floor(%x * 2/pi + 0.5)
                                       %r = ((%x - %k P1) - %k P2) - %k P3      (Cody-Waite)
                                       %s, %c = Taylor series of sin, cos in %r
                                       %y = select on %k mod 4 ...

IREE 3.13's CPU code generator lowers these f64 math ops to libm calls its runtime library
does not have ("iree-lld: error: undefined symbol: sin"), and f64 math.erf not at all; SPIR-V's
GLSL.std.450 set has them for 16- and 32-bit floats only. The raw toolchain passes its float64
conformance modules by demoting to float32; braze keeps float64 and computes these in float64
(braze.passes.float64_math: the algorithms, their ranges and their errors, at most 7 ulp). Whatever
produced the op counts: a model's torch.sin, torch-mlir's own decompositions (randn's
Box-Muller cos, polar's sin and cos, atan2 of integers in float64).

Runs in the CPU and Vulkan pipelines and in the baseline pipeline for them (CUDA's libdevice has
every one of these); only on scalar f64 ops inside linalg bodies.
"""

from __future__ import annotations

from dataclasses import dataclass

from braze._mlir import ir
from braze.passes.float64_math import EMIT, FUNCTIONS, Emit
from braze.irutil import all_ops

from .registry import ModulePass, register


@register
@dataclass(frozen=True)
class ExpandF64MathPass(ModulePass):
    name = "fusion-expand-f64-math"
    summary = ("Write float64 sin, cos, tan, atan, atan2, asin, acos, tanh, log2 and erf in float64 "
               "arithmetic (IREE's CPU runtime and SPIR-V lack them)")

    def run(self, module: ir.Operation) -> None:
        for op in all_ops(module, FUNCTIONS):
            result = op.results[0]
            if not isinstance(result.type, ir.F64Type):
                continue
            with ir.InsertionPoint(op), op.location:
                value = FUNCTIONS[op.name](EMIT, *(Emit(v) for v in op.operands)).value
            result.replace_all_uses_with(value)
            op.erase()
