"""The `fusion` dialect: a group of ops that will become one kernel.

    %g = "fusion.group"(%a, %b) ({
    ^bb0(%x: tensor<4xf32>, %y: tensor<4xf32>):
      %0 = linalg.add ins(%x, %y ...) ...
      %1 = linalg.exp ins(%0 ...) ...
      "fusion.yield"(%1) {operandSegmentSizes = ...} : (tensor<4xf32>) -> ()
    }) {kind = "elementwise", label = "group0", operandSegmentSizes = ..., resultSegmentSizes = ...}

Each input and result of a group is an optional operand slot of its own (see GroupOp for
why), so groups print their `operandSegmentSizes`/`resultSegmentSizes`.

Defined with MLIR's Python dialect API (IRDL underneath), so it is a real, verified
dialect in the front-end context. Ops print in generic form. `fusion.irdl.mlir` beside
this file is `emit_irdl()`'s output; a test fails when the two drift.
"""
# No `from __future__ import annotations`: the dialect API reads field annotations as types.


from pathlib import Path
from typing import Any, Optional

from braze._mlir import dialect_ext, ir

Operand = dialect_ext.Operand
Result = dialect_ext.Result
Region = dialect_ext.Region

KINDS = ("elementwise", "reduction", "contraction-epilogue")
"""Values the `kind` attribute may take."""

UNFUSED_ATTR = "fusion.unfused"
"""Discardable attribute on an op that fusion-form-groups left apart from a producer:
{"<operand number>" = "<why>"}, read by fusion-report, dropped by fusion-lower-to-linalg."""

SIDE_EFFECT_FREE_DIALECTS = ("arith", "math", "tensor", "linalg", "fusion", "complex")
"""Dialects whose ops on tensors have no side effects. MLIR's Python API cannot query
MemoryEffectOpInterface, so the verifier decides by dialect; linalg ops additionally
must have tensor (not memref) operands."""

IRDL_PATH = Path(__file__).with_name("fusion.irdl.mlir")


class Fusion(dialect_ext.Dialect, name="fusion"):
    pass


def new_context() -> ir.Context:
    """A context with every upstream dialect registered and the fusion dialect loaded: where
    braze's front end, passes and braze-opt build IR."""
    ctx = ir.Context()
    with ctx:
        load()
    return ctx


def _is_side_effect_free(op: ir.Operation) -> bool:
    dialect = op.name.split(".", 1)[0]
    if dialect not in SIDE_EFFECT_FREE_DIALECTS:
        return False
    if dialect == "linalg":
        return not any(isinstance(v.type, ir.MemRefType) for v in op.operands)
    return True


MAX_INPUTS = 16
"""Operand slots of `fusion.group`; form-groups never builds a group with more inputs."""
MAX_RESULTS = 8
"""Result slots of `fusion.group`."""

# IRDL verifies every value of one variadic operand (or result) list against one constraint
# variable, and a constraint variable unifies: all values of a variadic must have the SAME
# type. A group's inputs differ in shape and dtype, so each input and result is an optional
# slot of its own (its own `irdl.any`), and `operandSegmentSizes`/`resultSegmentSizes` say
# which slots are used: the first N.
_slots: dict = {"__annotations__": {"kind": ir.StringAttr, "label": ir.StringAttr}}
for _i in range(MAX_INPUTS):
    _slots["__annotations__"][f"input{_i}"] = Optional[Operand[Any]]
    _slots[f"input{_i}"] = None
for _i in range(MAX_RESULTS):
    _slots["__annotations__"][f"output{_i}"] = Optional[Result[Any]]
    _slots[f"output{_i}"] = None
_slots["__annotations__"]["body"] = Region


def _slot_sizes(used: int, slots: int) -> ir.DenseI32ArrayAttr:
    """Segment sizes that use the first `used` of `slots` optional operand (or result) slots."""
    return ir.DenseI32ArrayAttr.get([1] * used + [0] * (slots - used))


def _slots_ok(op: ir.Operation, what: str, name: str, count: int, per: str) -> bool:
    """Whether `op`'s segment attribute `name` uses exactly its first `count` slots."""
    if name not in op.attributes:
        op.location.emit_error(f"{what} needs the attribute {name} (one slot per {per})")
        return False
    sizes = list(ir.DenseI32ArrayAttr(op.attributes[name]))
    if sizes != list(_slot_sizes(count, len(sizes))):
        op.location.emit_error(f"{what} must use its first {count} slots of {name}, got {sizes}")
        return False
    return True


def _verify_group(self) -> bool:
    op = self.operation
    loc = op.location
    for name in ("kind", "label"):
        if name not in op.attributes or not isinstance(op.attributes[name], ir.StringAttr):
            loc.emit_error(f"'fusion.group' requires a string attribute '{name}'")
            return False
    kind = ir.StringAttr(op.attributes["kind"]).value
    if kind not in KINDS:
        loc.emit_error(f"'fusion.group' kind \"{kind}\" is not one of {', '.join(KINDS)}")
        return False
    for name, count in (("operandSegmentSizes", len(op.operands)), ("resultSegmentSizes", len(op.results))):
        if not _slots_ok(op, "'fusion.group'", name, count, "input/result"):
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


_slots["verify_invariants"] = _verify_group
_slots["__doc__"] = "A subgraph that becomes one kernel: operands in, results out, one block inside."
GroupOpDef = type("GroupOpDef", (Fusion.Operation,), _slots, name="group")


def GroupOp(inputs, kind, label, *, outputs, loc=None, ip=None) -> ir.OpView:
    """Build a `fusion.group` with `inputs` (values), `kind`/`label` (StringAttr or str) and
    result types `outputs`; its region is empty (append one block)."""
    inputs, outputs = list(inputs), list(outputs)
    if len(inputs) > MAX_INPUTS or len(outputs) > MAX_RESULTS:
        raise ValueError(
            f"a fusion.group holds at most {MAX_INPUTS} inputs and {MAX_RESULTS} results, "
            f"got {len(inputs)} and {len(outputs)}"
        )
    attrs = {
        "kind": kind if isinstance(kind, ir.Attribute) else ir.StringAttr.get(kind),
        "label": label if isinstance(label, ir.Attribute) else ir.StringAttr.get(label),
        "operandSegmentSizes": _slot_sizes(len(inputs), MAX_INPUTS),
        "resultSegmentSizes": _slot_sizes(len(outputs), MAX_RESULTS),
    }
    return ir.Operation.create(
        "fusion.group", results=outputs, operands=inputs, attributes=attrs, regions=1, loc=loc, ip=ip
    ).opview


def _verify_yield(self) -> bool:
    op = self.operation
    parent = op.parent
    if parent is None or parent.name != "fusion.group":
        op.location.emit_error("'fusion.yield' must be inside a 'fusion.group'")
        return False
    return _slots_ok(op, "'fusion.yield'", "operandSegmentSizes", len(op.operands), "value")


_yield_slots: dict = {"__annotations__": {}}
for _i in range(MAX_RESULTS):
    _yield_slots["__annotations__"][f"value{_i}"] = Optional[Operand[Any]]
    _yield_slots[f"value{_i}"] = None
_yield_slots["verify_invariants"] = _verify_yield
_yield_slots["__doc__"] = "Terminates a group's region; its operands are the group's results."
YieldOpDef = type("YieldOpDef", (Fusion.Operation,), _yield_slots, name="yield", traits=[ir.IsTerminatorTrait])


def YieldOp(values, *, loc=None, ip=None) -> ir.OpView:
    """Build a `fusion.yield` of `values` (at most MAX_RESULTS)."""
    values = list(values)
    if len(values) > MAX_RESULTS:
        raise ValueError(f"a fusion.yield holds at most {MAX_RESULTS} values, got {len(values)}")
    return ir.Operation.create(
        "fusion.yield", operands=values, attributes={"operandSegmentSizes": _slot_sizes(len(values), MAX_RESULTS)},
        loc=loc, ip=ip
    ).opview


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
