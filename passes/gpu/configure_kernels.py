"""fusion-configure-kernels: give each standalone elementwise kernel a 1-D iteration space and a
GPU kernel configuration.

    %r = linalg.generic {maps = [#id2, #id2]} ins(%x : tensor<4096x4096xf32>) ...
  ->
    %c = tensor.collapse_shape %x [[0, 1]] : tensor<4096x4096xf32> into tensor<16777216xf32>
    %g = linalg.generic {maps = [#id1, #id1], braze.kernel_config = "workgroup=1024 thread=4 threads=256"}
           ins(%c : tensor<16777216xf32>) ...
    %r = tensor.expand_shape %g [[0, 1]] output_shape [4096, 4096] ...

IREE honours a `compilation_info` on a 1-D elementwise generic but drops it when it collapses a
multi-dimensional one itself, so braze collapses first. The configuration is recorded as the
discardable string attribute `braze.kernel_config` (IREE's attributes do not parse in the front
end's context); the back end turns it into `#iree_codegen.compilation_info` with IREE's
TileAndFuse pipeline for CUDA targets and drops it for others.

Only kernels that stand alone are touched: all-parallel generics with identity maps, static
shapes and no `linalg.index`, whose operands are not made by linalg ops (nor all constants: IREE
evaluates those at compile time, for the host) and whose results are not read by linalg ops. Elementwise work next to a matmul or reduction is fused into that
dispatch by IREE and keeps IREE's configuration.

The configurations come from `cost_model.py` (memory-bound kernels: 16 bytes per thread per
operand, 256 threads per workgroup; measured on the H200: the 16M-element float32 chain ran in
33 us with workgroup 1024 / thread 4 / 256 threads against 82 us with IREE's default), unless the
tuning cache (`tuning-cache=PATH`, written by `braze tune`) holds a measured winner for the
kernel's signature on the target.

Static float32 and bfloat16 `linalg.matmul` / `linalg.batch_matmul` ops get tiles too
(`braze.matmul_config`, a MatmulConfig's text): SIMT tiles for float32, mma.sync tiles for
bfloat16, chosen by MATMUL_PREFERENCE (workgroups per SM), unless the tuning cache holds a
measured winner for the matmul's signature (`braze tune build --matmuls ...`). im2col copies made by fusion-conv-to-matmul get an N-D
configuration of whole output rows.
"""

from __future__ import annotations

from dataclasses import dataclass

from braze._mlir import ir, linalg, tensor
from braze.irutil import RESHAPES, all_ops, producer_through_reshapes, remap_operands, short_location
from braze.passes.gpu.tuning import TuningCache

from ..elementwise import byte_width
from ..registry import ModulePass, decide, option, register
from .configs import IM2COL_ATTR, KERNEL_CONFIG_ATTR, MATMUL_CONFIG_ATTR, KernelConfig, MatmulConfig
from .cost_model import choose_config, choose_im2col_config, select_matmul_config
from .options import cuda_target, tuning_cache
from .matchers import MATMULS, elementwise_signature, matmul_shape


def _forced_kernel(text: str) -> str | None:
    if not text:
        return None
    try:
        KernelConfig.parse_short(text)
    except ValueError:
        return f"expects WORKGROUP:THREAD:THREADS (e.g. 1024:4:256), got '{text}'"
    return None


def _forced_matmul(text: str) -> str | None:
    if not text:
        return None
    try:
        MatmulConfig.parse_short(text)
    except (ValueError, TypeError):
        return ("expects simt:WGMxWGN:K:TMxTN:THXxTHY or mma:WGMxWGN:K:SGMxSGN:THREADS:STAGES with threads "
                f"covering the tile (e.g. simt:64x32:8:4x2:16x16), got '{text}'")
    return None


@register
@dataclass(frozen=True)
class ConfigureKernelsPass(ModulePass):
    name = "fusion-configure-kernels"
    summary = "Collapse standalone elementwise kernels to 1-D and attach a GPU kernel configuration"

    target: str = cuda_target("GPU target the configuration is for (e.g. sm_90); empty: collapse only")
    threads: int = option(256, "Threads per workgroup the cost model starts from", minimum=32)
    config: str = option("", "Force WORKGROUP:THREAD:THREADS (e.g. 1024:4:256) on every kernel (for tuning)",
                         check=_forced_kernel)
    matmuls: bool = option(True, "Also give static f32/bf16 (batch) matmuls a tile configuration")
    matmul_config: str = option("", "Force a MatmulConfig short form (e.g. simt:64x32:8:4x2:16x16) on "
                                    "every matmul it divides (for tuning)", check=_forced_matmul)
    tuning_cache: str = tuning_cache()

    def run(self, module: ir.Operation) -> None:
        generics = all_ops(module, "linalg.generic", post_order=True)
        copies = [op for op in generics if IM2COL_ATTR in op.attributes]
        candidates = [op for op in generics if IM2COL_ATTR not in op.attributes and _standalone_elementwise(op)]
        cache = TuningCache.open(self.tuning_cache)
        where = lambda op: short_location(str(op.location))  # noqa: E731
        if self.target:
            for op in copies:
                shape = list(ir.ShapedType(op.results[0].type).shape)
                config = choose_im2col_config(shape, byte_width(op.results[0].type), self.threads)
                if decide(self.name, f"im2col copy {shape}: {config.text()} at {where(op)}"):
                    op.attributes[KERNEL_CONFIG_ATTR] = ir.StringAttr.get(config.text())
        if self.target and self.matmuls:
            for op in all_ops(module, MATMULS, post_order=True):
                config = self.matmul_config_for(op, cache)
                if config and decide(self.name, f"{matmul_shape(op).text()}: {config.text()} at {where(op)}"):
                    op.attributes[MATMUL_CONFIG_ATTR] = ir.StringAttr.get(config.text())
        for op in candidates:
            if not decide(self.name, f"elementwise kernel {ir.ShapedType(op.results[0].type)} collapsed to 1-D "
                                     f"and configured at {where(op)}"):
                continue
            flat = _collapse(op) if _rank(op) > 1 else op
            if self.target:
                config = self.config_for(flat, cache)
                if config is not None:
                    flat.attributes[KERNEL_CONFIG_ATTR] = ir.StringAttr.get(config.text())

    def matmul_config_for(self, op: ir.Operation, cache: TuningCache | None) -> MatmulConfig | None:
        """Forced (tuning), else cached by the autotuner, else the cost model's."""
        shape = matmul_shape(op)
        if shape is None:
            return None
        return select_matmul_config(shape, self.target, cache, self.matmul_config)

    def config_for(self, op: ir.Operation, cache: TuningCache | None) -> KernelConfig | None:
        if self.config:
            return KernelConfig.parse_short(self.config)
        stored = cache.lookup(elementwise_signature(op).text(), self.target) if cache is not None else None
        if stored is not None:
            try:
                return KernelConfig.parse(stored)
            except ValueError:
                pass  # a damaged cache entry: the cost model decides
        n = ir.ShapedType(op.results[0].type).shape[0]
        widest = max(byte_width(v.type) for v in op.operands)
        return choose_config(n, widest, self.threads)


def _rank(op: ir.Operation) -> int:
    return ir.ShapedType(op.results[0].type).rank


def _standalone_elementwise(op: ir.Operation) -> bool:
    g = op.opview
    if any("parallel" not in str(it) for it in g.iterator_types):
        return False
    rank = len(list(g.iterator_types))
    if rank == 0:
        return False
    identity = ir.AffineMap.get_identity(rank)
    if any(ir.AffineMapAttr(m).value != identity for m in g.indexing_maps):
        return False
    for v in op.operands:
        if not isinstance(v.type, ir.RankedTensorType) or not ir.RankedTensorType(v.type).has_static_shape:
            return False
    body = op.regions[0].blocks[0]
    if any(o.operation.name == "linalg.index" for o in body.operations):
        return False
    inputs = list(g.inputs)
    owners = [producer_through_reshapes(v) for v in inputs]
    if any(o is not None and o.name.startswith("linalg.") for o in owners):
        return False
    if inputs and all(o is not None and o.name == "arith.constant" for o in owners):
        # IREE evaluates it at compile time, on the host (llvm-cpu), where a CUDA
        # configuration fails to build a pass pipeline.
        return False
    return not any(u.name.startswith("linalg.") for r in op.results for u in _users_through_reshapes(r))


def _users_through_reshapes(value: ir.Value) -> list:
    users = []
    for use in value.uses:
        user = use.owner
        if user.name in RESHAPES:
            users += _users_through_reshapes(user.results[0])
        else:
            users.append(user)
    return users


def _collapse(op: ir.Operation) -> ir.Operation:
    """Replace a rank-N identity-map generic by collapse_shape -> 1-D generic -> expand_shape."""
    g = op.opview
    rank = _rank(op)
    reassociation = ir.ArrayAttr.get([ir.ArrayAttr.get([ir.IntegerAttr.get(ir.IntegerType.get_signless(64), d)
                                                        for d in range(rank)])])
    id1 = ir.AffineMapAttr.get(ir.AffineMap.get_identity(1))
    with op.location, ir.InsertionPoint(op):
        def flat(v):
            t = ir.RankedTensorType(v.type)
            n = 1
            for s in t.shape:
                n *= s
            return tensor.CollapseShapeOp(ir.RankedTensorType.get([n], t.element_type), v, reassociation).result

        ins = [flat(v) for v in g.inputs]
        outs = [flat(v) for v in g.outputs]
        new = linalg.GenericOp(
            [v.type for v in outs], ins, outs,
            ir.ArrayAttr.get([id1] * (len(ins) + len(outs))),
            ir.ArrayAttr.get([ir.Attribute.parse("#linalg.iterator_type<parallel>")]),
        )
        old_block = op.regions[0].blocks[0]
        block = new.regions[0].blocks.append(*[a.type for a in old_block.arguments])
        remap = dict(zip(old_block.arguments, block.arguments))
        for inner in old_block.operations:
            clone = inner.operation.clone(ip=ir.InsertionPoint(block))
            remap_operands(clone, remap)
            remap.update(zip(inner.operation.results, clone.results))
        for old, res in zip(op.results, new.results):
            t = ir.RankedTensorType(old.type)
            expanded = tensor.ExpandShapeOp(t, res, reassociation, [], list(t.shape)).result
            old.replace_all_uses_with(expanded)
    op.erase()
    return new.operation
