"""fusion-spread-scatters: give a scatter whose updates come straight from a buffer an elementwise
producer, so IREE spreads the scatter over its threads (CUDA).

    %u = tensor.expand_shape %arg2 ... : tensor<128xf32> into tensor<128x1x1x1x1xf32>
    %s = tm_tensor.scatter ins(%u, %idx : ...) outs(%cache : tensor<1x2x64x64xf32>)
  ->
    %u = tensor.expand_shape %arg2 ...
    %p = linalg.generic {parallel x5} ins(%u) outs(tensor.empty()) { %a + 0.0 }
    %s = tm_tensor.scatter ins(%p, %idx : ...) outs(%cache ...)

IREE 3.13 compiles an `iree_linalg_ext.scatter` whose updates it reads from a buffer (a function
argument, a matmul's or a generated kernel's result, through reshapes only) as one loop over the
updates in every thread: no thread index in its PTX, all threads doing the same work. A KV-cache
write `cache.index_copy_(2, pos, v)` of a 0.5B decoder's values took 11.7 us a layer on an H200
that way (bench/NOTES.md §52), 22% of the decode step. With an elementwise producer, IREE fuses
the producer into the scatter's dispatch and distributes both (1.3-1.5 us). `x + 0.0` is the
producer: it is `x` for every value but -0.0 (which becomes +0.0, equal to it) and NaN payloads,
and MLIR does not fold it away (it folds `x + -0.0`, which would leave an identity generic that
canonicalization erases). Updates already made by an elementwise generic (RoPE on the keys) are
left as they are; so are integer updates and dynamic shapes.
"""

from __future__ import annotations

from dataclasses import dataclass

from braze._mlir import ir
from braze.irutil import all_ops, producer_through_reshapes

from ..registry import ModulePass, decide, register
from ..template import inline_template


@register
@dataclass(frozen=True)
class SpreadScattersPass(ModulePass):
    name = "fusion-spread-scatters"
    summary = ("Give each scatter whose updates are read from a buffer an elementwise producer (x + 0.0), "
               "so IREE distributes it over its threads instead of running it as one loop (CUDA)")

    def run(self, module: ir.Operation) -> None:
        found = [op for op in all_ops(module, "tm_tensor.scatter") if _read_from_buffer(op.operands[0])]
        for op in found:
            updates = op.operands[0]
            if decide(self.name, f"scatter of {updates.type} given an elementwise producer"):
                op.operands[0] = inline_template(_producer(ir.RankedTensorType(updates.type)), [updates], op)


def _read_from_buffer(updates: ir.Value) -> bool:
    """True where IREE would read the scatter's float updates from memory as they are: no
    elementwise generic makes them (through the reshapes IREE folds), and their shape is static."""
    t = updates.type
    if not isinstance(t, ir.RankedTensorType) or not ir.RankedTensorType(t).has_static_shape:
        return False
    element = ir.RankedTensorType(t).element_type
    if not any(isinstance(element, c) for c in (ir.F32Type, ir.F16Type, ir.BF16Type, ir.F64Type)):
        return False
    owner = producer_through_reshapes(updates)
    if owner is not None and owner.name == "linalg.generic":
        kinds = [str(k) for k in owner.opview.iterator_types]
        return not all("parallel" in k for k in kinds)  # a reduction is no producer IREE fuses
    return True


def _producer(t: ir.RankedTensorType) -> str:
    """A function of one argument of type `t` returning `x + 0.0`, elementwise."""
    rank = t.rank
    dims = ", ".join(f"d{i}" for i in range(rank))
    identity = f"affine_map<({dims}) -> ({dims})>"
    element = str(t.element_type)
    parallel = ", ".join(['"parallel"'] * rank)
    return (f"func.func @f(%x: {t}) -> {t} {{\n"
            f"  %zero = arith.constant 0.0 : {element}\n"
            f"  %e = tensor.empty() : {t}\n"
            f"  %y = linalg.generic {{indexing_maps = [{identity}, {identity}], iterator_types = "
            f"[{parallel}]}} ins(%x : {t}) outs(%e : {t}) {{\n"
            f"  ^bb0(%a: {element}, %b: {element}):\n"
            f"    %s = arith.addf %a, %zero : {element}\n"
            f"    linalg.yield %s : {element}\n"
            f"  }} -> {t}\n"
            f"  return %y : {t}\n"
            f"}}\n")
