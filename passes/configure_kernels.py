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

Static float32 and bfloat16 `linalg.matmul` / `linalg.batch_matmul` ops get tiles too
(`braze.matmul_config`, a MatmulConfig's text): SIMT tiles for float32, mma.sync tiles for
bfloat16, chosen by MATMUL_PREFERENCE (workgroups per SM), unless the tuning cache holds a
measured winner for the matmul's signature (`python -m braze.tools.tune build --matmuls ...`).
"""

from __future__ import annotations

from dataclasses import dataclass

from braze._mlir import ir, linalg, tensor

from .conv_to_matmul import IM2COL_ATTR
from .form_groups import byte_width, remap_operands
from .registry import ModulePass, option, register

CONFIG_ATTR = "braze.kernel_config"
"""Discardable attribute: 'workgroup=N thread=N threads=N' on a 1-D elementwise generic, or one
comma-separated entry per dimension on an im2col copy (choose_im2col_config)."""

MATMUL_ATTR = "braze.matmul_config"
"""Discardable attribute on a linalg.matmul or linalg.batch_matmul: its tiles (MatmulConfig.text)."""

SM_COUNT = {"sm_90": 132, "sm_80": 108, "sm_86": 84, "sm_89": 128}
"""Streaming multiprocessors per target (a matmul tile should give each one a workgroup)."""


@dataclass(frozen=True)
class MatmulConfig:
    """A tile configuration for a (batch) matmul.

    simt (float32: no tensor-core path without TF32, which would change the arithmetic):
      workgroup tile M x N, K step `reduction` elements, `thread` M x N elements per thread,
      `threads` a 2-D workgroup. mma (bfloat16 on NV_MMA_SYNC_F32_16x8x16_BF16; IREE 3.13 has
      no wgmma): workgroup tile M x N, `subgroup` M x N intrinsic tiles (16 x 8) per warp, K step
      `reduction` intrinsics (16 each), `threads` a 1-D workgroup, `stages` of prefetch.
    """

    kind: str
    workgroup: tuple[int, int]
    reduction: int
    tile: tuple[int, int]
    """Per thread (simt) or per subgroup, in intrinsics (mma)."""
    threads: tuple[int, ...]
    stages: int = 0

    MMA = "NV_MMA_SYNC_F32_16x8x16_BF16"

    def text(self) -> str:
        wg, tile = f"{self.workgroup[0]},{self.workgroup[1]}", f"{self.tile[0]},{self.tile[1]}"
        threads = ",".join(map(str, self.threads))
        if self.kind == "simt":
            return f"simt workgroup={wg} reduction={self.reduction} thread={tile} threads={threads}"
        return (f"mma={self.MMA} workgroup={wg} subgroup={tile} reduction={self.reduction} "
                f"threads={threads} stages={self.stages}")

    def short(self) -> str:
        """'simt:64x32:8:4x2:16x16' or 'mma:128x128:4:4x8:128:3' (tuning names and the pass option)."""
        parts = [self.kind, "x".join(map(str, self.workgroup)), str(self.reduction), "x".join(map(str, self.tile)),
                 "x".join(map(str, self.threads))]
        return ":".join(parts + ([str(self.stages)] if self.kind == "mma" else []))

    @classmethod
    def parse_short(cls, text: str) -> "MatmulConfig":
        kind, wg, red, tile, threads, *rest = text.split(":")
        if kind not in ("simt", "mma") or (kind == "mma") != (len(rest) == 1) or len(rest) > 1:
            raise ValueError(text)
        pair = lambda t: tuple(int(x) for x in t.split("x"))  # noqa: E731
        config = cls(kind, pair(wg), int(red), pair(tile), pair(threads), int(rest[0]) if rest else 0)
        if len(config.workgroup) != 2 or len(config.tile) != 2 or not config.consistent():
            raise ValueError(text)
        return config

    @classmethod
    def parse(cls, text: str) -> "MatmulConfig":
        words = text.split()
        fields = dict(item.split("=", 1) for item in words if "=" in item)
        pair = lambda key: tuple(int(x) for x in fields[key].split(","))  # noqa: E731
        if words[0] == "simt":
            return cls("simt", pair("workgroup"), int(fields["reduction"]), pair("thread"), pair("threads"))
        return cls("mma", pair("workgroup"), int(fields["reduction"]), pair("subgroup"), pair("threads"),
                   int(fields["stages"]))

    def consistent(self) -> bool:
        """The threads cover the workgroup tile exactly."""
        (wm, wn), (tm, tn) = self.workgroup, self.tile
        if self.kind == "simt":
            return len(self.threads) == 2 and wm == tm * self.threads[0] and wn == tn * self.threads[1]
        warps_m, warps_n = wm // (16 * tm), wn // (8 * tn)
        return (wm % (16 * tm) == 0 and wn % (8 * tn) == 0 and len(self.threads) == 1
                and warps_m * warps_n * 32 == self.threads[0])

    def divides(self, m: int, n: int, k: int) -> bool:
        step = self.reduction * (16 if self.kind == "mma" else 1)
        return m % self.workgroup[0] == 0 and n % self.workgroup[1] == 0 and k % step == 0


MATMUL_CANDIDATES = {
    "f32": [MatmulConfig.parse_short(t) for t in (
        "simt:128x64:8:8x4:16x16", "simt:64x64:16:4x4:16x16", "simt:64x32:16:4x2:16x16",
        "simt:32x32:8:2x2:16x16", "simt:128x128:8:8x8:16x16", "simt:64x128:8:4x8:16x16",
        "simt:64x64:8:4x4:16x16", "simt:64x32:8:4x2:16x16", "simt:128x64:16:8x4:16x16",
        "simt:128x64:32:8x4:16x16", "simt:64x64:32:4x4:16x16", "simt:64x32:32:4x2:16x16")],
    "bf16": [MatmulConfig.parse_short(t) for t in (
        "mma:128x128:4:4x8:128:3", "mma:128x64:4:4x4:128:3", "mma:64x64:4:2x4:128:3",
        "mma:128x256:4:4x8:256:3", "mma:128x128:4:2x8:256:3", "mma:64x128:4:2x8:128:3",
        "mma:64x64:2:2x4:128:4", "mma:32x128:4:1x8:128:3", "mma:128x64:8:4x4:128:3",
        "mma:64x64:8:2x4:128:3")],
}
"""Tile configurations the autotuner measures for each input element type."""

MATMUL_PREFERENCE = {key: [(MatmulConfig.parse_short(t), waves) for t, waves in entries] for key, entries in {
    "f32": [("simt:128x64:8:8x4:16x16", 2), ("simt:64x64:16:4x4:16x16", 2), ("simt:64x32:16:4x2:16x16", 2),
            ("simt:32x32:8:2x2:16x16", 0)],
    "f32_tb": [("simt:128x64:32:8x4:16x16", 2), ("simt:64x64:32:4x4:16x16", 2), ("simt:64x32:32:4x2:16x16", 2),
               ("simt:32x32:8:2x2:16x16", 0)],
    "bf16": [("mma:128x128:4:4x8:128:3", 4), ("mma:128x64:4:4x4:128:3", 2), ("mma:64x64:4:2x4:128:3", 2)],
}.items()}
"""The cost model: (configuration, waves) in order of preference; the first that divides the
matmul and gives at least `waves` workgroups per SM wins. Fitted to kernel times (ncu) of 30
matmul shapes from the bench's layers on the H200, where it picks the measured winner or one
within 10% of it in every case (bench/NOTES.md §10): float32 wants about two workgroups per SM,
and K steps of 16 (32 when B is a transposed weight, read along K: `f32_tb`); for bfloat16,
IREE's own choice beat every candidate on the shapes too small for two waves of 128 x 64
tiles, so those keep it."""


def choose_matmul_config(batch: int, m: int, n: int, k: int, element: str, target: str,
                         transposed_b: bool = False) -> MatmulConfig | None:
    """The cost model's tiles (MATMUL_PREFERENCE); None: IREE's default.

    float32 always gets tiles (IREE's default runs these shapes 3-15x slower): when none
    reaches its waves, the candidate with the most workgroups among those that divide.
    """
    sms = SM_COUNT.get(target, 132)
    count = lambda c: batch * (m // c.workgroup[0]) * (n // c.workgroup[1])  # noqa: E731
    key = element + "_tb" if transposed_b and element + "_tb" in MATMUL_PREFERENCE else element
    fits = [(c, waves) for c, waves in MATMUL_PREFERENCE.get(key, []) if c.divides(m, n, k)]
    for config, waves in fits:
        if count(config) >= waves * sms:
            return config
    if element == "f32" and fits:
        return max((c for c, _ in fits), key=count)
    return None


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


def choose_im2col_config(shape: list[int], element_bytes: int, threads: int = 256) -> str:
    """Tiles for an im2col copy (fusion-conv-to-matmul) over (C, KH, KW, N, OH, OW), as
    'workgroup=... thread=... threads=N' with one entry per dimension.

    Each thread writes up to 16 bytes of one output row (OW innermost, the contiguous dimension
    on both sides); a workgroup takes whole rows, then whole images of rows, then more of the
    outer dimensions, while it stays within `threads` threads."""
    per_thread = max(1, 16 // element_bytes)
    while shape[-1] % per_thread:
        per_thread //= 2
    thread = [1] * (len(shape) - 1) + [per_thread]
    workgroup = [1] * (len(shape) - 1) + [shape[-1]]
    used = shape[-1] // per_thread
    for d in range(len(shape) - 2, -1, -1):
        tile = max((t for t in range(1, shape[d] + 1) if shape[d] % t == 0 and used * t <= threads), default=1)
        workgroup[d] = tile
        used *= tile
        if tile < shape[d]:
            break
    join = lambda v: ",".join(map(str, v))  # noqa: E731
    return f"workgroup={join(workgroup)} thread={join(thread)} threads={used}"


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
    matmuls: bool = option(True, "Also give static f32/bf16 (batch) matmuls a tile configuration")
    matmul_config: str = option("", "Force a MatmulConfig short form (e.g. simt:64x32:8:4x2:16x16) on "
                                    "every matmul it divides (for tuning)")

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
        if self.matmul_config:
            try:
                MatmulConfig.parse_short(self.matmul_config)
            except (ValueError, TypeError):
                from braze.errors import PassPipelineError

                raise PassPipelineError(
                    f"option 'matmul_config' of pass '{self.name}' expects simt:WGMxWGN:K:TMxTN:THXxTHY or "
                    f"mma:WGMxWGN:K:SGMxSGN:THREADS:STAGES with threads covering the tile "
                    f"(e.g. simt:64x32:8:4x2:16x16), got '{self.matmul_config}'"
                ) from None

    def run(self, module: ir.Operation) -> None:
        candidates, copies = [], []

        def visit(op):
            if op.name == "linalg.generic" and IM2COL_ATTR in op.attributes:
                copies.append(op)
            elif op.name == "linalg.generic" and _standalone_elementwise(op):
                candidates.append(op)
            return ir.WalkResult.ADVANCE

        module.walk(visit)
        if self.target:
            for op in copies:
                shape = list(ir.ShapedType(op.results[0].type).shape)
                op.attributes[CONFIG_ATTR] = ir.StringAttr.get(
                    choose_im2col_config(shape, byte_width(op.results[0].type), self.threads))
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
            if op.name in ("linalg.matmul", "linalg.batch_matmul"):
                config = self.matmul_config_for(op)
                if config:
                    op.attributes[MATMUL_ATTR] = ir.StringAttr.get(config.text())
            return ir.WalkResult.ADVANCE

        module.walk(visit)

    def matmul_config_for(self, op: ir.Operation) -> MatmulConfig | None:
        """Forced (tuning), else cached by the autotuner, else the cost model's."""
        from braze import tuning

        shape = matmul_shape(op)
        if shape is None:
            return None
        batch, m, n, k, element = shape
        if self.matmul_config:
            forced = MatmulConfig.parse_short(self.matmul_config)
            ok = forced.divides(m, n, k) and (forced.kind == "mma") == (element == "bf16")
            return forced if ok else None
        tuned = tuning.lookup(matmul_signature(op), self.target)
        if tuned is not None:
            try:
                config = MatmulConfig.parse(tuned)
                if config.divides(m, n, k):
                    return config
            except (KeyError, ValueError):
                pass  # a damaged cache entry: the cost model decides
        return choose_matmul_config(batch, m, n, k, element, self.target, rhs_transposed(op))

    def config_for(self, op: ir.Operation) -> KernelConfig | None:
        from braze import tuning

        if self.config:
            return KernelConfig.parse_short(self.config)
        tuned = tuning.lookup(signature(op), self.target)
        if tuned is not None:
            try:
                return KernelConfig.parse(tuned)
            except (KeyError, ValueError):
                pass  # a damaged cache entry: the cost model decides
        n = ir.ShapedType(op.results[0].type).shape[0]
        widest = max(byte_width(v.type) for v in op.operands)
        return choose_config(n, widest, self.threads)


def matmul_shape(op: ir.Operation) -> tuple[int, int, int, int, str] | None:
    """(batch, M, N, K, input element type) of a static f32/bf16 (batch) matmul braze can tile."""
    lhs, rhs = list(op.operands)[:2]
    a, b = ir.RankedTensorType(lhs.type), ir.RankedTensorType(rhs.type)
    if not (a.has_static_shape and b.has_static_shape):
        return None
    element = _source_element_type(lhs)
    if element not in MATMUL_CANDIDATES or _source_element_type(rhs) != element:
        return None
    if op.name == "linalg.batch_matmul":
        (batch, m, k), n = a.shape, b.shape[2]
    else:
        (m, k), n, batch = a.shape, b.shape[1], 1
    return batch, m, n, k, element


def matmul_signature(op: ir.Operation) -> str | None:
    """A key for one matmul kernel: 'matmul_1024x768x768_bf16' (M x N x K), 'batch_matmul_96x128x128x64_f32';
    'matmul_tb_...' when the right operand is a transposed tensor (a Linear's weight), which IREE
    folds into the matmul: its tiles then read B along K, a different kernel to tune."""
    shape = matmul_shape(op)
    if shape is None:
        return None
    batch, m, n, k, element = shape
    kind = "batch_matmul" if op.name == "linalg.batch_matmul" else "matmul"
    tb = "tb_" if rhs_transposed(op) else ""
    dims = f"{batch}x{m}x{n}x{k}" if kind == "batch_matmul" else f"{m}x{n}x{k}"
    return f"{kind}_{tb}{dims}_{element}"


def rhs_transposed(op: ir.Operation) -> bool:
    """Whether the matmul's right operand is a linalg.transpose swapping its last two dimensions
    (seen through torch-mlir's bf16 -> f32 extf generic)."""
    value = list(op.operands)[1]
    owner = value.owner if isinstance(value, ir.OpResult) else None
    if owner is not None and owner.name == "linalg.generic" and _is_extf(owner):
        value = owner.operands[0]
        owner = value.owner if isinstance(value, ir.OpResult) else None
    if owner is None or owner.name != "linalg.transpose":
        return False
    perm = list(ir.DenseI64ArrayAttr(owner.attributes["permutation"]))
    return perm[-2:] == [len(perm) - 1, len(perm) - 2] and perm[:-2] == list(range(len(perm) - 2))


def _is_extf(op: ir.Operation) -> bool:
    body = [o.operation.name for o in op.regions[0].blocks[0].operations]
    return len(op.operands) == 2 and body == ["arith.extf", "linalg.yield"]


def configured_matmul_signatures(module_op: ir.Operation, configured_only: bool = True) -> list[str]:
    """Signatures of the matmuls this pass configured in a module (or of every matmul it could
    tile, configured_only=False), in order, without repeats."""
    from braze.irutil import all_ops

    found = [matmul_signature(op) for op in all_ops(module_op)
             if op.name in ("linalg.matmul", "linalg.batch_matmul")
             and (MATMUL_ATTR in op.attributes if configured_only else matmul_shape(op) is not None)]
    return list(dict.fromkeys(found))


def _source_element_type(value: ir.Value) -> str:
    """The element type a matmul operand really has: torch-mlir feeds bf16 matmuls through an
    `arith.extf` generic to f32, which IREE fuses back into a bf16 MMA matmul."""
    owner = value.owner if isinstance(value, ir.OpResult) else None
    if owner is not None and owner.name == "linalg.generic" and _is_extf(owner):
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
        owner = _producer_through_reshapes(v)
        if owner is not None and owner.name.startswith("linalg."):
            return False
    return not any(u.name.startswith("linalg.") for r in op.results for u in _users_through_reshapes(r))


_RESHAPES = ("tensor.expand_shape", "tensor.collapse_shape", "tensor.cast")
"""Ops IREE folds away when it forms dispatches: a linalg op behind one is still a neighbour."""


def _producer_through_reshapes(value: ir.Value):
    owner = value.owner if isinstance(value, ir.OpResult) else None
    while owner is not None and owner.name in _RESHAPES:
        source = owner.operands[0]
        owner = source.owner if isinstance(source, ir.OpResult) else None
    return owner


def _users_through_reshapes(value: ir.Value) -> list:
    users = []
    for use in value.uses:
        user = use.owner
        if user.name in _RESHAPES:
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
