"""fusion-form-groups: wrap producer->consumer chains of elementwise linalg ops in fusion.group ops.

    %0 = linalg.generic {mulf} ins(%x)      %g = "fusion.group"(%x) ({
    %1 = linalg.generic {addf} ins(%0)  ->  ^bb0(%a: tensor<4xf32>):
    %2 = linalg.generic {exp}  ins(%1)        %0 = linalg.generic {mulf} ins(%a) ...
                                              %1 = linalg.generic {addf} ins(%0) ...
                                              %2 = linalg.generic {exp}  ins(%1) ...
                                              "fusion.yield"(%2)
                                            }) {kind = "elementwise", label = "group0"}

Which ops are elementwise, and when a set of them shares one iteration space, is decided in
`passes/elementwise.py`. Everything that is not elementwise is a group boundary.

Rules, in order:
1. A producer whose results are used only by one elementwise consumer joins that consumer's
   group when their iteration spaces are compatible: same loop count, the consumer reads the
   producer's result through a permutation map, and the static loop sizes agree.
2. A multi-use producer whose elementwise users all ended in one group joins that group
   (its result is also yielded when other ops, e.g. the return, read it).
3. Otherwise a multi-use producer that is alone (in no group) is recomputed (cloned into each
   consumer group) when the cost model below says that saves memory traffic.
4. Groups whose ops read the same tensor through permutation maps, and that are otherwise
   independent, merge into one multi-result group (`fuse-siblings`).
5. A group with a result that feeds an elementwise op through a broadcast (e.g. ops on a
   bias [M] read as [N, M]) is dissolved: as its own kernel it would stop IREE from recomputing
   those cheap ops inside the consumer, costing a dispatch.
6. A cast or pure copy (extf, transpose) whose only readers are contraction inputs leaves its
   group: IREE fuses it into the matmul's operand loads (bf16 weights stay bf16).
7. A group that reads a reduction's or contraction's result, or feeds one, is dissolved: IREE
   fuses elementwise producers and consumers into those dispatches and recognizes softmax and
   normalization patterns across them, so such a group would cost a dispatch of its own.
Every merge is refused when it would create a cycle between groups (checked on the graph of
groups) or when no single iteration space fits all members (`solve_iteration_space`). A lone
op is left ungrouped. Groups are numbered group0, group1, ... in program order per function.

Cost model for recomputation (rule 3), in bytes of memory traffic, for a producer P with
N iterations, per-element output bytes `ob`, input tensors of `I` bytes in all and `u` uses,
of which the users in `k` distinct consumer groups can take a copy (the rest `u_rest`
keep reading P, which then survives):

    unfused   = I + N*ob + u*N*ob
    recompute = k*I + (I + N*ob + u_rest*N*ob if P survives else 0)
    extra     = N * flops(P) * (k if P survives else k - 1)
    recompute iff unfused - recompute > flop_cost_bytes * extra
               and flops(P) <= max_recompute_flops

flops(P) counts one per arith op and four per math op (exp, tanh, erf, ...) of P's body.
The model ignores caches and that a consumer group may already read P's inputs: it is
deliberately conservative.

Why a pair stayed apart is recorded on the consumer as the discardable attribute
`fusion.unfused = {"<operand number>" = "<reason>"}` for fusion-report; fusion-lower-to-linalg
drops these attributes. Arithmetic is never changed: bodies are moved, not rewritten.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from braze._mlir import ir
from braze.dialects import fusion
from braze.dialects.fusion import UNFUSED_ATTR
from braze.irutil import all_ops, defined_inside, describe_op, op_id, remap_operands, short_location

from .elementwise import Elementwise, byte_width, classify, is_permutation, solve_iteration_space, tensor_bytes
from .registry import ModulePass, decide, option, register

_CLONEABLE = ("arith.constant", "tensor.empty")


# ---------------------------------------------------------------------------
# The pass.


@dataclass
class _Node:
    op: ir.Operation
    order: float
    ew: Elementwise | None
    why_not: str
    group: int


class _Graph:
    """Top-level ops of one block, their dataflow, and the groups being formed."""

    def __init__(self, block: ir.Block, parent: ir.Operation):
        self.parent = parent
        self.nodes: dict = {}
        self.groups: dict[int, list] = {}
        self.reasons: dict = {}
        self._next = 0
        for i, op in enumerate(block.operations):
            self.add(op.operation, float(i))

    def add(self, op: ir.Operation, order: float) -> _Node:
        ew, why = classify(op) if op.name.startswith("linalg.") else (None, op.name)
        gid = self._next
        self._next += 1
        node = _Node(op, order, ew, why, gid)
        self.nodes[op_id(op)] = node
        self.groups[gid] = [op]
        return node

    def top(self, op: ir.Operation) -> ir.Operation | None:
        while op is not None and op.parent is not None and op.parent != self.parent:
            op = op.parent
        return op if op is not None and op_id(op) in self.nodes else None

    def producer(self, v: ir.Value) -> ir.Operation | None:
        if not isinstance(v, ir.OpResult):
            return None
        return self.top(ir.OpResult(v).owner.operation)

    def users(self, op: ir.Operation) -> list[ir.Operation]:
        out = []
        for r in op.results:
            for u in r.uses:
                t = self.top(u.owner.operation)
                if t is not None and all(op_id(t) != op_id(o) for o in out):
                    out.append(t)
        return out

    def detach(self, op: ir.Operation) -> None:
        """Take `op` out of its group into a group of its own."""
        node = self.nodes[op_id(op)]
        self.groups[node.group] = [m for m in self.groups[node.group] if op_id(m) != op_id(op)]
        node.group = self._next
        self.groups[self._next] = [op]
        self._next += 1

    def dissolve(self, gid: int) -> None:
        """Give every member of group `gid` a group of its own."""
        for m in list(self.groups[gid])[1:]:
            self.detach(m)

    def group_of(self, op) -> int:
        return self.nodes[op_id(op)].group

    def members(self, gid: int) -> list[ir.Operation]:
        return sorted(self.groups[gid], key=lambda o: self.nodes[op_id(o)].order)

    def would_cycle(self, a: int, b: int) -> bool:
        """Whether merging groups a and b makes a path leave the union and come back."""
        ops = self.groups[a] + self.groups[b]
        union = {op_id(o) for o in ops}
        stack = [u for o in ops for u in self.users(o) if op_id(u) not in union]
        seen = set()
        while stack:
            o = stack.pop()
            gid = self.group_of(o)
            if gid in seen:
                continue
            seen.add(gid)
            for m in self.groups[gid]:
                for u in self.users(m):
                    if op_id(u) in union:
                        return True
                    stack.append(u)
        return False

    def solvable(self, ops: Iterable[ir.Operation]) -> bool:
        members = [self.nodes[op_id(o)].ew for o in sorted(ops, key=lambda o: self.nodes[op_id(o)].order)]
        inside = {op_id(m.op): m for m in members}

        def producer_of(v):
            p = self.producer(v)
            if p is not None and op_id(p) in inside:
                return inside[op_id(p)], ir.OpResult(v).result_number
            return None

        return solve_iteration_space(members, producer_of) is not None

    def round_trip(self, first: list, second: list) -> bool:
        """Whether one side widens (extf) a float the other narrowed (truncf): see ROUND_TRIP_REASON."""
        for xs, ys in ((first, second), (second, first)):
            narrowing = {op_id(p) for p in xs if _narrows(self.nodes[op_id(p)].ew)}
            if not narrowing:
                continue
            for c in ys:
                if _widens(self.nodes[op_id(c)].ew) and any(
                        self.producer(v) is not None and op_id(self.producer(v)) in narrowing for v in c.operands):
                    return True
        return False

    def try_merge(self, a: int, b: int) -> str:
        """Merge groups a and b; "" on success, else the reason it was refused."""
        if a == b:
            return ""
        if self.would_cycle(a, b):
            return "would create a cycle"
        if not self.solvable(self.groups[a] + self.groups[b]):
            return "incompatible iteration space"
        if self.round_trip(self.groups[a], self.groups[b]):
            return ROUND_TRIP_REASON
        externals, _, yielded = group_boundary(self.groups[a] + self.groups[b], self.parent)
        if len(externals) > fusion.MAX_INPUTS or len(yielded) > fusion.MAX_RESULTS:
            return (f"the group would read {len(externals)} values and return {len(yielded)} (a fusion.group "
                    f"holds at most {fusion.MAX_INPUTS} and {fusion.MAX_RESULTS})")
        for o in self.groups[b]:
            self.nodes[op_id(o)].group = a
        self.groups[a].extend(self.groups.pop(b))
        return ""


ROUND_TRIP_REASON = "widens a float narrowed just before (IREE folds extf(truncf(x)) to x inside a kernel)"
"""Why a float narrowed to float16 (or another non-bf16 type) and widened again is never one
group: in one kernel, IREE 3.13 folds the pair away and the value is not rounded (measured:
x.bfloat16().float() fused returned x exactly, where eager rounds it). bf16 round trips, in
every op of a bf16 model, stay fused: fusion-lower-to-linalg rounds them in integer ops."""


def _body_ops(ew) -> list[str]:
    return [o.operation.name for o in ew.gen.generic.regions[0].blocks[0].operations] if ew is not None else []


def _bf16_casts(ew, name: str) -> list[bool]:
    """For each `name` cast (arith.truncf or arith.extf) in the body: whether its 16-bit side
    (a truncf's result, an extf's operand) is bfloat16."""
    if ew is None:
        return []
    return [isinstance((o.results[0] if name == "arith.truncf" else o.operands[0]).type, ir.BF16Type)
            for o in (op.operation for op in ew.gen.generic.regions[0].blocks[0].operations) if o.name == name]


def _narrows(ew) -> bool:
    """A body that narrows a float to a type other than bfloat16 (bf16 round trips are rounded
    exactly by fusion-lower-to-linalg instead)."""
    return not all(_bf16_casts(ew, "arith.truncf"))


def _widens(ew) -> bool:
    return "arith.extf" in _body_ops(ew)


def _narrows_to_bf16(ew) -> bool:
    return any(_bf16_casts(ew, "arith.truncf"))


def _widens_bf16(ew) -> bool:
    return any(_bf16_casts(ew, "arith.extf"))


def _same(a, b) -> bool:
    return a is not None and b is not None and a == b


def _edge_ok(p: Elementwise, c: Elementwise, value: ir.Value) -> bool:
    """Whether c reads p's result `value` through a permutation over the same loop count."""
    if p.loops != c.loops:
        return False
    for i, v in enumerate(c.op.operands):
        if v == value and c.reads_operand(i) and not is_permutation(c.operand_map(i), c.loops):
            return False
    return True


@register
@dataclass(frozen=True)
class FormGroupsPass(ModulePass):
    name = "fusion-form-groups"
    summary = "Group producer->consumer chains of elementwise linalg ops into fusion.group ops"

    recompute_multi_use: bool = option(True, "Clone a cheap multi-use producer into each consumer group")
    max_recompute_flops: int = option(16, "Largest per-element flops(P) of a producer that may be recomputed",
                                      minimum=0)
    flop_cost_bytes: float = option(1.0, "Bytes of memory traffic that one recomputed flop is worth", minimum=0)
    fuse_siblings: bool = option(True, "Merge independent groups that read the same tensor into one multi-result group")

    def run(self, module: ir.Operation) -> None:
        for f in all_ops(module, "func.func"):
            if len(f.regions) and len(list(f.regions[0].blocks)) == 1:
                self._run_on_block(f.regions[0].blocks[0], f)

    # -- grouping -----------------------------------------------------------

    def _run_on_block(self, block: ir.Block, parent: ir.Operation) -> None:
        g = _Graph(block, parent)
        order = sorted(g.nodes.values(), key=lambda n: n.order)
        # 1. single-use producers join their consumer.
        for cn in order:
            if cn.ew is None:
                continue
            for v in cn.op.operands:
                p = g.producer(v)
                if p is None or op_id(p) == op_id(cn.op) or g.nodes[op_id(p)].ew is None:
                    continue
                if [op_id(u) for u in g.users(p)] == [op_id(cn.op)]:
                    self._merge_edge(g, p, cn.op, v)
        # 2./3. multi-use producers, last first so consumer groups are complete.
        for pn in reversed(order):
            if pn.ew is None or len(g.users(pn.op)) < 2:
                continue
            users = g.users(pn.op)
            ew_users = [u for u in users if g.nodes[op_id(u)].ew is not None]
            if ew_users and len({g.group_of(u) for u in ew_users}) == 1 and g.group_of(
                ew_users[0]
            ) != pn.group:
                if all(_edge_ok(pn.ew, g.nodes[op_id(u)].ew, r) for u in ew_users for r in pn.op.results):
                    if not g.try_merge(g.group_of(ew_users[0]), pn.group):
                        for u in ew_users:
                            self._clear_reasons(g, pn.op, u)
                        continue
            self._maybe_recompute(g, pn)
        # 4. siblings reading the same tensor.
        if self.fuse_siblings:
            self._merge_siblings(g, block)
        self._dissolve_broadcast_feeders(g)
        self._peel_contraction_feeders(g)
        self._dissolve_reduction_neighbours(g)
        self._rejoin_bf16_round_trips(g)
        self._record_reasons(g)
        self._materialize(g, block)

    def _dissolve_broadcast_feeders(self, g: _Graph) -> None:
        """Ungroup groups with a result that feeds an elementwise op through a broadcast.

        Such a group (e.g. ops on a bias [M] read as [N, M]) cannot join its consumers, and as
        a kernel of its own it would stop the back end from recomputing it inside them, which
        IREE does for cheap broadcast producers: one more kernel, not one fewer.
        """
        for gid in list(g.groups):
            members = g.groups[gid]
            if len(members) < 2:
                continue
            ids = {op_id(m) for m in members}
            outside = [(m, u) for m in members for u in g.users(m) if op_id(u) not in ids]
            if not any(
                g.nodes[op_id(u)].ew is not None
                and not all(_edge_ok(g.nodes[op_id(m)].ew, g.nodes[op_id(u)].ew, r) for r in m.results)
                for m, u in outside
            ):
                continue
            g.dissolve(gid)
            for m in members:
                for u in g.users(m):
                    if op_id(u) in ids:
                        self._set_reason(g, m, u, "broadcast producer chain, left to the back end")

    def _peel_contraction_feeders(self, g: _Graph) -> None:
        """Take casts and pure copies whose only readers are contraction inputs out of groups.

        IREE fuses such a producer (bf16 -> f32 extf, a weight transpose) into the operand
        loads of the matmul/conv/reduction that reads it. Inside a braze group it becomes
        part of a bigger generic: IREE then materializes (or constant-folds) the f32 operand
        and runs an f32 matmul without bf16 MMA. Measured on the H200: the bf16 GELU MLP took
        1.58 ms with the cast grouped against 0.70 ms without braze's passes.
        """
        changed = True
        while changed:
            changed = False
            for gid in list(g.groups):
                for m in list(g.groups[gid]):
                    if len(g.groups[gid]) < 2:
                        break
                    if not (_is_cast_or_copy(g.nodes[op_id(m)].ew) and _feeds_only_contractions(g, m)):
                        continue
                    g.detach(m)
                    for v in m.operands:
                        p = g.producer(v)
                        if p is not None and g.group_of(p) == gid:
                            self._set_reason(g, p, m, "cast/copy feeding a contraction, left for IREE to fuse into its operand")
                    changed = True

    def _dissolve_reduction_neighbours(self, g: _Graph) -> None:
        """Ungroup groups that read a reduction's or contraction's result or feed one.

        "Read" is transitive through ungrouped elementwise ops: IREE fuses a reduction's chain
        of elementwise consumers into its dispatch (a layer norm's mean, then its divide), so
        a group reading the end of that chain sits next to the reduction all the same. Found
        by the differential suite (seed 184): a layer norm's (x - mean) * rstd as one group
        took 6 dispatches where IREE alone took 5.

        IREE fuses elementwise producers into a reduction's dispatch, elementwise consumers
        into a matmul's or reduction's dispatch, and recognizes softmax and normalization
        patterns across them. A braze group next to such an op gets a dispatch of its own or
        hides the pattern. Measured (IREE dispatch counts, CPU and sm_90): torch's attention
        softmax took 4 dispatches with groups against 2 without, TransformerEncoderLayer 20
        against 18.
        """
        for gid in list(g.groups):
            members = g.groups[gid]
            if len(members) < 2:
                continue
            ids = {op_id(m) for m in members}
            feeds = any(_is_reduction(g, u) for m in members for u in g.users(m) if op_id(u) not in ids)
            reads = any(_reduction_fed(g, g.producer(v)) for m in members for v in m.operands
                        if g.producer(v) is not None and op_id(g.producer(v)) not in ids)
            if not (feeds or reads):
                continue
            g.dissolve(gid)
            reason = "next to a reduction or contraction, left for IREE to fuse into its dispatch"
            for m in members:
                for u in g.users(m):
                    if op_id(u) in ids:
                        self._set_reason(g, m, u, reason)

    def _rejoin_bf16_round_trips(self, g: _Graph) -> None:
        """Group a float narrowed to bfloat16 with the op that widens it again, even where the
        steps above left both to IREE (next to a contraction or reduction).

        IREE 3.13's CPU code generator folds `extf(truncf(x))` to `x` once both are in one
        dispatch, and its aggressive fusion puts them in one with a matmul's elementwise
        consumers, so `y.bfloat16().float() - y` after a matmul came back 0 instead of y's
        rounding error (random graph 151, bench/NOTES.md §30, §37; IREE's CUDA code generator
        kept the pair in the same dispatch, measured on the H200). As one
        group, fusion-lower-to-linalg rounds the pair in integer ops IREE cannot fold, and
        the group is still an elementwise consumer IREE fuses into the matmul's dispatch. A
        widening that feeds only contractions stays apart: IREE fuses it into the matmul's
        operand loads (bf16 MMA), in a dispatch of its own from the narrowing."""
        for cn in sorted(g.nodes.values(), key=lambda n: n.order):
            if cn.ew is None or not _widens_bf16(cn.ew) or _feeds_only_contractions(g, cn.op):
                continue
            for v in cn.op.operands:
                p = g.producer(v)
                if p is None or g.group_of(p) == cn.group or not _narrows_to_bf16(g.nodes[op_id(p)].ew):
                    continue
                if _edge_ok(g.nodes[op_id(p)].ew, cn.ew, v) and not g.try_merge(cn.group, g.group_of(p)):
                    self._clear_reasons(g, p, cn.op)

    def _merge_edge(self, g: _Graph, p, c, value) -> None:
        pe, ce = g.nodes[op_id(p)].ew, g.nodes[op_id(c)].ew
        if not _edge_ok(pe, ce, value):
            reason = "incompatible iteration space"
        else:
            reason = g.try_merge(g.group_of(c), g.group_of(p))
        if reason:
            self._set_reason(g, p, c, reason)
        else:
            self._clear_reasons(g, p, c)

    def _set_reason(self, g: _Graph, p, c, reason: str) -> None:
        for i, v in enumerate(c.operands):
            if _same(g.producer(v), p):
                g.reasons[(op_id(c), i)] = reason

    def _clear_reasons(self, g: _Graph, p, c) -> None:
        for i, v in enumerate(c.operands):
            if _same(g.producer(v), p):
                g.reasons.pop((op_id(c), i), None)

    def recompute_gain(self, pe: Elementwise, uses: int, takers: int, survives: bool, rest_uses: int) -> float:
        """Bytes saved minus the weighted flops added by recomputing `pe` (see module doc)."""
        n = pe.elements
        ob = sum(byte_width(r.type) for r in pe.op.results)
        ins = sum(tensor_bytes(v.type) for v in list(pe.op.operands)[: pe.n_inputs]
                  if isinstance(v.type, ir.ShapedType))
        unfused = ins + n * ob + uses * n * ob
        recompute = takers * ins + ((ins + n * ob + rest_uses * n * ob) if survives else 0)
        extra = n * pe.flops * (takers if survives else takers - 1)
        return (unfused - recompute) - self.flop_cost_bytes * extra

    def _maybe_recompute(self, g: _Graph, pn: _Node) -> None:
        p, pe = pn.op, pn.ew
        users = g.users(p)
        takers: dict[int, list] = {}
        rest = []
        for u in users:
            ue = g.nodes[op_id(u)].ew
            if ue is not None and g.group_of(u) != pn.group and all(
                _edge_ok(pe, ue, r) for r in p.results
            ):
                takers.setdefault(g.group_of(u), []).append(u)
            else:
                rest.append(u)
        if len(g.groups[pn.group]) > 1:
            reason = "multi-use producer inside a group, not recomputed"
        elif not self.recompute_multi_use:
            reason = "multi-use producer, recompute disabled"
        elif not takers:
            reason = ""
        elif pe.flops > self.max_recompute_flops:
            reason = "multi-use producer, recompute too costly"
        else:
            uses = sum(1 for r in p.results for _ in r.uses)
            rest_ids = {op_id(o) for o in rest}
            rest_uses = sum(
                1 for r in p.results for use in r.uses
                if op_id(g.top(use.owner.operation)) in rest_ids
            )
            gain = self.recompute_gain(pe, uses, len(takers), bool(rest), rest_uses)
            reason = "" if gain > 0 else "multi-use producer, recompute too costly"
        if reason or not takers:
            for u in users:
                ue = g.nodes[op_id(u)].ew
                if ue is None or g.group_of(u) == pn.group:
                    continue
                if not all(_edge_ok(pe, ue, r) for r in p.results):
                    self._set_reason(g, p, u, "incompatible iteration space")
                else:
                    self._set_reason(g, p, u, reason or "multi-use producer")
            return
        for gid, group_users in takers.items():
            clone = p.clone(ip=ir.InsertionPoint(p))
            node = g.add(clone, pn.order - 0.5)
            for u in group_users:
                for i, v in enumerate(u.operands):
                    if _same(g.producer(v), p):
                        u.operands[i] = clone.results[list(p.results).index(v)]
            reason = g.try_merge(gid, node.group)
            if reason:
                for u in group_users:
                    self._set_reason(g, clone, u, reason)
            else:
                for u in group_users:
                    self._clear_reasons(g, clone, u)
        if not g.users(p):
            g.groups.pop(pn.group)
            del g.nodes[op_id(p)]
            p.erase()

    def _merge_siblings(self, g: _Graph, block: ir.Block) -> None:
        readers: dict = {}
        for n in sorted(g.nodes.values(), key=lambda n: n.order):
            if n.ew is None:
                continue
            for i, v in enumerate(list(n.op.operands)[: n.ew.n_inputs]):
                if isinstance(v.type, ir.ShapedType) and is_permutation(n.ew.in_maps[i], n.ew.loops):
                    lst = readers.setdefault(v, [])
                    if n.op not in lst:
                        lst.append(n.op)
        for ops in readers.values():
            for o in ops[1:]:
                a, b = g.group_of(ops[0]), g.group_of(o)
                if a != b:
                    g.try_merge(a, b)

    def _record_reasons(self, g: _Graph) -> None:
        """Write why each adjacent pair is apart onto its consumer (see UNFUSED_ATTR)."""
        for cn in list(g.nodes.values()):
            c = cn.op
            entries = {}
            for i, v in enumerate(c.operands):
                p = g.producer(v)
                if p is None or p.name in _CLONEABLE or c.name == "func.return":
                    continue
                if g.group_of(p) == cn.group:
                    continue
                pn = g.nodes[op_id(p)]
                if cn.ew is None and pn.ew is None:
                    continue
                if pn.ew is None:
                    reason = f"non-elementwise: {pn.why_not}"
                elif cn.ew is None:
                    reason = f"non-elementwise: {cn.why_not}"
                else:
                    reason = g.reasons.get((op_id(c), i), "not fused")
                entries[str(i)] = ir.StringAttr.get(reason)
            if entries:
                c.attributes[UNFUSED_ATTR] = ir.DictAttr.get(entries)

    # -- building fusion.group ops -----------------------------------------

    def _materialize(self, g: _Graph, block: ir.Block) -> None:
        groups = [g.members(gid) for gid in g.groups if len(g.groups[gid]) > 1]
        for members in groups:
            # Earlier groups may have moved ops: order members by where they are now.
            position = {op_id(op): i for i, op in enumerate(block.operations)}
            members.sort(key=lambda o: position[op_id(o)])
            what = ", ".join(describe_op(m) for m in members[:4]) + (", ..." if len(members) > 4 else "")
            if decide(self.name, f"group of {len(members)} ops ({what}) at {short_location(str(members[0].location))}"):
                build_group(members, "group", g.parent)
        n = 0
        for op in block.operations:
            if op.operation.name == "fusion.group":
                op.operation.attributes["label"] = ir.StringAttr.get(f"group{n}")
                n += 1


_CAST_OPS = {
    "arith.extf", "arith.truncf", "arith.extsi", "arith.extui", "arith.trunci", "arith.sitofp",
    "arith.uitofp", "arith.fptosi", "arith.fptoui", "arith.bitcast", "linalg.yield",
}


def _is_cast_or_copy(ew: Elementwise | None) -> bool:
    """An elementwise op whose body only converts or forwards its input (cast, transpose, copy)."""
    if ew is None:
        return False
    body = ew.gen.generic.regions[0].blocks[0]
    return all(o.operation.name in _CAST_OPS for o in body.operations)


def _feeds_only_contractions(g: _Graph, op: ir.Operation) -> bool:
    """Whether every use of `op` is an input (not an init) of a non-elementwise linalg op
    with a reduction loop: matmul, batch_matmul, convolution, reduction generics."""
    uses = [u for r in op.results for u in r.uses]
    if not uses:
        return False
    for u in uses:
        owner = g.top(u.owner.operation)
        if owner is None or not owner.name.startswith("linalg.") or g.nodes[op_id(owner)].ew is not None:
            return False
        if "(reduction)" not in g.nodes[op_id(owner)].why_not:
            return False
        sizes = owner.attributes["operandSegmentSizes"] if "operandSegmentSizes" in owner.attributes else None
        n_inputs = list(ir.DenseI32ArrayAttr(sizes))[0] if sizes is not None else len(owner.operands) - 1
        if u.operand_number >= n_inputs:
            return False
    return True


def _reduction_fed(g: _Graph, op: ir.Operation | None) -> bool:
    """`op` is a reduction or contraction, or an ungrouped elementwise op reading one through
    other ungrouped elementwise ops: IREE's dispatch for the reduction takes it in."""
    seen: set = set()
    todo = [op]
    while todo:
        o = todo.pop()
        if o is None or op_id(o) in seen:
            continue
        seen.add(op_id(o))
        if _is_reduction(g, o):
            return True
        node = g.nodes.get(op_id(o))
        if node is None or node.ew is None or len(g.groups[g.group_of(o)]) > 1:
            continue
        todo.extend(g.producer(v) for v in o.operands)
    return False


def _is_reduction(g: _Graph, op: ir.Operation | None) -> bool:
    """A linalg op with a reduction loop: a reduction generic or a contraction (matmul, conv)."""
    node = g.nodes.get(op_id(op)) if op is not None else None
    return node is not None and node.ew is None and "(reduction)" in node.why_not


def _top(op: ir.Operation, parent: ir.Operation) -> ir.Operation:
    while op.parent is not None and op.parent != parent:
        op = op.parent
    return op


def group_boundary(members: list[ir.Operation], parent: ir.Operation) -> tuple[list, list, list]:
    """What a fusion.group of `members` (top-level ops of `parent`'s block) would take and give:
    the values it reads from outside, the operand-less constants it clones inside instead, and
    the member results used outside, each in member order."""
    member_set = {op_id(m) for m in members}
    inside: set = set()
    for m in members:
        inside |= defined_inside(m)
    externals: list = []
    clones: list = []
    for m in members:
        for o in all_ops(m, post_order=True):
            for v in o.operands:
                if v in inside or v in externals or v in clones:
                    continue
                owner = ir.OpResult(v).owner.operation if isinstance(v, ir.OpResult) else None
                if owner is not None and owner.name in _CLONEABLE and not len(owner.operands):
                    clones.append(v)
                else:
                    externals.append(v)
    yielded = []
    for m in members:
        for r in m.results:
            if any(op_id(_top(u.owner.operation, parent)) not in member_set for u in r.uses):
                yielded.append(r)
    return externals, clones, yielded


def build_group(members: list[ir.Operation], label: str, parent: ir.Operation) -> ir.Operation:
    """Wrap `members` (top-level ops of `parent`'s block, in order) in one fusion.group."""
    externals, clones, yielded = group_boundary(members, parent)
    last = members[-1]
    loc = ir.Location.fused([m.location for m in members], context=last.context)
    with loc:
        group = fusion.GroupOp(
            externals, ir.StringAttr.get("elementwise"), ir.StringAttr.get(label),
            outputs=[v.type for v in yielded], ip=ir.InsertionPoint(last),
        ).operation
        body = group.regions[0].blocks.append(*[v.type for v in externals])
        remap = dict(zip(externals, body.arguments))
        with ir.InsertionPoint(body):
            for v in clones:
                remap[v] = ir.OpResult(v).owner.operation.clone().results[ir.OpResult(v).result_number]
            yield_op = fusion.YieldOp(yielded).operation
    for m in members:
        m.move_before(yield_op)
        remap_operands(m, remap)
    for i, v in enumerate(yielded):
        for u in list(v.uses):
            owner = u.owner.operation
            if _top(owner, parent) != group:
                owner.operands[u.operand_number] = group.results[i]
    _move_dependents_after(group)
    return group


def _move_dependents_after(group: ir.Operation) -> None:
    """Move ops placed before `group` that (transitively) use its results to after it."""
    block = group.block
    tainted = set(group.results)
    moved = []
    for op in block.operations:
        op = op.operation
        if op == group:
            break
        if any(v in tainted for o in all_ops(op) for v in o.operands):
            tainted.update(op.results)
            moved.append(op)
    anchor = group
    for op in moved:
        op.move_after(anchor)
        anchor = op
