"""Partial graphs: the ops torch-mlir or IREE cannot lower run in eager, the rest is compiled.

    fast = braze.compile(model, x, partial=True)      # on by default under torch.compile

The model is exported and decomposed as braze.compile does, and compiled whole first. Each time
that fails on an op braze cannot lower (an UnsupportedOpError naming the aten op), that op is
marked unsupported and the aten graph is split with torch's own partitioner
(`torch.fx.passes.infra.partitioner.CapabilityBasedPartitioner`): every maximal region of
supported ops becomes one piece compiled by braze.compile, and the unsupported ops, with the
glue between pieces, run in eager. The result's report lists every op that fell back, with its
source line, and the number of compiled pieces; a warning says so once per model.
"""

from __future__ import annotations

import copy
import warnings
from dataclasses import dataclass, field

from .errors import BrazeError, BrazeWarning, UnsupportedOpError

MAX_ROUNDS = 16
"""Unsupported ops discovered one compile at a time: at most this many distinct ones."""


@dataclass
class PartialReport:
    model: str
    pieces: list = field(default_factory=list)
    """The report of each compiled piece, in graph order."""
    fallbacks: list = field(default_factory=list)
    """Each op that runs in eager: {'op', 'node', 'source'}."""

    def table(self) -> str:
        lines = [f"{self.model}: {len(self.pieces)} compiled piece(s), {len(self.fallbacks)} op(s) in eager"]
        for f in self.fallbacks:
            lines.append(f"  eager: {f['op']} (FX node '{f['node']}', {f['source']})")
        for i, r in enumerate(self.pieces):
            lines.append(f"  piece {i}: {r.linalg_ops_before} linalg ops, {r.dispatch_count} dispatches, "
                         f"{len(r.groups)} fusion groups")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.table()


class PartialModule:
    """A model compiled in pieces, with the ops braze cannot lower in eager between them."""

    def __init__(self, graph_module, pieces: list, report: PartialReport):
        self._gm = graph_module
        self.pieces = pieces
        self.report = report

    def __call__(self, *args, **kwargs):
        return self._gm(*args, **kwargs)

    def save(self, *args, **kwargs):
        raise BrazeError("a partially compiled model runs ops in eager PyTorch and cannot be saved as an "
                         "artifact; remove or replace the ops its report lists, then compile it whole")

    def __repr__(self) -> str:
        return f"<braze.PartialModule {self.report.model}: {len(self.pieces)} pieces, {len(self.report.fallbacks)} eager ops>"


def _op_name(target) -> str:
    name = getattr(target, "name", None)
    text = name() if callable(name) else str(target)
    text = text.replace("::", ".")
    return "aten." + text.split("aten.", 1)[1] if "aten." in text else text


def _short(op: str) -> str:
    """'aten.erfinv.default' -> 'aten.erfinv' (the name braze's errors use)."""
    parts = op.split(".")
    return ".".join(parts[:2]) if op.startswith("aten.") and len(parts) > 2 else op


class _Recorder:
    """Runs the split graph once in eager, recording each piece's inputs (its example inputs)."""

    def __init__(self, gm, names):
        import torch.fx

        self.seen = {}
        outer = self

        class Interp(torch.fx.Interpreter):
            def call_module(self, target, args, kwargs):
                if target in names and target not in outer.seen:
                    outer.seen[target] = tuple(a.detach() if hasattr(a, "detach") else a for a in args)
                return super().call_module(target, args, kwargs)

        self.interp = Interp(gm)

    def run(self, *args):
        import torch

        with torch.no_grad():
            return self.interp.run(*args)


def compile_partial(braze_compile, model, example_inputs: tuple, example_kwargs: dict | None = None, **options):
    """braze_compile(model, ...) (braze.compile) if it compiles whole, else a PartialModule (see
    the module doc)."""
    from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner
    from torch.fx.passes.operator_support import OperatorSupportBase

    from .decompositions import extra_decompositions
    from .frontend import _last_frame, _quiet_torch, export, fx_importer

    try:
        return braze_compile(model, *example_inputs, example_kwargs=example_kwargs, **options)
    except UnsupportedOpError as e:
        first = e
    if example_kwargs:
        raise first
    exported = export(model, tuple(example_inputs), {})
    _, _, table = fx_importer()
    with _quiet_torch():
        exported = exported.run_decompositions({**table, **extra_decompositions()})
        gm = exported.module()
    unsupported: set[str] = set()
    error = first
    name = type(model).__name__
    for _ in range(MAX_ROUNDS):
        op = getattr(error, "op", None)
        if not op or op in unsupported:
            raise first
        unsupported.add(op)

        class Support(OperatorSupportBase):
            def is_node_supported(self, submodules, node) -> bool:
                return node.op == "call_function" and _short(_op_name(node.target)) not in unsupported

        # The partitioner fuses in place: each round splits a fresh copy.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)  # torch's own pytree deprecation, in deepcopy
            split = CapabilityBasedPartitioner(copy.deepcopy(gm), Support(),
                                               allows_single_node_partition=True).partition_and_fuse()
        names = [n.target for n in split.graph.nodes if n.op == "call_module" and str(n.target).startswith("fused_")]
        recorder = _Recorder(split, set(names))
        recorder.run(*example_inputs)
        pieces, error = [], None
        for piece_name in names:
            sub = getattr(split, piece_name)
            inputs = recorder.seen.get(piece_name)
            if inputs is None:
                continue  # never reached with these inputs: stays in eager
            try:
                with warnings.catch_warnings():
                    warnings.filterwarnings("ignore", message=".*training mode.*", category=BrazeWarning)
                    compiled = braze_compile(sub, *inputs, **options)
            except UnsupportedOpError as e:
                error = e
                break
            pieces.append((piece_name, compiled))
        if error is not None:
            continue
        for piece_name, compiled in pieces:
            setattr(split, piece_name, _piece(compiled))
        report = PartialReport(name, [c.report for _, c in pieces], [
            {"op": _short(_op_name(n.target)), "node": n.name,
             "source": _last_frame(n.meta.get("stack_trace")) or "unknown source"}
            for n in gm.graph.nodes if n.op == "call_function" and _short(_op_name(n.target)) in unsupported])
        warnings.warn(BrazeWarning(
            f"braze.compile: {name} runs {len(report.fallbacks)} op(s) in eager "
            f"({', '.join(sorted({f['op'] for f in report.fallbacks}))}) between {len(pieces)} compiled piece(s); "
            "report.fallbacks lists them with their source lines"), stacklevel=3)
        return PartialModule(split, [c for _, c in pieces], report)
    raise first


_PIECE = None


def _piece(compiled):
    """An nn.Module standing where the partitioner's fused submodule was, calling the piece."""
    global _PIECE
    if _PIECE is None:
        import torch

        class Piece(torch.nn.Module):
            def __init__(self, compiled):
                super().__init__()
                self.compiled = compiled

            def forward(self, *args):
                return self.compiled(*args)

        _PIECE = Piece
    return _PIECE(compiled)
