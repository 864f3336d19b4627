"""fusion-lower-to-linalg: replace each fusion.group with one linalg.generic that computes all its results.

    %g = "fusion.group"(%x) ({                    %e = tensor.empty() : tensor<4xf32>
    ^bb0(%a: tensor<4xf32>):                      %g = linalg.generic {indexing_maps = [#id, #id],
      %0 = linalg.generic {mulf} ins(%a) ...  ->        iterator_types = ["parallel"]}
      %1 = linalg.generic {exp}  ins(%0) ...            ins(%x) outs(%e) {
      "fusion.yield"(%1)                              ^bb0(%in: f32, %out: f32):
    }) {kind = "elementwise", ...}                      %m = arith.mulf %in, %c2 : f32
                                                        %r = math.exp %m : f32
                                                        linalg.yield %r : f32 }

Named members are generalized first (upstream `linalg-generalize-named-ops`, run on a scratch
copy). The fused iteration space comes from `elementwise.solve_iteration_space`; each member's
body is inlined with its block arguments replaced by the scalars its producers computed (for
values made inside the group) or by block arguments of the fused op (for the group's inputs,
read through the member's map composed onto the fused space; identical value+map pairs are
read once). Body ops are cloned unchanged, so results are bit-identical to the unfused IR.
Each result gets a fresh `tensor.empty` init. The pass also drops the `fusion.unfused`
attributes that fusion-form-groups left for fusion-report.
"""

from __future__ import annotations

from dataclasses import dataclass

from braze._mlir import arith, ir, linalg, tensor

from braze.dialects.fusion import UNFUSED_ATTR
from braze.irutil import all_ops, op_id, remap_operands

from .elementwise import affine_map, classify, compose, generalize, solve_iteration_space
from .registry import ModulePass, PassFailure, register


@register
@dataclass(frozen=True)
class LowerToLinalgPass(ModulePass):
    name = "fusion-lower-to-linalg"
    summary = "Lower each fusion.group to one (multi-result) linalg.generic"

    def run(self, module: ir.Operation) -> None:
        ops = all_ops(module, post_order=True)
        for op in ops:
            if UNFUSED_ATTR in op.attributes:
                del op.attributes[UNFUSED_ATTR]
        for group in [op for op in ops if op.name == "fusion.group"]:
            lower_group(group)


def _fail(group: ir.Operation, why: str) -> PassFailure:
    label = ir.StringAttr(group.attributes["label"]).value if "label" in group.attributes else "?"
    return PassFailure(
        f"fusion-lower-to-linalg: cannot lower group '{label}': {why} "
        "(fusion-form-groups should not have formed it)",
        group.location,
    )


def _generalize_members(group: ir.Operation, block: ir.Block) -> None:
    """Replace named linalg ops in the group by their linalg.generic form, in place."""
    for op in list(block.operations):
        op = op.operation
        if not op.name.startswith("linalg.") or op.name == "linalg.generic":
            continue
        gen = generalize(op)
        if gen is None:
            raise _fail(group, f"'{op.name}' does not generalize to linalg.generic")
        clone = gen.generic.clone(ip=ir.InsertionPoint(op))
        remap_operands(clone, gen.outer)
        for old, new in zip(op.results, clone.results):
            old.replace_all_uses_with(new)
        op.erase()


def lower_group(group: ir.Operation) -> ir.Operation | None:
    """Replace one fusion.group by one linalg.generic; returns it (None for an empty group)."""
    block = group.regions[0].blocks[0]
    _generalize_members(group, block)
    ops = [o.operation for o in block.operations]
    yield_op = ops[-1]
    members = []
    for op in ops[:-1]:
        if op.name == "linalg.generic":
            ew, why = classify(op)
            if ew is None:
                raise _fail(group, f"member is not elementwise ({why})")
            members.append(ew)
        elif op.name not in ("arith.constant", "tensor.empty"):
            raise _fail(group, f"unexpected op '{op.name}' at the top level of the group")
    by_op = {op_id(m.op): m for m in members}

    def producer_of(v):
        if isinstance(v, ir.OpResult):
            owner = ir.OpResult(v).owner.operation
            if op_id(owner) in by_op:
                return by_op[op_id(owner)], ir.OpResult(v).result_number
        return None

    solved = solve_iteration_space(members, producer_of) if members else None
    if solved is None:
        if members:
            raise _fail(group, "its members share no iteration space")
    # Constants and empties at the group's top level move out first, so they dominate the fused op.
    outer_cache: dict = {}
    for op in ops[:-1]:
        if op.name in ("arith.constant", "tensor.empty"):
            outer_cache[op_id(op)] = op.clone(ip=ir.InsertionPoint(group))

    def outer(v: ir.Value) -> ir.Value:
        """The value outside the group that `v` (defined at the group's top level) stands for."""
        if isinstance(v, ir.BlockArgument) and ir.BlockArgument(v).owner == block:
            return group.operands[ir.BlockArgument(v).arg_number]
        if isinstance(v, ir.OpResult):
            owner = ir.OpResult(v).owner.operation
            if owner.parent == group:
                if op_id(owner) not in outer_cache:
                    outer_cache[op_id(owner)] = owner.clone(ip=ir.InsertionPoint(group))
                return outer_cache[op_id(owner)].results[ir.OpResult(v).result_number]
        return v

    results = list(yield_op.operands)
    if not members:
        for r, v in zip(group.results, results):
            r.replace_all_uses_with(outer(v))
        group.erase()
        return None
    t, sizes = solved
    loops = len(sizes)

    # Inputs and outputs of the fused op.
    inputs: list[tuple[ir.Value, tuple]] = []
    input_index: dict = {}

    def fused_input(v: ir.Value, m: tuple) -> int:
        key = (v, m)
        if key not in input_index:
            input_index[key] = len(inputs)
            inputs.append(key)
        return input_index[key]

    reads: dict = {}
    for ew in members:
        operands = list(ew.op.operands)
        for i, v in enumerate(operands):
            if not ew.reads_operand(i) or producer_of(v) is not None:
                continue
            reads[(op_id(ew.op), i)] = fused_input(outer(v), compose(ew.operand_map(i), t[op_id(ew.op)]))
    outputs = []
    for v in results:
        src = producer_of(v)
        if src is None:
            outputs.append(None)
            continue
        ew, r = src
        outputs.append((v, compose(ew.out_maps[r], t[op_id(ew.op)])))

    loc = group.location
    with loc, ir.InsertionPoint(group):
        inits = []
        for o in outputs:
            if o is not None:
                ty = ir.RankedTensorType(o[0].type)
                inits.append(tensor.EmptyOp(list(ty.shape), ty.element_type).result)
        maps = [affine_map(m, loops) for _, m in inputs] + [
            affine_map(o[1], loops) for o in outputs if o is not None
        ]
        parallel = ir.Attribute.parse("#linalg.iterator_type<parallel>")
        fused = linalg.GenericOp(
            [o[0].type for o in outputs if o is not None],
            [v for v, _ in inputs],
            inits,
            ir.ArrayAttr.get([ir.AffineMapAttr.get(m) for m in maps]),
            ir.ArrayAttr.get([parallel] * loops),
        )
        arg_types = [_scalar(v.type) for v, _ in inputs] + [_scalar(v.type) for v in inits]
        fblock = fused.regions[0].blocks.append(*arg_types)

    scalars: dict = {}
    with ir.InsertionPoint(fblock), loc:
        for ew in members:
            gblock = ew.op.regions[0].blocks[0]
            mapping: dict = {}
            for i, a in enumerate(gblock.arguments):
                if (op_id(ew.op), i) in reads:
                    mapping[a] = fblock.arguments[reads[(op_id(ew.op), i)]]
                elif ew.reads_operand(i):
                    mapping[a] = scalars[ew.op.operands[i]]
            body = [o.operation for o in gblock.operations]
            for bop in body[:-1]:
                new = bop.clone(ip=ir.InsertionPoint(fblock))
                for k, v in enumerate(new.operands):
                    if v in mapping:
                        new.operands[k] = mapping[v]
                    else:
                        new.operands[k] = outer(v)
                if bop.name == "linalg.index":
                    d = ir.IntegerAttr(bop.attributes["dim"]).value
                    new.attributes["dim"] = ir.IntegerAttr.get(
                        ir.IntegerType.get_signless(64), t[op_id(ew.op)][d]
                    )
                for old, nv in zip(bop.results, new.results):
                    mapping[old] = nv
            for r, v in zip(ew.op.results, body[-1].operands):
                scalars[r] = mapping[v] if v in mapping else outer(v)
        linalg.YieldOp([scalars[o[0]] for o in outputs if o is not None])
    round_bfloat16_round_trips(fblock)

    k = 0
    for r, v, o in zip(group.results, results, outputs):
        if o is None:
            r.replace_all_uses_with(outer(v))
        else:
            r.replace_all_uses_with(fused.results[k])
            k += 1
    group.erase()
    return fused.operation


def round_bfloat16_round_trips(block: ir.Block) -> int:
    """Spell each `extf(truncf(x))` f32 -> bf16 -> f32 of a fused body as integer rounding.

    Inside one kernel IREE 3.13 folds the pair to `x` (measured: a fused x.bfloat16().float()
    returned x unrounded), but eager rounds there, on every bf16 op's result. The same rounding,
    to nearest even, in integer ops IREE cannot fold away (NaN stays a quiet NaN; overflow
    rounds to infinity, as the cast does):

        bits = bitcast(x); r = (bits + 0x7fff + ((bits >> 16) & 1)) & 0xffff0000
        result = isnan(x) ? x : bitcast(r)

    Returns how many pairs were rewritten; the truncf stays for any other user."""
    f32, bf16 = ir.F32Type.get(), ir.BF16Type.get()
    i32 = ir.IntegerType.get_signless(32)
    count = 0
    for op in list(block.operations):
        op = op.operation
        if op.name != "arith.extf" or op.results[0].type != f32:
            continue
        source = op.operands[0]
        trunc = source.owner if isinstance(source, ir.OpResult) else None
        if trunc is None or trunc.name != "arith.truncf" or source.type != bf16 or trunc.operands[0].type != f32:
            continue
        x = trunc.operands[0]
        with ir.InsertionPoint(op), op.location:
            const = lambda v: arith.ConstantOp(i32, ir.IntegerAttr.get(i32, v)).result  # noqa: E731
            bits = arith.BitcastOp(i32, x).result
            lsb = arith.AndIOp(arith.ShRUIOp(bits, const(16)).result, const(1)).result
            biased = arith.AddIOp(arith.AddIOp(bits, const(0x7FFF)).result, lsb).result
            rounded = arith.BitcastOp(f32, arith.AndIOp(biased, const(-65536)).result).result
            nan = arith.CmpFOp(arith.CmpFPredicate.UNO, x, x).result
            result = arith.SelectOp(nan, x, rounded).result
        op.results[0].replace_all_uses_with(result)
        op.erase()
        count += 1
    return count


def _scalar(t: ir.Type) -> ir.Type:
    return ir.ShapedType(t).element_type if isinstance(t, ir.ShapedType) else t
