"""Back end: linalg IR (as bytecode) to an IREE program for a Target."""

from __future__ import annotations

from ._iree_compiler import CompiledVmfb, compile_module
from .targets import Target


def compile_for_target(source: bytes, target: Target) -> CompiledVmfb:
    return compile_module(source, target.compiler_flags())
