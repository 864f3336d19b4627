"""GPU kernel configurations and kernel signatures: the one printer and parser of each format.

No MLIR here: the passes write these texts as discardable string attributes (IREE's own
attributes do not parse in the front end's context), the back end parses them again to build
IREE's `compilation_info`, the report shows them and the tuner stores them. Each format has
exactly one writer (`text()`, `short()`) and one reader (`parse()`, `parse_short()`):

    braze.kernel_config = "workgroup=1024 thread=4 threads=256"              KernelConfig, 1-D
    braze.kernel_config = "workgroup=1,1,1,8,4,56 thread=1,1,1,1,1,4 threads=224"   N-D (im2col)
    braze.matmul_config = "simt workgroup=64,32 reduction=16 thread=4,2 threads=16,16"
    braze.matmul_config = "mma=NV_MMA_SYNC_F32_16x8x16_BF16 workgroup=128,128 subgroup=4,8
                           reduction=4 threads=128 stages=3"                    MatmulConfig
    short forms (pass options, tuning names): "1024:4:256", "simt:64x32:16:4x2:16x16",
                                             "mma:128x128:4:4x8:128:3"
    signatures (tuning-cache keys): "elementwise_262144_f32xf32_mulf,addf",
                                    "matmul_tb_1024x768x768_bf16", "batch_matmul_96x128x128x64_f32"
"""

from __future__ import annotations

import re
from dataclasses import dataclass

KERNEL_CONFIG_ATTR = "braze.kernel_config"
"""Discardable string attribute on an elementwise generic or im2col copy: a KernelConfig's text."""

MATMUL_CONFIG_ATTR = "braze.matmul_config"
"""Discardable string attribute on a linalg.matmul or linalg.batch_matmul: a MatmulConfig's text."""

IM2COL_ATTR = "braze.im2col"
"""Unit attribute marking the im2col copies fusion-conv-to-matmul makes (fusion-configure-kernels
tiles them)."""

CONFIG_ATTRS = (KERNEL_CONFIG_ATTR, MATMUL_CONFIG_ATTR)
"""The attributes that carry a configuration to the back end."""


def _ints(text: str, sep: str) -> tuple[int, ...]:
    return tuple(int(x) for x in text.split(sep))


def _fields(text: str) -> tuple[list[str], dict[str, str]]:
    words = text.split()
    if not words:
        raise ValueError("empty configuration")
    return words, dict(w.split("=", 1) for w in words if "=" in w)


@dataclass(frozen=True)
class KernelConfig:
    """Tiles of an all-parallel kernel on IREE's TileAndFuse pipeline: elements per workgroup
    and per thread along each loop, and the workgroup's (1-D) thread count."""

    workgroup: tuple[int, ...]
    thread: tuple[int, ...]
    threads: int

    def __post_init__(self) -> None:
        if (not self.workgroup or len(self.workgroup) != len(self.thread) or self.threads <= 0
                or min(self.workgroup + self.thread) <= 0):
            raise ValueError(f"inconsistent kernel configuration {self.workgroup} {self.thread} {self.threads}")

    def text(self) -> str:
        join = lambda v: ",".join(map(str, v))  # noqa: E731
        return f"workgroup={join(self.workgroup)} thread={join(self.thread)} threads={self.threads}"

    @classmethod
    def parse(cls, text: str) -> "KernelConfig":
        _, fields = _fields(text)
        try:
            return cls(_ints(fields["workgroup"], ","), _ints(fields["thread"], ","), int(fields["threads"]))
        except KeyError as e:
            raise ValueError(f"kernel configuration '{text}' lacks {e}") from None

    def short(self) -> str:
        """'1024:4:256' (1-D only): the form of fusion-configure-kernels' `config` option."""
        if len(self.workgroup) != 1:
            raise ValueError("only 1-D kernel configurations have a short form")
        return f"{self.workgroup[0]}:{self.thread[0]}:{self.threads}"

    @classmethod
    def parse_short(cls, text: str) -> "KernelConfig":
        workgroup, thread, threads = (int(x) for x in text.split(":"))
        return cls((workgroup,), (thread,), threads)


@dataclass(frozen=True)
class MatmulConfig:
    """A tile configuration for a (batch) matmul.

    simt (float32: no tensor-core path without TF32, which would change the arithmetic):
      workgroup tile M x N, K step `reduction` elements, `tile` M x N elements per thread,
      `threads` a 2-D workgroup. mma (bfloat16 on NV_MMA_SYNC_F32_16x8x16_BF16; IREE 3.13 has
      no wgmma): workgroup tile M x N, `tile` M x N intrinsic tiles (16 x 8) per warp, K step
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

    @classmethod
    def parse(cls, text: str) -> "MatmulConfig":
        words, fields = _fields(text)
        try:
            if words[0] == "simt":
                config = cls("simt", _ints(fields["workgroup"], ","), int(fields["reduction"]),
                             _ints(fields["thread"], ","), _ints(fields["threads"], ","))
            elif fields.get("mma") == cls.MMA:
                config = cls("mma", _ints(fields["workgroup"], ","), int(fields["reduction"]),
                             _ints(fields["subgroup"], ","), _ints(fields["threads"], ","), int(fields["stages"]))
            else:
                raise ValueError(f"matmul configuration '{text}' is neither simt nor mma={cls.MMA}")
        except KeyError as e:
            raise ValueError(f"matmul configuration '{text}' lacks {e}") from None
        if not config.consistent():
            raise ValueError(f"matmul configuration '{text}': its threads do not cover its tile")
        return config

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
        config = cls(kind, _ints(wg, "x"), int(red), _ints(tile, "x"), _ints(threads, "x"),
                     int(rest[0]) if rest else 0)
        if len(config.workgroup) != 2 or len(config.tile) != 2 or not config.consistent():
            raise ValueError(text)
        return config

    def consistent(self) -> bool:
        """The threads cover the workgroup tile exactly."""
        if len(self.workgroup) != 2 or len(self.tile) != 2 or min(self.workgroup + self.tile) <= 0:
            return False
        (wm, wn), (tm, tn) = self.workgroup, self.tile
        if self.kind == "simt":
            return len(self.threads) == 2 and wm == tm * self.threads[0] and wn == tn * self.threads[1]
        warps_m, warps_n = wm // (16 * tm), wn // (8 * tn)
        return (wm % (16 * tm) == 0 and wn % (8 * tn) == 0 and len(self.threads) == 1
                and warps_m * warps_n * 32 == self.threads[0])

    def divides(self, m: int, n: int, k: int) -> bool:
        step = self.reduction * (16 if self.kind == "mma" else 1)
        return m % self.workgroup[0] == 0 and n % self.workgroup[1] == 0 and k % step == 0


def parse_config(attr: str, text: str) -> KernelConfig | MatmulConfig:
    """The configuration an attribute of CONFIG_ATTRS carries."""
    if attr == KERNEL_CONFIG_ATTR:
        return KernelConfig.parse(text)
    if attr == MATMUL_CONFIG_ATTR:
        return MatmulConfig.parse(text)
    raise ValueError(f"'{attr}' is not a configuration attribute")


def parse_stored(signature: str, text: str) -> KernelConfig | MatmulConfig:
    """A tuning-cache entry: a matmul signature's MatmulConfig or a kernel's KernelConfig."""
    return MatmulConfig.parse(text) if MatmulSignature.matches(signature) else KernelConfig.parse(text)


# ---------------------------------------------------------------------------
# Signatures: what identifies one kernel to the tuning cache.


@dataclass(frozen=True)
class MatmulSignature:
    """A (batch) matmul's shape and element type; `transposed_b` when its right operand is a
    transposed tensor (a Linear's weight), whose tiles read B along K: a different kernel."""

    batch: int
    m: int
    n: int
    k: int
    element: str
    batched: bool = False
    transposed_b: bool = False

    _RE = re.compile(r"(batch_)?matmul_(tb_)?([0-9x]+)_([a-z0-9]+)")

    def text(self) -> str:
        kind = "batch_matmul" if self.batched else "matmul"
        tb = "tb_" if self.transposed_b else ""
        dims = f"{self.batch}x{self.m}x{self.n}x{self.k}" if self.batched else f"{self.m}x{self.n}x{self.k}"
        return f"{kind}_{tb}{dims}_{self.element}"

    @classmethod
    def matches(cls, text: str) -> bool:
        return cls._RE.fullmatch(text) is not None

    @classmethod
    def parse(cls, text: str) -> "MatmulSignature":
        found = cls._RE.fullmatch(text)
        dims = [int(d) for d in found[3].split("x") if d] if found else []
        if not found or len(dims) != (4 if found[1] else 3):
            raise ValueError(f"not a matmul signature: {text!r} (expected e.g. matmul_tb_1024x768x768_bf16)")
        batch, (m, n, k) = (dims[0], dims[1:]) if found[1] else (1, dims)
        return cls(batch, m, n, k, found[4], bool(found[1]), bool(found[2]))


@dataclass(frozen=True)
class ElementwiseSignature:
    """A 1-D elementwise kernel: its element count, operand element types and body ops."""

    elements: int
    types: tuple[str, ...]
    ops: tuple[str, ...]

    def text(self) -> str:
        return f"elementwise_{self.elements}_{'x'.join(self.types)}_{','.join(self.ops)}"

    @classmethod
    def parse(cls, text: str) -> "ElementwiseSignature":
        head, _, rest = text.partition("_")
        count, _, rest = rest.partition("_")
        types, _, ops = rest.partition("_")
        if head != "elementwise" or not count.isdigit() or not types:
            raise ValueError(f"not an elementwise kernel signature: {text!r}")
        return cls(int(count), tuple(types.split("x")), tuple(ops.split(",")) if ops else ())
