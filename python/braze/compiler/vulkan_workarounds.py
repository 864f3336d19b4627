"""Vulkan (SPIR-V): fixes for IREE 3.13 bugs, on braze's module before IREE
(widen_bf16_contractions) and on IREE's executables after IREE configured them
(avoid_promoted_permuting_copies).

IREE 3.13's SPIR-V `MatmulPromoteVectorize` pipeline (the one its NVIDIA configuration picks for
matmuls and batch matmuls) computes a contraction whose result feeds a fused pure copy with
permuted dimensions wrong: only the first thread of each workgroup writes its part of the tile
(bench/NOTES.md §30; reproducer bench/repro/vulkan_promoted_copy.mlir). The accumulator lives in
workgroup memory because the consumer cannot write it in place; each thread's copy of its part
to the output keeps the `copy_to_workgroup_memory` marker and is distributed over the workgroup a
second time, so every thread but (0, 0) skips it. torch's multi-head attention hits it: its
output [batch * heads, tokens, dim] is permuted to [tokens, batch * heads, dim] in the same
dispatch as softmax(QK^T) V, which left TransformerEncoderLayer(256, 4) with a relative error of
0.19 on Vulkan.

braze moves each such dispatch to SPIR-V's `BaseVectorize` pipeline (no workgroup-memory
staging), keeping IREE's own workgroup tile and workgroup size: each thread computes the same
part of the tile it computed before, from registers.
"""

from __future__ import annotations

import re

from braze.compiler._iree_compiler import iree_ir
from braze.errors import CompileError
from braze.irutil import all_ops

PROMOTED = "MatmulPromoteVectorize"
RESHAPES = ("tensor.expand_shape", "tensor.collapse_shape")


def _maps(op) -> list:
    return [iree_ir.AffineMapAttr(a).value for a in iree_ir.ArrayAttr(op.attributes["indexing_maps"])]


def _dims(amap) -> list[int | None]:
    """The loop dimension of each result of an affine map (None for a result that is not one)."""
    return [e.position if isinstance(e, iree_ir.AffineDimExpr) else None
            for e in amap.results]


def _is_permuting_copy(op, value) -> bool:
    """A linalg.generic whose only input is `value`, whose body yields that input unchanged, and
    which reads it through a permutation that is not the output's order."""
    if op.name != "linalg.generic" or len(op.operands) != 2 or op.operands[0] != value:
        return False
    block = op.regions[0].blocks[0]
    body = list(block.operations)
    if len(body) != 1 or body[0].name != "linalg.yield" or len(body[0].operands) != 1 \
            or body[0].operands[0] != block.arguments[0]:
        return False
    read, write = (_dims(m) for m in _maps(op))
    return None not in read and sorted(read) == sorted(write) and read != write


def _permuting_copy_user(value) -> bool:
    for use in value.uses:
        owner = use.owner
        if owner.name in RESHAPES and _permuting_copy_user(owner.results[0]):
            return True
        if _is_permuting_copy(owner, value):
            return True
    return False


def _ints(text: str) -> list[list[int]]:
    return [[int(x) for x in row.split(",") if x.strip()] for row in re.findall(r"\[([-\d, ]*)\]", text)]


def _base_vectorize(root, translation: str) -> tuple[str, str]:
    """(lowering_config, translation_info) of BaseVectorize for a contraction IREE configured
    for MatmulPromoteVectorize: IREE's workgroup tile and workgroup size, each thread the
    part of the tile it had (n along x, m along y), 4-deep K steps where K's tile allows."""
    config = str(root.attributes["lowering_config"])
    tiles = re.search(r"tile_sizes = (\[\[.*?\]\])", config)
    size = re.search(r"workgroup_size = (\[[\d, ]+\])", translation)
    iterators = [str(a) for a in iree_ir.ArrayAttr(root.attributes["iterator_types"])]
    if not tiles or not size:
        raise ValueError(f"unexpected IREE configuration {config} / {translation}")
    tile, (x, y) = _ints(tiles.group(1))[0], _ints(size.group(1))[0][:2]
    parallel = [i for i, it in enumerate(iterators) if "parallel" in it]
    reduction = [i for i, it in enumerate(iterators) if "reduction" in it]
    if len(tile) != len(iterators) or len(parallel) < 2 or not reduction:
        raise ValueError(f"unexpected tile {tile} for loops {iterators}")
    n, m = parallel[-1], parallel[-2]
    if tile[n] % x or tile[m] % y:
        raise ValueError(f"tile {tile} does not divide among workgroup size {x}x{y}")
    last = parallel[-1] + 1
    workgroup = [t if i in parallel else 0 for i, t in enumerate(tile)][:last]
    thread = [1 if i in parallel else 0 for i in range(last)]
    thread[m], thread[n] = tile[m] // y, tile[n] // x
    steps = [0] * len(tile)
    for i in reduction:
        steps[i] = 4 if tile[i] % 4 == 0 else 1
    show = lambda v: "[" + ", ".join(map(str, v)) + "]"  # noqa: E731
    return (f"#iree_codegen.lowering_config<tile_sizes = [{show(workgroup)}, {show(thread)}, {show(steps)}]>",
            f"#iree_codegen.translation_info<pipeline = #iree_gpu.spirv_pipeline<BaseVectorize> "
            f"workgroup_size = [{x}, {y}, 1]>")


def avoid_promoted_permuting_copies(module_op) -> list[str]:
    """At IREE's executable-configurations phase: each Vulkan dispatch configured for
    MatmulPromoteVectorize whose contraction result feeds a permuting copy goes to BaseVectorize
    instead. Returns one line per dispatch changed."""
    changed = []
    for variant in all_ops(module_op, "hal.executable.variant"):
        if "vulkan" not in str(variant.attributes["target"]):
            continue
        for func in all_ops(variant, "func.func"):
            if "translation_info" not in func.attributes:
                continue
            translation = str(func.attributes["translation_info"])
            if PROMOTED not in translation:
                continue
            roots = [op for op in all_ops(func) if "lowering_config" in op.attributes and op.name.startswith("linalg.")]
            for root in roots:
                if not _permuting_copy_user(root.results[0]):
                    continue
                name = iree_ir.StringAttr(func.attributes["sym_name"]).value
                try:
                    config, info = _base_vectorize(root, translation)
                except ValueError as e:
                    raise CompileError(
                        f"braze could not move dispatch {name} off SPIR-V's MatmulPromoteVectorize pipeline ({e}); "
                        "IREE 3.13 computes that dispatch wrong on Vulkan (a contraction feeding a permuting copy, "
                        "bench/repro/vulkan_promoted_copy.mlir). This is braze's limitation, not your model's: "
                        "compile for device='cuda' or 'cpu', and report it with the model") from None
                root.attributes["lowering_config"] = iree_ir.Attribute.parse(config)
                func.attributes["translation_info"] = iree_ir.Attribute.parse(info)
                changed.append(f"{name}: BaseVectorize (its result feeds a permuting copy)")
    return changed


CONTRACTIONS = ("linalg.conv_2d_nchw_fchw", "linalg.conv_2d_nhwc_hwcf", "linalg.conv_2d_ngchw_gfchw",
                "linalg.depthwise_conv_2d_nchw_chw", "linalg.depthwise_conv_2d_nhwc_hwc", "linalg.matmul",
                "linalg.batch_matmul", "linalg.conv_1d_ncw_fcw", "linalg.conv_3d_ncdhw_fcdhw")


def _widened_from_bf16(value, bf16) -> bool:
    """Whether `value` is computed (through reshapes) by a linalg.generic that reads a bfloat16
    tensor: an elementwise prologue IREE would fuse into the contraction's dispatch."""
    op = value.owner
    while op is not None and getattr(op, "name", None) in RESHAPES:
        op = op.operands[0].owner
    if op is None or getattr(op, "name", None) != "linalg.generic":
        return False
    inputs = list(op.operands)[:len(op.operands) - len(op.results)]
    return any(isinstance(v.type, iree_ir.RankedTensorType) and iree_ir.RankedTensorType(v.type).element_type == bf16
               for v in inputs)


def widen_bf16_contractions(module) -> int:
    """Before IREE: each convolution or matmul with bfloat16 operands and a float32 accumulator
    reads its operands widened to float32 in a dispatch of their own, so SPIR-V code generation
    sees a float32 contraction. IREE 3.13 cannot compile a bf16 contraction for Vulkan ("no GPU
    subgroup mma compute ops generated" for the NVIDIA targets, "failed to legalize
    'vector.bitcast'" for llvmpipe), also where torch-mlir already widened the operands (IREE
    fuses the widening back into the matmul). The products and sums are the same float32
    arithmetic (a bf16 value widens exactly); the widened operands are behind
    util.optimization_barrier, which keeps the widening out of the contraction's dispatch (a
    constant weight's widening is still computed once, at load). Returns how many contractions
    changed."""
    changed = 0
    with module.context, iree_ir.Location.unknown():
        f32 = iree_ir.F32Type.get()
        bf16 = iree_ir.BF16Type.get()
        for op in all_ops(module.operation, CONTRACTIONS):
            ins = [o for o in op.operands][:-1]
            out = iree_ir.RankedTensorType(op.operands[len(op.operands) - 1].type)
            tys = [iree_ir.RankedTensorType(v.type) for v in ins]
            if out.element_type != f32:
                continue
            direct = [i for i, t in enumerate(tys) if t.element_type == bf16]
            widened = [i for i, v in enumerate(ins) if tys[i].element_type == f32 and _widened_from_bf16(v, bf16)]
            if not direct and not widened:
                continue
            ip = iree_ir.InsertionPoint(op)
            for i in direct + widened:
                value = ins[i]
                wide = iree_ir.RankedTensorType.get(tys[i].shape, f32)
                if i in direct:
                    value = iree_ir.Operation.create("arith.extf", results=[wide], operands=[value],
                                                     loc=op.location, ip=ip).results[0]
                value = iree_ir.Operation.create("util.optimization_barrier", results=[wide], operands=[value],
                                                 loc=op.location, ip=ip).results[0]
                op.operands[i] = value
                if i in direct:
                    # the named op's body widened this operand itself: its block argument is f32 now
                    arg = op.regions[0].blocks[0].arguments[i]
                    arg.set_type(f32)
                    for use in list(arg.uses):
                        user = use.owner
                        if user.name == "arith.extf":
                            user.results[0].replace_all_uses_with(arg)
                            user.erase()
            changed += 1
    return changed
