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
shapes and no `linalg.index`, whose operands are not made by linalg ops and whose results are
not read by linalg ops. Elementwise work next to a matmul or reduction is fused into that
dispatch by IREE and keeps IREE's configuration.

Cost model (memory-bound kernels, per element of the widest operand): each thread moves 16
bytes per operand (one 128-bit access: 4 float32 or 8 bfloat16 elements), 256 threads per
workgroup, so a workgroup covers 256 * 16 / element-bytes elements; thread and workgroup tiles
shrink by powers of two until they divide the element count. Measured on the H200: the 16M-element
float32 chain ran in 33 us with workgroup 1024 / thread 4 / 256 threads against 82 us with IREE's
default (32-thread workgroups of 128 elements). `braze.tuning` can replace the model's choice with
a measured one per (kernel signature, target).
"""

from __future__ import annotations

from dataclasses import dataclass

from braze._mlir import ir, linalg, tensor

from .form_groups import byte_width, remap_operands
from .registry import ModulePass, option, register

CONFIG_ATTR = "braze.kernel_config"
"""Discardable attribute: 'workgroup=N thread=N threads=N' on a 1-D elementwise generic."""

MATMUL_ATTR = "braze.matmul_config"
"""Discardable attribute on a linalg.matmul: its tile configuration (see MATMUL_CONFIGS)."""

MATMUL_CONFIGS = {
    # f32 x f32 -> f32 has no tensor-core path without TF32 (which would change the
    # arithmetic): SIMT tiles. Measured on the H200, 1024x768x768: 258 us per call against
    # 717 us with IREE's default (cuBLAS: 37 us).
    "f32": ("simt workgroup=64,32 reduction=8 thread=4,2 threads=16,16", (64, 32, 8)),
    # bf16 x bf16 -> f32 on mma.sync (IREE 3.13 has no wgmma): 4096^3 938 us per call
    # against 1188 us with IREE's default (cuBLAS: 173 us).
    "bf16": ("mma=NV_MMA_SYNC_F32_16x8x16_BF16 workgroup=128,128 subgroup=4,8 reduction=4 threads=128 stages=3",
             (128, 128, 64)),
}
"""Element type of the matmul's inputs -> (configuration, (M, N, K) divisors it needs)."""


@dataclass(frozen=True)
class KernelConfig:
    workgroup: int
    """Elements per workgroup."""
    thread: int
    """Elements per thread."""
    threads: int
    """Threads per workgroup."""

    def text(self) -> str:
        return f"workgroup={self.workgroup} thread={self.thread} threads={self.threads}"

    @classmethod
    def parse_short(cls, text: str) -> "KernelConfig":
        """'1024:4:256' -> workgroup 1024, thread 4, threads 256."""
        workgroup, thread, threads = (int(x) for x in text.split(":"))
        return cls(workgroup, thread, threads)

    def short(self) -> str:
        return f"{self.workgroup}:{self.thread}:{self.threads}"

    @classmethod
    def parse(cls, text: str) -> "KernelConfig":
        fields = dict(item.split("=", 1) for item in text.split())
        return cls(int(fields["workgroup"]), int(fields["thread"]), int(fields["threads"]))


def configured_signatures(module_op: ir.Operation) -> list[str]:
    """Kernel signatures of the 1-D kernels this pass configured in a module."""
    from braze.irutil import all_ops

    return [signature(op) for op in all_ops(module_op) if CONFIG_ATTR in op.attributes]


def choose_config(elements: int, max_element_bytes: int, threads: int = 256, access_bytes: int = 16) -> KernelConfig | None:
    """The cost model's configuration for a memory-bound 1-D kernel (None: leave it to IREE)."""
    thread = max(1, access_bytes // max(1, max_element_bytes))
    while thread > 1 and elements % thread:
        thread //= 2
    while threads > 32 and elements % (threads * thread):
        threads //= 2
    if elements % (threads * thread) or elements < threads * thread:
        return None
    return KernelConfig(threads * thread, thread, threads)


def signature(op: ir.Operation) -> str:
    """A key for one 1-D elementwise kernel: element count, operand dtypes and body ops."""
    body = op.regions[0].blocks[0]
    ops = ",".join(o.operation.name.split(".", 1)[1] for o in body.operations if o.operation.name != "linalg.yield")
    types = "x".join(str(ir.ShapedType(v.type).element_type) for v in op.operands)
    n = ir.ShapedType(op.results[0].type).shape[0]
    return f"elementwise_{n}_{types}_{ops}"


@register
@dataclass(frozen=True)
class ConfigureKernelsPass(ModulePass):
    name = "fusion-configure-kernels"
    summary = "Collapse standalone elementwise kernels to 1-D and attach a GPU kernel configuration"

    target: str = option("", "GPU target the configuration is for (e.g. sm_90); empty: collapse only")
    threads: int = option(256, "Threads per workgroup the cost model starts from")
    config: str = option("", "Force WORKGROUP:THREAD:THREADS (e.g. 1024:4:256) on every kernel (for tuning)")
    matmuls: bool = option(True, "Also give static linalg.matmul ops a measured tile configuration")

    def __post_init__(self) -> None:
        if self.config:
            try:
                KernelConfig.parse_short(self.config)
            except ValueError:
                from braze.errors import PassPipelineError

                raise PassPipelineError(
                    f"option 'config' of pass '{self.name}' expects WORKGROUP:THREAD:THREADS "
                    f"(e.g. 1024:4:256), got '{self.config}'"
                ) from None

    def run(self, module: ir.Operation) -> None:
        candidates = []

        def visit(op):
            if op.name == "linalg.generic" and _standalone_elementwise(op):
                candidates.append(op)
            return ir.WalkResult.ADVANCE

        module.walk(visit)
        if self.target and self.matmuls:
            self._configure_matmuls(module)
        for op in candidates:
            flat = _collapse(op) if _rank(op) > 1 else op
            if self.target:
                config = self.config_for(flat)
                if config is not None:
                    flat.attributes[CONFIG_ATTR] = ir.StringAttr.get(config.text())

    def _configure_matmuls(self, module: ir.Operation) -> None:
        def visit(op):
            if op.name == "linalg.matmul":
                config = matmul_config(op)
                if config:
                    op.attributes[MATMUL_ATTR] = ir.StringAttr.get(config)
            return ir.WalkResult.ADVANCE

        module.walk(visit)

    def config_for(self, op: ir.Operation) -> KernelConfig | None:
        from braze import tuning

        if self.config:
            return KernelConfig.parse_short(self.config)
        tuned = tuning.lookup(signature(op), self.target)
        if tuned is not None:
            return tuned
        n = ir.ShapedType(op.results[0].type).shape[0]
        widest = max(byte_width(v.type) for v in op.operands)
        return choose_config(n, widest, self.threads)


def matmul_config(op: ir.Operation) -> str | None:
    """The configuration for a static f32 or bf16 linalg.matmul whose shape fits its tiles."""
    lhs, rhs = list(op.operands)[:2]
    a, b = ir.RankedTensorType(lhs.type), ir.RankedTensorType(rhs.type)
    if not (a.has_static_shape and b.has_static_shape):
        return None
    element = _source_element_type(lhs)
    if element not in MATMUL_CONFIGS or _source_element_type(rhs) != element:
        return None
    config, (dm, dn, dk) = MATMUL_CONFIGS[element]
    (m, k), n = a.shape, b.shape[1]
    if m % dm or n % dn or k % dk:
        return None
    return config


def _source_element_type(value: ir.Value) -> str:
    """The element type a matmul operand really has: torch-mlir feeds bf16 matmuls through an
    `arith.extf` generic to f32, which IREE fuses back into a bf16 MMA matmul."""
    owner = value.owner if isinstance(value, ir.OpResult) else None
    if owner is not None and owner.name == "linalg.generic" and len(owner.operands) == 2:
        body = [o.operation.name for o in owner.regions[0].blocks[0].operations]
        if body == ["arith.extf", "linalg.yield"]:
            return str(ir.ShapedType(owner.operands[0].type).element_type)
    return str(ir.ShapedType(value.type).element_type)


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
    for v in list(g.inputs):
        owner = v.owner if isinstance(v, ir.OpResult) else None
        if owner is not None and owner.name.startswith("linalg."):
            return False
    for r in op.results:
        for u in r.uses:
            if u.owner.name.startswith("linalg."):
                return False
    return True


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
