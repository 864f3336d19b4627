"""Helpers that work on operations of either MLIR binding (torch-mlir's or IREE's)."""

from __future__ import annotations


def all_ops(op) -> list:
    """`op` and every operation nested in it, in pre-order (a list: safe to edit IR while iterating)."""
    found = []

    def collect(o) -> None:
        found.append(o)
        for region in o.regions:
            for block in region.blocks:
                for inner in block.operations:
                    collect(inner.operation)

    collect(op)
    return found
