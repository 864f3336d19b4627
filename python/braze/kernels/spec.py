"""What a generated kernel computes, as the pass that finds it writes it down.

`fusion-generate-kernels` outlines a matmul with its prologue casts and epilogue chain (or an
attention op with its mask) into a private function and records a GemmSpec (AttentionSpec) on it (`braze.kernel`, JSON text, a discardable
attribute the front end's context can hold). The back end turns the spec into a Triton kernel
and the function body into one dispatch of it (braze.compiler.kernel_embed). This module imports
neither MLIR binding nor Triton: the spec is plain data.

The epilogue is a straight-line program over [BM, BN] tiles:

    ops: [[dst, op, [operand, ...], type, extra], ...]

operands are "acc" (the f32 accumulator), "in<i>" (the i-th epilogue input, loaded as its
access pattern says), "%<n>" (an earlier dst) or a number; `type` is the result's MLIR element
type (values are held in f32; a bf16/f16 result is rounded to that type, as IREE's emulation of
16-bit arithmetic rounds each op); `extra` is the cmpf predicate or None.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field

ATTR = "braze.kernel"
"""The discardable attribute holding a spec's JSON on an outlined kernel function."""

ACCESS = ("full", "row", "col", "scalar")
"""How an epilogue input is read per output element (i, j): [i, j], [j], [i], [] ."""

FLOAT_TYPES = ("f32", "bf16", "f16")
MAX_GRID_Y = 65535
"""The templates put the batch (or the heads) on the grid's second dimension, which CUDA caps."""


@dataclass(frozen=True)
class Input:
    dtype: str
    access: str


class _Spec:
    """What both kinds of spec share: their JSON text and the short name of it with the tile."""

    def to_json(self) -> str:
        d = asdict(self)
        for flag in ("dynamic_m", "dynamic_batch", "nhwc", "nchw_input"):
            if not d.get(flag, True):
                del d[flag]  # as specs were written before it: their kernel names and tuning signatures stay
        if d.get("group", 0) == 1:
            del d["group"]  # likewise
        if d.get("offsets", 0) == ():
            del d["offsets"]  # likewise
        return json.dumps(d, sort_keys=True, separators=(",", ":"))

    def key(self) -> str:
        """A short stable name for the computation and its tile (the kernel cache's key part)."""
        text = self.to_json() + json.dumps(list(self.tile))
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def tuning_signature(self) -> str:
        """The computation without its tile, as the tuning cache names it ('gemm_<hash>',
        'conv_', 'dwconv_', 'attention_'): a measured tile is stored and found under it."""
        untiled = json.loads(self.to_json())
        untiled.pop("tile", None)
        digest = hashlib.sha256(json.dumps(untiled, sort_keys=True).encode()).hexdigest()[:16]
        return f"{self.family()}_{digest}"


TUNED_FAMILIES = ("gemm", "conv", "dwconv", "attention", "rows")
"""Prefixes of the generated kernels' tuning signatures."""


def is_tuning_signature(text: str) -> bool:
    family, _, digest = text.partition("_")
    return family in TUNED_FAMILIES and len(digest) == 16 and all(c in "0123456789abcdef" for c in digest)


def tile_text(tile: tuple) -> str:
    return "x".join(map(str, tile))


def parse_tile(text: str) -> tuple[int, ...]:
    """'128x64x64x4x4[x2[x1[x132[x1]]]]' -> (128, 64, 64, 4, 4[, 2[, ...]]); ValueError naming the
    text otherwise (the spec's check says whether a template takes the tile)."""
    try:
        tile = tuple(int(x) for x in text.split("x"))
    except ValueError:
        tile = ()
    if len(tile) < 2 or min(tile[:6]) < 1 or min(tile) < 0:  # TMA 0/1 and later entries may be 0
        raise ValueError(f"'{text}' is not a tile (sizes joined by x, e.g. 128x64x64x4x4, or 2x8 for a row kernel)")
    return tile


@dataclass(frozen=True)
class GemmSpec(_Spec):
    m: int
    n: int
    k: int
    a: str
    """Element type of A ([M, K], row-major)."""
    b: str
    """Element type of B."""
    b_layout: str
    """'nk': B stored [N, K] (a Linear's weight, K-major); 'kn': stored [K, N]."""
    out: str
    """Element type of the result [M, N]."""
    inputs: tuple[Input, ...] = ()
    ops: tuple[tuple, ...] = ()
    result: str = "acc"
    """The operand the kernel stores."""
    precision: str = ""
    """float32 operands: 'tf32x3' (three TF32 products: float32-accurate, as torch's default
    `allow_tf32=False` asks) or 'tf32' (one, as `allow_tf32=True` allows); '' for 16-bit."""
    batch: int = 0
    """0: a matmul; B > 0: a batch matmul, every operand with a leading batch dimension."""
    conv: tuple[int, ...] = ()
    """A 2-D NCHW convolution as an implicit GEMM: (N, C, H, W, KH, KW, stride h, stride w,
    dilation h, dilation w, padding top, padding left, OH, OW). A is then the input [N, C, H, W]
    (m = N*OH*OW output pixels), B the weight [F, C*KH*KW] (n = F, k = C*KH*KW), the result
    and 'full' epilogue inputs [N, F, OH, OW]; () for a matmul."""
    groups: int = 1
    """With conv: a grouped convolution (ResNeXt's): G independent implicit GEMMs on the grid's
    second dimension, each over C/G input channels (k = C/G*KH*KW) and n = F/G output channels;
    the weight [F, C/G*KH*KW], the result [N, F, OH, OW]."""
    depthwise: bool = False
    """With conv: a depthwise convolution (groups = C = F): the weight is [C, KH*KW], k = KH*KW,
    and each output channel reads its own input channel (no GEMM: FMAs in f32, no tensor cores,
    so float32 takes no precision)."""
    nhwc: bool = False
    """With conv: channels-last (fusion-channels-last). The input is [N, H, W, C], the weight
    [F, KH*KW*C] (K over (kh, kw, c): a K step reads runs of channels), the result and 'full'
    epilogue inputs [N, OH, OW, F], a GEMM's [M, N]. One group, not depthwise."""
    nchw_input: bool = False
    """With nhwc: the input is read as [N, C, H, W] (the model's own input into a first
    convolution of few channels: the layout change folded into its gather)."""
    dynamic_m: bool = False
    """M is known per call only (a dynamic build's batch): the kernel takes it as a 32-bit
    argument and its grid follows it; `m` is then the M the tile was chosen for. A plain matmul
    (no batch, no convolution) with a plain tile (no split K, TMA or persistent programs)."""
    tile: tuple[int, ...] = field(default=(), compare=False)
    """(BM, BN, BK, warps, stages[, split[, TMA[, P[, data-parallel]]]]), chosen by the cost model;
    () until chosen. split > 1: that many programs share each output tile's K loop (split K);
    TMA 1: A and B read through TMA descriptors; P > 0: P persistent programs, sharing the tiles'
    K steps (stream-K) or, with data-parallel 1, whole tiles; with split K, P is the number of
    tiles computed whole, the others split (braze.kernels.gemm)."""

    def operands(self) -> int:
        """How many operands the kernel reads (its read-only bindings)."""
        return 2 + len(self.inputs)

    def family(self) -> str:
        return "dwconv" if self.depthwise else "conv" if self.conv else "gemm"

    @classmethod
    def from_json(cls, text: str) -> "GemmSpec":
        d = json.loads(text)
        d["inputs"] = tuple(Input(**i) for i in d.get("inputs", ()))
        d["ops"] = tuple(tuple(o) for o in d.get("ops", ()))
        d["tile"] = tuple(d.get("tile", ()))
        d["conv"] = tuple(d.get("conv", ()))
        spec = cls(**d)
        spec.check()
        return spec

    def check(self) -> None:
        """ValueError naming what is wrong with a spec (hand-edited IR reaches the back end too)."""
        for name in ("m", "n", "k"):
            if not isinstance(getattr(self, name), int) or getattr(self, name) < 1:
                raise ValueError(f"{name} must be a positive integer, got {getattr(self, name)!r}")
        for name in ("a", "b", "out"):
            if getattr(self, name) not in FLOAT_TYPES:
                raise ValueError(f"{name} has element type {getattr(self, name)!r}; kernels take {FLOAT_TYPES}")
        if self.b_layout not in ("nk", "kn"):
            raise ValueError(f"b_layout is 'nk' or 'kn', got {self.b_layout!r}")
        for i in self.inputs:
            if i.access not in ACCESS or i.dtype not in FLOAT_TYPES:
                raise ValueError(f"epilogue input {i} is not one of {ACCESS} x {FLOAT_TYPES}")
        if self.depthwise:
            if self.precision or not self.conv:
                raise ValueError("a depthwise convolution takes conv sizes and no precision (its FMAs are f32)")
        elif (self.a == "f32") != bool(self.precision) or self.precision not in ("", "tf32", "tf32x3"):
            raise ValueError(f"precision {self.precision!r} does not fit {self.a} operands "
                             "(float32 takes 'tf32x3' or 'tf32', 16-bit types '')")
        if self.nhwc and not self.conv:
            raise ValueError("nhwc is a convolution's layout; a matmul has none")
        if self.nchw_input and not self.nhwc:
            raise ValueError("nchw_input is an NHWC convolution's reading of an NCHW input")
        if self.conv:
            if len(self.conv) != 14 or self.batch or self.b_layout != "nk":
                raise ValueError(f"conv is 14 sizes of an NCHW convolution with a [F, K] weight, got {self.conv}")
            n, c, _, _, kh, kw, *_rest, oh, ow = self.conv
            if self.groups < 1 or c % self.groups or (self.groups > 1 and self.depthwise):
                raise ValueError(f"{self.groups} groups do not divide {c} channels (or a depthwise one has groups)")
            if self.nhwc and (self.groups > 1 or self.depthwise):
                raise ValueError("an NHWC convolution has one group and is not depthwise")
            k = kh * kw if self.depthwise else c // self.groups * kh * kw
            if (self.m, self.k) != (n * oh * ow, k) or (self.depthwise and self.n != c):
                raise ValueError(f"conv {self.conv} does not give m={self.m}, n={self.n}, k={self.k}")
        if self.tile and (len(self.tile) not in (5, 6, 7, 8, 9) or min(self.tile[:6]) < 1
                          or self.tile[6:7] not in ((), (0,), (1,)) or min(self.tile[7:8] or (0,)) < 0
                          or self.tile[8:] not in ((), (0,), (1,))):
            raise ValueError(f"tile is (BM, BN, BK, warps, stages[, split K[, TMA 0/1[, persistent programs[, "
                             f"stream-K 0 / data-parallel 1]]]]) of positive sizes, got {self.tile}")
        if self.tile and not self.depthwise and any(x & (x - 1) for x in (self.tile[0], self.tile[2])):
            raise ValueError(f"tile {self.tile}: BM and BK are powers of 2 (Triton's blocks)")
        bn = self.tile[1] if self.tile else 1
        if bn & (bn - 1) and (bn % 16 or self.depthwise or self.tile[6:7] == (1,) or self.tile[8:] == (1,)
                              or (self.tile[7:8] not in ((), (0,)) and self.tile[5] == 1)):
            raise ValueError(f"tile {self.tile}: a BN that is not a power of 2 (dots of its powers of 2 side by side, "
                             "96 = 64 + 32) is a multiple of 16, read without TMA and not persistent or stream-K")
        if self.tile[7:8] not in ((), (0,)) and self.tile[5] == 1 and (self.conv or self.batch):
            raise ValueError("a persistent kernel (stream-K or data-parallel) takes a plain matmul")
        if self.tile[7:8] not in ((), (0,)) and self.tile[5] > 1 and (self.depthwise or self.tile[8:] == (1,)):
            raise ValueError("whole tiles beside split ones (split K with an eighth entry) take no depthwise "
                             "convolution and no data-parallel flag")
        if self.tile[8:] == (1,) and not self.tile[7]:
            raise ValueError("a data-parallel persistent tile needs its number of programs (the eighth entry)")
        if self.dynamic_m and (self.conv or self.batch or self.tile[5:6] not in ((), (1,)) or any(self.tile[6:])):
            raise ValueError("a kernel with M known per call takes a plain matmul and a plain tile "
                             "(no split K, TMA or persistent programs)")
        per_16_bytes = 4 if self.a == "f32" else 8
        if self.tile[6:7] == (1,) and (self.conv or self.k % per_16_bytes
                                       or (self.b_layout == "kn" and self.n % per_16_bytes)):
            raise ValueError("TMA reads matmul operands whose rows are multiples of 16 bytes")
        if max(self.batch, self.groups) > MAX_GRID_Y:
            raise ValueError(f"batch {self.batch}, groups {self.groups}: a CUDA grid's second dimension holds at most "
                             f"{MAX_GRID_Y}")

    def grid_y(self) -> int:
        """Programs along the grid's second dimension: the batch, or a grouped convolution's groups."""
        return self.groups if self.groups > 1 else max(self.batch, 1)

    def describe(self) -> str:
        if self.conv:
            n, c, h, w, kh, kw, sh, sw, *_ = self.conv
            how = f" as {self.precision}" if self.precision else ""
            epi = ", ".join(o[1] for o in self.ops) or "none"
            tile = _tile_text(self.tile)
            if self.depthwise:
                return (f"depthwise conv {n}x{c}x{h}x{w}, {kh}x{kw} stride {sh}x{sw}, {self.a}->{self.out} "
                        f"(f32 FMAs), epilogue [{epi}], tile {tile}")
            if self.groups > 1:
                return (f"conv {n}x{c}x{h}x{w} -> {self.n * self.groups} channels in {self.groups} groups, {kh}x{kw} "
                        f"stride {sh}x{sw}, {self.a}{how}->{self.out} (implicit GEMMs {self.groups}x{self.m}x{self.n}x"
                        f"{self.k}), epilogue [{epi}], tile {tile}")
            if self.nhwc:
                return (f"conv NHWC {n}x{h}x{w}x{c}{' (read from NCHW)' if self.nchw_input else ''} -> {self.n} channels, {kh}x{kw} stride {sh}x{sw}, {self.a}{how}->"
                        f"{self.out} (implicit GEMM {self.m}x{self.n}x{self.k}), epilogue [{epi}], tile {tile}")
            return (f"conv {n}x{c}x{h}x{w} -> {self.n} channels, {kh}x{kw} stride {sh}x{sw}, {self.a}{how}->{self.out} "
                    f"(implicit GEMM {self.m}x{self.n}x{self.k}), epilogue [{epi}], tile {tile}")
        lead = f"{self.batch}x" if self.batch else ""
        if self.dynamic_m:
            lead = "?"  # M at run time
        epi = ", ".join(o[1] for o in self.ops) or "none"
        tile = _tile_text(self.tile)
        how = f" as {self.precision}" if self.precision else ""
        m = "" if self.dynamic_m else self.m
        return (f"gemm {lead}{m}x{self.n}x{self.k} {self.a}*{self.b}({self.b_layout}){how}->{self.out}, "
                f"epilogue [{epi}], tile {tile}" + (f" (chosen for M = {self.m})" if self.dynamic_m else ""))


def _tile_text(tile: tuple) -> str:
    if not tile:
        return "?"
    text = "x".join(map(str, tile[:3]))
    text += f", K split {tile[5]} ways" if len(tile) > 5 and tile[5] > 1 else ""
    text += ", TMA loads" if len(tile) > 6 and tile[6] == 1 else ""
    if len(tile) > 7 and tile[7] and len(tile) > 5 and tile[5] > 1:
        text += f", the first {tile[7]} tiles whole"
    elif len(tile) > 7 and tile[7]:
        kind = "persistent" if tile[8:] == (1,) else "stream-K"
        text += f", {kind} over {tile[7]} programs"
    return text


MASKS = ("", "causal", "add")


@dataclass(frozen=True)
class AttentionSpec(_Spec):
    """softmax(scale * q k^T + mask) v over `batch` independent heads (torch-mlir's
    tm_tensor.attention on [batch, L, E] operands), as one flash-attention kernel: the [L, S]
    scores never leave the chip. Operands q [batch, L, E], k [batch, S, E], v [batch, S, EV],
    the result [batch, L, EV]; all row-major."""

    batch: int
    l: int
    s: int
    e: int
    ev: int
    dtype: str
    """Element type of q, k, v (f32, bf16, f16); the scores and softmax are f32."""
    out: str
    scale: float
    mask: str = ""
    """'': none; 'causal': key j > query i masked (torch's is_causal, top-left aligned);
    'add': an additive mask operand read at mask_strides."""
    mask_dtype: str = ""
    heads: int = 1
    """The batch index is (b, h) with h = index % heads: strides are per b and per h."""
    mask_strides: tuple[int, ...] = ()
    """Element strides of the mask operand per (b, h, i, j); 0 where it is broadcast."""
    strides: tuple[tuple[int, ...], ...] = ()
    """Element strides per (b, h, row) of q, k, v and the result, whose last dimension is
    contiguous: () for all four contiguous [batch, rows, E]; others read a [B, L, H, E] tensor
    where it is (the heads split off a projection's result, without the transpose's copy)."""
    precision: str = ""
    """float32: 'tf32x3' (float32-accurate) or 'tf32'; '' for 16-bit."""
    offsets: tuple[int, ...] = ()
    """Element offsets of q, k, v into their operands (() for none): q, k and v read where a
    projection wrote them side by side ([B, L, 3*H*E] split by `split`), not sliced out."""
    group: int = 1
    """Grouped-query attention (GQA, MQA): `group` consecutive query heads share one head of k
    and v, which hold heads / group heads: query head h reads k, v head h // group (their
    strides are per b, per k/v head, per row). The k, v a model expanded to every head
    (repeat_kv) are read where they came from, without the copy."""
    dynamic_batch: bool = False
    """The number of heads (batch) is known per call only (a dynamic build's batch): the grid's
    second dimension follows it; `batch` is then the count the tile was chosen for."""
    tile: tuple[int, ...] = field(default=(), compare=False)
    """(BM, BN, warps, stages); () until chosen."""
    kind: str = "attention"

    @property
    def inputs(self) -> tuple:
        """The operands after q, k, v (the GEMM's epilogue inputs' place in the binding list)."""
        return (Input(self.mask_dtype, "full"),) if self.mask == "add" else ()

    def operands(self) -> int:
        return 3 + len(self.inputs)

    def family(self) -> str:
        return "attention"

    def check(self) -> None:
        for name in ("batch", "l", "s", "e", "ev", "heads"):
            if not isinstance(getattr(self, name), int) or getattr(self, name) < 1:
                raise ValueError(f"{name} must be a positive integer, got {getattr(self, name)!r}")
        if self.dtype not in FLOAT_TYPES or self.out not in FLOAT_TYPES:
            raise ValueError(f"attention on {self.dtype} -> {self.out}; kernels take {FLOAT_TYPES}")
        if self.mask not in MASKS:
            raise ValueError(f"mask is one of {MASKS}, got {self.mask!r}")
        if self.mask == "add" and (len(self.mask_strides) != 4 or self.mask_dtype not in FLOAT_TYPES):
            raise ValueError(f"an additive mask takes 4 strides and a float type, got {self.mask_strides} "
                             f"{self.mask_dtype!r}")
        if self.batch % self.heads:
            raise ValueError(f"batch {self.batch} is not a multiple of heads {self.heads}")
        if not isinstance(self.group, int) or self.group < 1 or self.heads % self.group:
            raise ValueError(f"group {self.group!r} does not divide heads {self.heads}")
        if self.batch > MAX_GRID_Y:
            raise ValueError(f"{self.batch} heads: a CUDA grid's second dimension holds at most {MAX_GRID_Y}")
        if (self.dtype == "f32") != bool(self.precision) or self.precision not in ("", "tf32", "tf32x3"):
            raise ValueError(f"precision {self.precision!r} does not fit {self.dtype} operands")
        if max(self.e, self.ev) > 256:
            raise ValueError(f"head sizes {self.e}, {self.ev}: the template holds at most 256")
        if self.tile and len(self.tile) != 4:
            raise ValueError(f"tile is (BM, BN, warps, stages), got {self.tile}")
        if self.offsets and (len(self.offsets) != 3 or min(self.offsets) < 0):
            raise ValueError(f"offsets are 3 element offsets (q, k, v), got {self.offsets}")
        if self.strides and (len(self.strides) != 4 or any(len(x) != 3 for x in self.strides)):
            raise ValueError(f"strides are 4 triples (q, k, v, result) of (b, h, row), got {self.strides}")

    def operand_strides(self) -> tuple[tuple[int, int, int], ...]:
        """(per b, per h, per row) element strides of q, k, v and the result."""
        if self.strides:
            return self.strides
        h, kv = self.heads, self.heads // self.group
        return tuple(((h if i in (0, 3) else kv) * rows * width, rows * width, width) for i, (rows, width)
                     in enumerate(((self.l, self.e), (self.s, self.e), (self.s, self.ev), (self.l, self.ev))))

    def describe(self) -> str:
        how = f" as {self.precision}" if self.precision else ""
        mask = {"": "", "causal": ", causal", "add": ", additive mask"}[self.mask]
        tile = "x".join(map(str, self.tile[:2])) if self.tile else "?"
        strided = ", strided" if self.strides else ""
        gqa = f", {self.heads // self.group} k/v heads for {self.heads}" if self.group > 1 else ""
        return (f"attention {self.batch}x{self.l}x{self.s} heads of {self.e}->{self.ev}, {self.dtype}{how}->{self.out}, "
                f"scale {self.scale:.6g}{mask}{gqa}{strided}, tile {tile}")


ROW_TYPES = FLOAT_TYPES + ("f64", "i1")
"""Types a row kernel's values take: floats (16-bit ones held in f32, rounded after each op),
f64 (held in f64: torch-mlir computes a variance in f64) and i1 (comparisons)."""
ROW_REDUCTIONS = ("sum", "max", "maxnum")
"""A row kernel's reductions over the row: a sum, a maximum that propagates NaN (arith.maximumf),
one that ignores it (arith.maxnumf)."""
MAX_ROW = 8192
"""The widest row a row kernel holds in registers (a program's row values are [BR, pow2(cols)])."""


@dataclass(frozen=True)
class RowSpec(_Spec):
    """A row-wise program (LayerNorm, RMSNorm, softmax, and whatever elementwise work sits around
    them) over `rows` independent rows of `cols` elements, as one kernel: each program holds BR
    whole rows in registers, so every input is read once and the result written once.

    inputs: how each operand is read, per element (r, c): 'full' [rows, cols] row-major, 'row'
    [cols] (one value per column: a LayerNorm's weight, the same for every row), 'col' [rows] (one
    value per row), 'scalar' []. ops: the straight-line program of braze.kernels.spec's
    epilogue ops ([dst, op, operands, type, extra]) over row values ([BR, cols]) and per-row values
    ([BR, 1]); besides the epilogue's ops, `sum`, `max` and `maxnum` reduce a row value over the
    row to a per-row value (extra: the reduction's initial value, a number), and `fpowi` raises to
    an integer power (extra: the power). The kernel stores `result` (a row value) as `out`."""

    rows: int
    cols: int
    out: str
    inputs: tuple[Input, ...] = ()
    ops: tuple[tuple, ...] = ()
    result: str = ""
    tile: tuple[int, ...] = field(default=(), compare=False)
    """(BR rows a program, warps); () until chosen."""
    kind: str = "rows"

    dynamic_m = False  # a row kernel's rows are fixed at compile time (kernel_embed asks)

    def operands(self) -> int:
        return len(self.inputs)

    def family(self) -> str:
        return "rows"

    def check(self) -> None:
        for name in ("rows", "cols"):
            if not isinstance(getattr(self, name), int) or getattr(self, name) < 1:
                raise ValueError(f"{name} must be a positive integer, got {getattr(self, name)!r}")
        if self.cols > MAX_ROW:
            raise ValueError(f"rows of {self.cols} elements: a row kernel holds at most {MAX_ROW} in registers")
        if self.out not in FLOAT_TYPES:
            raise ValueError(f"a row kernel writes {FLOAT_TYPES}, not {self.out!r}")
        for i in self.inputs:
            if i.access not in ACCESS or i.dtype not in FLOAT_TYPES + ("f64",):
                raise ValueError(f"input {i} is not one of {ACCESS} x {FLOAT_TYPES + ('f64',)}")
        names = {f"in{i}" for i in range(len(self.inputs))}
        for op in self.ops:
            if len(op) != 5 or not isinstance(op[0], str) or op[3] not in ROW_TYPES:
                raise ValueError(f"op {op} is not [dst, op, operands, type, extra] with a type of {ROW_TYPES}")
            for x in op[2]:
                if isinstance(x, str) and x not in names:
                    raise ValueError(f"op {op} reads {x}, which nothing before it defines")
            names.add(op[0])
        if not self.ops or self.result not in names or not any(op[1] in ROW_REDUCTIONS for op in self.ops):
            raise ValueError("a row kernel has a reduction and stores a value its ops or inputs define")
        if self.tile and (len(self.tile) != 2 or min(self.tile) < 1 or self.tile[0] & (self.tile[0] - 1)
                          or self.tile[1] & (self.tile[1] - 1) or self.tile[1] > 32):
            raise ValueError(f"tile is (rows a program, warps), powers of 2 (at most 32 warps), got {self.tile}")

    def demoted(self) -> "RowSpec":
        """The spec with its f64 ops and operands in f32, as IREE's default demotion of 64-bit
        floats makes the program (torch-mlir computes every variance in f64; eager's LayerNorm,
        var and std kernels on CUDA accumulate in f32)."""
        f32 = lambda t: "f32" if t == "f64" else t  # noqa: E731
        return RowSpec(rows=self.rows, cols=self.cols, out=self.out,
                       inputs=tuple(Input(f32(i.dtype), i.access) for i in self.inputs),
                       ops=tuple((d, o, a, f32(t), e) for d, o, a, t, e in self.ops), result=self.result,
                       tile=self.tile)

    def describe(self) -> str:
        reductions = [op[1] for op in self.ops if op[1] in ROW_REDUCTIONS]
        types = sorted({op[3] for op in self.ops} - {"i1"})
        tile = f"{self.tile[0]} rows x {self.tile[1]} warps" if self.tile else "?"
        return (f"rows {self.rows}x{self.cols} -> {self.out}: {len(self.ops)} ops in {'/'.join(types)}, "
                f"reductions [{', '.join(reductions)}], {len(self.inputs)} inputs, tile {tile}")


def read_spec(text: str) -> "GemmSpec | AttentionSpec | RowSpec":
    """The spec a `braze.kernel` attribute holds (ValueError/TypeError/KeyError when damaged)."""
    d = json.loads(text)
    if not isinstance(d, dict):
        raise ValueError("a spec is a JSON object")
    if d.get("kind") == "rows":
        d["tile"] = tuple(d.get("tile", ()))
        d["inputs"] = tuple(Input(**i) for i in d.get("inputs", ()))
        d["ops"] = tuple(tuple(o) for o in d.get("ops", ()))
        spec = RowSpec(**d)
        spec.check()
        return spec
    if d.get("kind") == "attention":
        d["tile"] = tuple(d.get("tile", ()))
        d["mask_strides"] = tuple(d.get("mask_strides", ()))
        d["strides"] = tuple(tuple(x) for x in d.get("strides", ()))
        d["offsets"] = tuple(d.get("offsets", ()))
        spec = AttentionSpec(**d)
        spec.check()
        return spec
    return GemmSpec.from_json(text)
