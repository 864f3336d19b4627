"""Partial graphs: the ops torch-mlir or IREE cannot lower run in eager, the rest is compiled.

    fast = braze.compile(model, x, partial=True)      # on by default under torch.compile

The model is exported and decomposed as braze.compile does, and compiled whole first. Each time
a compile fails (torch-mlir's importer or lowering cannot take an op: UnsupportedOpError; IREE
cannot compile it: CompileError), the nodes responsible are marked for eager and the aten graph
is split with torch's own partitioner (`torch.fx.passes.infra.partitioner.
CapabilityBasedPartitioner`): every maximal region of the other ops becomes one piece compiled by
braze.compile, and the marked ops, with the glue between pieces, run in eager. The nodes
responsible: every node of the aten op the error names; else the FX node it names; else the
failing piece is bisected (the shortest prefix of its ops, in graph order, that still fails
ends in one). The result's report lists every op that fell back, with its source line and why,
and the number of compiled pieces; a warning says so once per model.
"""

from __future__ import annotations

import copy
import warnings
from dataclasses import dataclass, field

from braze.errors import BrazeError, BrazeWarning, CompileError, UnsupportedOpError

MAX_ROUNDS = 16
"""Ops that cannot be compiled, found one failing compile at a time: at most this many rounds."""


@dataclass
class PartialReport:
    model: str
    pieces: list = field(default_factory=list)
    """The report of each compiled piece, in graph order."""
    fallbacks: list = field(default_factory=list)
    """Each op that runs in eager: {'op', 'node', 'source', 'why'}."""

    def table(self) -> str:
        lines = [f"{self.model}: {len(self.pieces)} compiled piece(s), {len(self.fallbacks)} op(s) in eager"]
        for f in self.fallbacks:
            lines.append(f"  eager: {f['op']} (FX node '{f['node']}', {f['source']}): {f.get('why', '')[:160]}")
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


FALLBACK_ERRORS = (UnsupportedOpError, CompileError)
"""What falls back: torch-mlir's importer or lowering cannot take an op, or IREE cannot compile a
piece. An InternalError (braze's own bug) is raised, not hidden in eager."""


def _split(gm, eager: set[str], only: set[str] | None = None):
    """A copy of `gm` split by torch's partitioner: every maximal region of call_function nodes
    not in `eager` (and in `only`, where given) becomes a submodule fused_<i>; returns the split
    module and the node names of each submodule."""
    from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner
    from torch.fx.passes.operator_support import OperatorSupportBase

    class Support(OperatorSupportBase):
        def is_node_supported(self, submodules, node) -> bool:
            return node.op == "call_function" and node.name not in eager and (only is None or node.name in only)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # torch's own pytree deprecation, in deepcopy
        partitioner = CapabilityBasedPartitioner(copy.deepcopy(gm), Support(), allows_single_node_partition=True)
        partitions = partitioner.propose_partitions()
        members = {f"fused_{i}": [n.name for n in p.nodes] for i, p in enumerate(partitions)}
        return partitioner.fuse_partitions(partitions), members


def _compile_pieces(braze_compile, split, members, example_inputs, options):
    """Compile every piece the example inputs reach: ([(name, compiled)], None), or the pieces
    so far and (piece name, the error) of the first that fails."""
    recorder = _Recorder(split, set(members))
    recorder.run(*example_inputs)
    pieces = []
    for piece_name in members:
        inputs = recorder.seen.get(piece_name)
        if inputs is None:
            continue  # never reached with these inputs: stays in eager
        try:
            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", message=".*training mode.*", category=BrazeWarning)
                compiled = braze_compile(getattr(split, piece_name), *inputs, **options)
        except FALLBACK_ERRORS as e:
            return pieces, (piece_name, e)
        pieces.append((piece_name, compiled))
    return pieces, None


def _culprits(error, piece: list[str], gm, eager, braze_compile, example_inputs, options) -> tuple[set[str], str]:
    """The nodes of a failing piece (names, in gm's order) to run in eager, and how they were
    found: every node of the aten op the error names; the FX node it names; else the shortest
    failing prefix of the piece, by bisection (its last node is one that the compile cannot take)."""
    from braze.compiler.frontend import _aten_name

    order = [n.name for n in gm.graph.nodes if n.name in set(piece)]
    op = getattr(error, "op", None)
    if op:
        named = {n.name for n in gm.graph.nodes if n.op == "call_function" and _aten_name(n.target) == op}
        if named & set(order):
            return named - eager, "the error names the op"
    node = getattr(error, "node", None)
    if node in order:
        return {node}, "the error names the node"

    def fails(k: int) -> bool:
        split, members = _split(gm, eager, set(order[:k]))
        return _compile_pieces(braze_compile, split, members, example_inputs, options)[1] is not None

    lo, hi = 1, len(order)  # the whole piece fails; find the shortest prefix that does
    while lo < hi:
        mid = (lo + hi) // 2
        if fails(mid):
            hi = mid
        else:
            lo = mid + 1
    return {order[lo - 1]}, f"bisected ({len(order)} ops)"


def _data_dependent(gm) -> dict[str, str]:
    """The nodes that make or read a tensor whose size depends on the data (x[mask], nonzero:
    an unbacked size): a piece compiled for the example's sizes would refuse any other mask, so
    they run in eager."""
    import torch
    from torch.fx.experimental.symbolic_shapes import free_unbacked_symbols

    def dependent(value) -> bool:
        return isinstance(value, (torch.Tensor, torch.SymInt, torch.SymBool, torch.SymFloat)) and \
            bool(free_unbacked_symbols(value))

    found = {}
    for node in gm.graph.nodes:
        if node.op != "call_function":
            continue
        if dependent(node.meta.get("val")) or any(dependent(a.meta.get("val")) for a in node.all_input_nodes):
            found[node.name] = "its size, or an input's, depends on the data (an unbacked size)"
    return found


def compile_partial(braze_compile, model, example_inputs: tuple, example_kwargs: dict | None = None, **options):
    """braze_compile(model, ...) (braze.compile) if it compiles whole, else a PartialModule (see
    the module doc)."""
    from braze.compiler.decompositions import extra_decompositions
    from braze.compiler.frontend import _aten_name, _last_frame, _quiet_torch, export, fx_importer

    try:
        return braze_compile(model, *example_inputs, example_kwargs=example_kwargs, **options)
    except FALLBACK_ERRORS as e:
        first = e
    if example_kwargs:
        raise first
    exported = export(model, tuple(example_inputs), {})
    _, _, table = fx_importer()
    with _quiet_torch():
        exported = exported.run_decompositions({**table, **extra_decompositions()})
        gm = exported.module()
    name = type(model).__name__
    eager = _data_dependent(gm)  # node name -> why it runs in eager
    for _ in range(MAX_ROUNDS):
        split, members = _split(gm, set(eager))
        pieces, failure = _compile_pieces(braze_compile, split, members, example_inputs, options)
        if failure is not None:
            piece_name, error = failure
            found, how = _culprits(error, members[piece_name], gm, set(eager), braze_compile, example_inputs, options)
            if not found:
                raise first
            why = str(error).splitlines()[0] if str(error) else type(error).__name__
            for node_name in found:
                eager[node_name] = f"{type(error).__name__} ({how}): {why}"
            continue
        for piece_name, compiled in pieces:
            setattr(split, piece_name, _piece(compiled))
        report = PartialReport(name, [c.report for _, c in pieces], [
            {"op": _aten_name(n.target), "node": n.name,
             "source": _last_frame(n.meta.get("stack_trace")) or "unknown source", "why": eager[n.name]}
            for n in gm.graph.nodes if n.name in eager])
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
