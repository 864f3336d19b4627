"""Facts about a lowered program's calling convention: where its results may share memory with
its arguments or constants, so that the runtime copies exactly those and nothing the user owns
is changed or aliased; and checks it would fail on every call.

Two hazards, both seen with IREE 3.13 and zero-copy (DLPack) arguments:
- An argument used as a destination (`tensor.insert_slice ... into %arg`, a linalg op's
  `outs(%arg)`: torch's slice_scatter, `z = x.clone(); z[:, :2] = y`) is updated in place by
  IREE, in the caller's memory (iree-org/iree#16168): those arguments are passed as copies.
- A result that is an argument or a constant (`return x.clone()`, `x * 1`, a returned weight)
  comes back as that very buffer: those results are copied before they reach the caller.

Values are followed through view-like ops (reshapes, casts, slices), which IREE folds away.
"""

from __future__ import annotations

from braze._mlir import ir
from braze.irutil import all_ops

VIEWS = ("tensor.expand_shape", "tensor.collapse_shape", "tensor.cast", "tensor.extract_slice", "tensor.reshape",
         "tensor.bitcast")
"""Ops whose result IREE may make a view of their source."""

DESTINATION_OPERANDS = {"tensor.insert_slice": (1,), "tensor.insert": (1,), "tensor.parallel_insert_slice": (1,)}
"""Non-linalg ops that write into an operand; linalg and tm_tensor ops write into their `outs`."""


def _root(value: ir.Value) -> ir.Value:
    """The value `value` is a view of (itself when it is not a view)."""
    for _ in range(64):
        owner = value.owner if isinstance(value, ir.OpResult) else None
        if owner is None or owner.name not in VIEWS:
            return value
        value = owner.operands[0]
    return value


def _destinations(op: ir.Operation) -> list[ir.Value]:
    if op.name in DESTINATION_OPERANDS:
        return [op.operands[i] for i in DESTINATION_OPERANDS[op.name] if i < len(op.operands)]
    dialect = op.name.split(".", 1)[0]
    if dialect in ("linalg", "tm_tensor", "iree_linalg_ext") and "operandSegmentSizes" in op.attributes:
        sizes = list(ir.DenseI32ArrayAttr(op.attributes["operandSegmentSizes"]))
        return list(op.operands)[sum(sizes[:-1]):]
    return []


def hazards(module_op: ir.Operation, function: str = "main") -> tuple[frozenset, frozenset]:
    """(arguments the program may write in place, results that may alias an argument or a
    constant) of `function`, by position."""
    funcs = [f for f in all_ops(module_op, "func.func")
             if ir.StringAttr(f.attributes["sym_name"]).value == function]
    if not funcs:
        return frozenset(), frozenset()
    body = funcs[0].regions[0].blocks[0]
    args = {a: i for i, a in enumerate(body.arguments)}
    written = set()
    for op in all_ops(funcs[0]):
        for value in _destinations(op):
            root = _root(value)
            if root in args:
                written.add(args[root])
    aliased = set()
    terminator = list(body.operations)[-1]
    for i, value in enumerate(terminator.operands):
        root = _root(value)
        owner = root.owner if isinstance(root, ir.OpResult) else None
        if root in args or (owner is not None and owner.name == "arith.constant"):
            aliased.add(i)
    return frozenset(written), frozenset(aliased)


def failing_asserts(module_op: ir.Operation) -> list[tuple[str, str]]:
    """(message, location) of each `cf.assert` whose condition is the constant false: a check
    torch-mlir emitted for a case it does not support, which would fail at every call."""
    found = []
    for op in all_ops(module_op, "cf.assert"):
        condition = op.operands[0]
        owner = condition.owner if isinstance(condition, ir.OpResult) else None
        if owner is not None and owner.name == "arith.constant" and str(owner.attributes["value"]) == "false":
            found.append((ir.StringAttr(op.attributes["msg"]).value, str(op.location)))
    return found


TENSOR_LOOPS = ("scf.for", "scf.while", "scf.forall")


def tensor_loops(module_op: ir.Operation) -> list[str]:
    """Locations of the loops that carry a tensor from one iteration to the next (torch-mlir's
    lowering of determinants and slogdet is one). IREE 3.13 cannot place such a loop's values in
    a transient buffer the caller provides: compiled with braze's transient storage, the program
    either fails to compile ('operand #1 does not dominate this use') or, at run time, copies
    between overlapping ranges of that buffer (INVALID_ARGUMENT)."""
    found = []
    for op in all_ops(module_op):
        if op.name in TENSOR_LOOPS and any(isinstance(r.type, ir.RankedTensorType) for r in op.results):
            found.append(str(op.location))
    return found
