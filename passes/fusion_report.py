"""fusion-report: record, without changing the IR, what each fusion.group holds and why neighbours stayed apart.

    %g = "fusion.group"(%x) ({ mulf; exp }) {label = "group0"}       group0 elementwise  saved 128 B
    %m = linalg.matmul ins(%g, ...)      ->  (no IR change)            linalg.generic  model.py:3
                                                                      linalg.exp      model.py:4
                                                                     group0 -> linalg.matmul: non-elementwise: linalg.matmul

The result is a `FusionReport` recorded as the analysis "fusion-report" (see
`registry.record_analysis`). Members are listed with their op name and location (for
torch-mlir imports the location names the FX node / source line when the exporter keeps it).
"Bytes saved" counts, for every tensor made and consumed inside a group, one write and one
read per use inside the group that no longer go to memory. Reasons for unfused pairs come
from the `fusion.unfused` attributes fusion-form-groups leaves on consumers. MLIR's Python
bindings offer no way to emit a remark, so `print` writes the report to stderr instead (as
mlir-opt's analysis printers do), where lit tests read it.
"""

from __future__ import annotations

import json
import sys
from dataclasses import asdict, dataclass, field

from braze._mlir import ir

from braze.dialects.fusion import UNFUSED_ATTR
from braze.irutil import all_ops, describe_op, op_id, short_location

from .elementwise import tensor_bytes
from .registry import ModulePass, option, record_analysis, register


@dataclass
class Member:
    op: str
    location: str


@dataclass
class GroupInfo:
    function: str
    label: str
    kind: str
    members: list[Member]
    inputs: int
    outputs: int
    bytes_saved: int


@dataclass
class UnfusedPair:
    function: str
    producer: str
    producer_location: str
    consumer: str
    consumer_location: str
    reason: str


@dataclass
class FusionReport:
    groups: list[GroupInfo] = field(default_factory=list)
    unfused: list[UnfusedPair] = field(default_factory=list)

    @property
    def bytes_saved(self) -> int:
        return sum(g.bytes_saved for g in self.groups)

    def to_json(self) -> str:
        return json.dumps(
            {"groups": [asdict(g) for g in self.groups], "unfused": [asdict(u) for u in self.unfused],
             "bytes_saved": self.bytes_saved},
            indent=2,
        )

    def _group_lines(self) -> list[str]:
        lines = [f"{len(self.groups)} fusion group(s), ~{self.bytes_saved} bytes of intermediates kept out of memory"]
        for g in self.groups:
            lines.append(
                f"  @{g.function} {g.label} [{g.kind}] {len(g.members)} ops, "
                f"{g.inputs} in / {g.outputs} out, saves ~{g.bytes_saved} B"
            )
            for m in g.members:
                lines.append(f"      {m.op:<24} {m.location}")
        return lines

    def to_text(self) -> str:
        lines = self._group_lines()
        if self.unfused:
            lines.append("not fused:")
            for u in self.unfused:
                lines.append(
                    f"  @{u.function} {u.producer} ({u.producer_location}) -> "
                    f"{u.consumer} ({u.consumer_location}): {u.reason}"
                )
        return "\n".join(lines)

    def summary_text(self) -> str:
        """Groups in full; unfused pairs counted by reason (the pairs are in `unfused`)."""
        lines = self._group_lines()
        if self.unfused:
            counts: dict[str, int] = {}
            for u in self.unfused:
                counts[u.reason] = counts.get(u.reason, 0) + 1
            lines.append(f"not fused: {len(self.unfused)} adjacent pairs (report.unfused lists each), by reason:")
            for reason, n in sorted(counts.items(), key=lambda kv: -kv[1]):
                lines.append(f"  {n:4d}  {reason}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.to_text()


def _loc(op: ir.Operation) -> str:
    return short_location(str(op.location))


def _source(v: ir.Value) -> ir.Operation | None:
    """The op that really computes `v`, looking through group block arguments and results."""
    for _ in range(64):
        if isinstance(v, ir.BlockArgument):
            owner = v.owner.owner
            if owner is None or owner.name != "fusion.group":
                return None
            v = owner.operands[v.arg_number]
        elif isinstance(v, ir.OpResult):
            op = v.owner.operation
            if op.name != "fusion.group":
                return op
            block = op.regions[0].blocks[0]
            ops = list(block.operations)
            v = ops[-1].operation.operands[v.result_number]
        else:
            return None
    return None


@register
@dataclass(frozen=True)
class ReportPass(ModulePass):
    name = "fusion-report"
    summary = "Report each fusion.group's ops and bytes saved, and why adjacent ops were not fused"

    print: bool = option(False, "Also print the report (every group and unfused pair) to stderr")

    def run(self, module: ir.Operation) -> None:
        report = build_report(module)
        record_analysis("fusion-report", report)
        if self.print:
            sys.stderr.write(report.to_text() + "\n")
            sys.stderr.flush()


def build_report(module: ir.Operation) -> FusionReport:
    report = FusionReport()
    for f in all_ops(module, "func.func"):
        fname = ir.StringAttr(f.attributes["sym_name"]).value
        for op in all_ops(f, post_order=True):
            if op.name == "fusion.group":
                report.groups.append(_group_info(fname, op))
            if UNFUSED_ATTR in op.attributes:
                reasons = ir.DictAttr(op.attributes[UNFUSED_ATTR])
                for i in range(len(reasons)):
                    named = reasons[i]
                    index = int(named.name)
                    producer = _source(op.operands[index]) if index < len(op.operands) else None
                    report.unfused.append(
                        UnfusedPair(
                            fname,
                            describe_op(producer) if producer is not None else "?",
                            _loc(producer) if producer is not None else "?",
                            describe_op(op),
                            _loc(op),
                            ir.StringAttr(named.attr).value,
                        )
                    )
    return report


def _group_info(fname: str, group: ir.Operation) -> GroupInfo:
    block = group.regions[0].blocks[0]
    ops = [o.operation for o in block.operations]
    members = [o for o in ops[:-1] if o.name.startswith("linalg.")]
    yielded = set(ops[-1].operands)
    member_ids = {op_id(m) for m in members}
    saved = 0
    for m in members:
        for r in m.results:
            if r in yielded:
                continue
            uses = sum(1 for u in r.uses if op_id(u.owner.operation) in member_ids)
            saved += tensor_bytes(r.type) * (1 + uses)
    return GroupInfo(
        fname,
        ir.StringAttr(group.attributes["label"]).value,
        ir.StringAttr(group.attributes["kind"]).value,
        [Member(describe_op(m), _loc(m)) for m in members],
        len(group.operands),
        len(group.results),
        saved,
    )


def count_linalg_ops(module_op: ir.Operation) -> int:
    """linalg ops in a module (structured ops only: linalg.yield and linalg.index excluded)."""
    return sum(1 for op in all_ops(module_op)
               if op.name.startswith("linalg.") and op.name not in ("linalg.yield", "linalg.index"))
