"""The `fusion` dialect: a group of ops that will become one kernel.

    %g = "fusion.group"(%a, %b) ({
    ^bb0(%x: tensor<4xf32>, %y: tensor<4xf32>):
      %0 = linalg.add ins(%x, %y ...) ...
      %1 = linalg.exp ins(%0 ...) ...
      "fusion.yield"(%1) : (tensor<4xf32>) -> ()
    }) {kind = "elementwise", label = "group0"} : (...) -> tensor<4xf32>

Defined with MLIR's Python dialect API (IRDL underneath), so it is a real, verified
dialect in the front-end context. Ops print in generic form. `fusion.irdl.mlir` beside
this file is `emit_irdl()`'s output; a test fails when the two drift.
"""
# No `from __future__ import annotations`: the dialect API reads field annotations as types.


from pathlib import Path
from typing import Any, Sequence

from braze._mlir import dialect_ext, ir

Operand = dialect_ext.Operand
Result = dialect_ext.Result
Region = dialect_ext.Region

KINDS = ("elementwise", "reduction", "contraction-epilogue")
"""Values the `kind` attribute may take."""

SIDE_EFFECT_FREE_DIALECTS = ("arith", "math", "tensor", "linalg", "fusion", "complex")
"""Dialects whose ops on tensors have no side effects. MLIR's Python API cannot query
MemoryEffectOpInterface, so the verifier decides by dialect; linalg ops additionally
must have tensor (not memref) operands."""

IRDL_PATH = Path(__file__).with_name("fusion.irdl.mlir")


class Fusion(dialect_ext.Dialect, name="fusion"):
    pass


def _is_side_effect_free(op: ir.Operation) -> bool:
    dialect = op.name.split(".", 1)[0]
    if dialect not in SIDE_EFFECT_FREE_DIALECTS:
        return False
    if dialect == "linalg":
        return not any(isinstance(v.type, ir.MemRefType) for v in op.operands)
    return True


class GroupOp(Fusion.Operation, name="group"):
    """A subgraph that becomes one kernel: operands in, results out, one block inside."""

    inputs: Sequence[Operand[Any]]
    kind: ir.StringAttr
    label: ir.StringAttr
    outputs: Sequence[Result[Any]] = dialect_ext.result(kw_only=True)
    body: Region

    def verify_invariants(self) -> bool:
        op = self.operation
        loc = op.location
        kind = ir.StringAttr(op.attributes["kind"]).value
        if kind not in KINDS:
            loc.emit_error(f"'fusion.group' kind \"{kind}\" is not one of {', '.join(KINDS)}")
            return False
        region = op.regions[0]
        blocks = list(region.blocks)
        if len(blocks) != 1:
            loc.emit_error(f"'fusion.group' region must have exactly one block, found {len(blocks)}")
            return False
        block = blocks[0]
        arg_types = [a.type for a in block.arguments]
        in_types = [v.type for v in op.operands]
        if arg_types != in_types:
            loc.emit_error(
                "'fusion.group' block arguments must match its operands: "
                f"({_types(arg_types)}) vs ({_types(in_types)})"
            )
            return False
        ops = list(block.operations)
        if not ops or ops[-1].name != "fusion.yield":
            loc.emit_error("'fusion.group' region must end in 'fusion.yield'")
            return False
        yielded = [v.type for v in ops[-1].operands]
        out_types = [r.type for r in op.results]
        if yielded != out_types:
            loc.emit_error(
                "'fusion.yield' operands must match the group's results: "
                f"({_types(yielded)}) vs ({_types(out_types)})"
            )
            return False
        for inner in ops[:-1]:
            if not _is_side_effect_free(inner.operation):
                loc.emit_error(
                    f"'fusion.group' may only hold side-effect-free ops, found '{inner.operation.name}'"
                )
                return False
        return True


class YieldOp(Fusion.Operation, name="yield", traits=[ir.IsTerminatorTrait]):
    """Terminates a group's region; its operands are the group's results."""

    values: Sequence[Operand[Any]]

    def verify_invariants(self) -> bool:
        parent = self.operation.parent
        if parent is None or parent.name != "fusion.group":
            self.operation.location.emit_error("'fusion.yield' must be inside a 'fusion.group'")
            return False
        return True


def _types(types: list) -> str:
    return ", ".join(str(t) for t in types)


def load() -> None:
    """Load the dialect into the current context (once; later calls are no-ops)."""
    if ir.Context.current.is_dialect_loaded(Fusion.DIALECT_NAMESPACE):
        return
    Fusion.load()


def emit_irdl() -> str:
    """The IRDL definition of the dialect as text, for `--irdl-file=` in other MLIR tools."""
    with ir.Context(), ir.Location.unknown():
        return str(Fusion._emit_module())
