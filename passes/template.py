"""Rewrites from IR text: parse a template function, clone its body into the module."""

from __future__ import annotations

from braze._mlir import ir
from braze.irutil import remap_operands


def map_text(dims: int, results: list[str]) -> str:
    """An affine map's text for a template: `dims` loops d0..d{dims-1} -> `results`."""
    return f"affine_map<({', '.join(f'd{i}' for i in range(dims))}) -> ({', '.join(results)})>"


class TemplateError(RuntimeError):
    """A pass built IR text that does not parse: the pass's bug, reported with the text."""


def inline_template(text: str, args: list[ir.Value], before: ir.Operation) -> ir.Value:
    """Clone the body of the one function in `text` before `before`, its arguments bound to
    `args`, and return what it returns. (Ops are parsed rather than built: the Python builders
    of linalg ops made bytecode IREE 3.13 could not read; see fold_broadcast_matmul.)

    Every use of a template value is rebound, inside nested regions too (a use left pointing
    into the scratch module would dangle once it is freed)."""
    try:
        scratch = ir.Module.parse(text)
    except (ir.MLIRError, MemoryError) as e:  # torch-mlir's parser throws std::bad_alloc for some slips
        raise TemplateError(f"a rewrite template did not parse ({type(e).__name__}: {e}); the template:\n{text}") from e
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
            remap_operands(clone, mapping)
            for old, new in zip(template.results, clone.results):
                mapping[old] = new
    return result


def replace_with_template(op: ir.Operation, text: str, args: list[ir.Value]) -> None:
    """Replace `op`'s one result with the template's (inline_template before `op`), erase `op`."""
    op.results[0].replace_all_uses_with(inline_template(text, args, op))
    op.erase()
