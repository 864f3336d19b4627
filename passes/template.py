"""Rewrites from IR text: parse a template function, clone its body into the module."""

from __future__ import annotations

from braze._mlir import ir


def inline_template(text: str, args: list[ir.Value], before: ir.Operation) -> ir.Value:
    """Clone the body of the one function in `text` before `before`, its arguments bound to
    `args`, and return what it returns. (Ops are parsed rather than built: the Python builders
    of linalg ops made bytecode IREE 3.13 could not read; see fold_broadcast_matmul.)

    Only top-level operands are rebound: the template's regions must not use values defined
    outside them (a region reading the scratch module's values would dangle once it is freed)."""
    scratch = ir.Module.parse(text)
    block = scratch.body.operations[0].regions[0].blocks[0]
    mapping = {block.arguments[i]: v for i, v in enumerate(args)}
    result = None
    with ir.InsertionPoint(before), before.location:
        for template in block.operations:
            template = template.operation
            if template.name == "func.return":
                result = mapping[template.operands[0]]
                break
            clone = template.clone()
            for i, operand in enumerate(clone.operands):
                if operand in mapping:
                    clone.operands[i] = mapping[operand]
            for old, new in zip(template.results, clone.results):
                mapping[old] = new
    return result
