"""IR helpers that work on operations of either MLIR binding (torch-mlir's or IREE's).

One way to find ops (`all_ops`), one way to rebind operands (`remap_operands`), one key for an
op (`op_id`). They use only the parts of the Python API both bindings share, so the passes, the
report and the back end (IREE's context) all call the same helpers.
"""

from __future__ import annotations

import ctypes
import os
import re
from typing import Iterable

_capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_pointer.restype = ctypes.c_void_p
_capsule_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_capsule_name = ctypes.pythonapi.PyCapsule_GetName
_capsule_name.restype = ctypes.c_char_p
_capsule_name.argtypes = [ctypes.py_object]


def op_id(op) -> int:
    """A stable key for an op (its C++ address): `hash(ir.Operation)` changes when its
    attributes or operands do, and two Python objects may stand for one op."""
    capsule = op.operation._CAPIPtr
    return _capsule_pointer(capsule, _capsule_name(capsule))


def all_ops(op, names: str | Iterable[str] | None = None, *, post_order: bool = False) -> list:
    """`op` and every operation nested in it, in pre-order (or post-order, as MLIR's `walk`),
    as a list (safe to edit IR while iterating over it); only those called one of `names`
    when given.

    MLIR's own walk, not Python loops over blocks: it hands out plain Operations, where
    iterating a block's operations wraps each in its dialect's OpView class and so imports that
    dialect's Python module (IREE's linalg module alone takes 0.26 s to import: NOTES §32)."""
    wanted = None if names is None else ({names} if isinstance(names, str) else set(names))
    found = []
    bindings = _bindings(op)
    advance = bindings.WalkResult.ADVANCE

    def collect(o):
        if wanted is None or o.name in wanted:
            found.append(o)
        return advance

    op.operation.walk(collect, bindings.WalkOrder.POST_ORDER if post_order else bindings.WalkOrder.PRE_ORDER)
    return found


def _bindings(op):
    """The MLIR Python bindings `op` belongs to (torch-mlir's or IREE's: each has its own)."""
    import importlib

    return importlib.import_module(type(op.operation).__module__.rsplit("._mlir_libs", 1)[0] + ".ir")


def _bindings_of(value):
    """The MLIR Python bindings a Value belongs to."""
    import importlib

    return importlib.import_module(type(value).__module__.rsplit("._mlir_libs", 1)[0] + ".ir")


RESHAPES = ("tensor.expand_shape", "tensor.collapse_shape", "tensor.cast")
"""Ops IREE folds away when it forms dispatches: a linalg op behind one is still a neighbour."""


def producer_through_reshapes(value):
    """The op that computes `value`, looking through RESHAPES; None for a block argument."""
    op_result = _bindings_of(value).OpResult
    owner = value.owner if isinstance(value, op_result) else None
    while owner is not None and owner.name in RESHAPES:
        source = owner.operands[0]
        owner = source.owner if isinstance(source, op_result) else None
    return owner


def remap_operands(op, remap: dict) -> None:
    """Replace operands of `op` and of every op nested in it that `remap` names."""
    for o in all_ops(op):
        for i, v in enumerate(o.operands):
            if v in remap:
                o.operands[i] = remap[v]


def defined_inside(op) -> set:
    """Values defined by `op` and inside its regions: results and block arguments."""
    inside: set = set()
    for o in all_ops(op):
        inside.update(o.results)
        for region in o.regions:
            for block in region.blocks:
                inside.update(block.arguments)
    return inside


def captured_values(op) -> list:
    """Values used inside `op`'s regions but defined outside `op`, in first-use order."""
    inside = defined_inside(op)
    seen, out = set(), []
    for o in all_ops(op)[1:]:
        for v in o.operands:
            if v not in inside and v not in seen:
                seen.add(v)
                out.append(v)
    return out


def float64_ops(op) -> list:
    """The operations in `op` (pre-order) with a 64-bit float result or block argument: f64 or
    complex<f64>, alone or as the element of a tensor or memref. IREE demotes these to 32 bits
    unless told not to (backend._common_flags)."""
    ir = _bindings(op)
    f64 = ir.F64Type.get(op.operation.context)

    def wide(t) -> bool:
        if isinstance(t, ir.ShapedType):
            t = ir.ShapedType(t).element_type
        if isinstance(t, ir.ComplexType):
            t = ir.ComplexType(t).element_type
        return t == f64

    return [o for o in all_ops(op)
            if any(wide(r.type) for r in o.results)
            or any(wide(a.type) for region in o.regions for block in region.blocks for a in block.arguments)]


# -- source locations and op names, as reports print them -----------------------------------

_FRAME = re.compile(r'"((?:[^"\\]|\\.)*)":(\d+):\d+')


def _short_path(path: str) -> str:
    if "site-packages/" in path:
        return path.split("site-packages/", 1)[1]
    cwd = os.getcwd() + os.sep
    return path[len(cwd):] if path.startswith(cwd) else path


def short_location(text: str) -> str:
    """A readable source location from a printed MLIR location: 'file:line', a call site as
    'caller:line > callee:line' (site-packages and the working directory stripped)."""
    if text.startswith("loc(") and text.endswith(")"):
        text = text[4:-1]
    parts = []
    for piece in text.split(", "):
        frames = [f"{_short_path(p)}:{line}" for p, line in _FRAME.findall(piece)]
        if frames:
            entry = " > ".join(reversed(frames))
            if entry not in parts:
                parts.append(entry)
    return ", ".join(parts) if parts else text


def describe_op(op) -> str:
    """Op name, with the body's ops for a linalg.generic (generic alone says little)."""
    if op.name != "linalg.generic":
        return op.name
    body = [o.operation.name.split(".", 1)[1] for o in op.regions[0].blocks[0].operations]
    return "linalg.generic{" + ",".join(b for b in body if b != "yield") + "}"
