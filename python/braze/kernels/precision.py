"""What arithmetic a generated kernel's PTX does, read off its instructions, against its spec.

Triton's interpreter ignores `tl.dot`'s input_precision, so the kernel tests that run the
templates on the CPU cannot see whether a float32 kernel computes as three TF32 products
(float32-accurate, torch's default) or one; only the PTX can. Triton lowers a `tf32x3` dot to
a split of each operand, x = big + small with big = cvt.rna.tf32.f32(x) and small = x - big,
and three TF32 MMAs (small*big, big*small, big*big) where `tf32` has one; an `ieee` dot has no
MMA at all (f32 FMAs). Seen in Triton 3.6's sm_90 code for one 64x64 tile, 32 deep in float32
and 64 in bf16:

    tf32x3   32 cvt.rna.tf32.f32, 12 wgmma.mma_async ... m64n64k8.f32.tf32.tf32
    tf32      0 cvt.rna.tf32.f32,  4 wgmma.mma_async ... m64n64k8.f32.tf32.tf32
    bf16      0 cvt.rna.tf32.f32,  4 wgmma.mma_async ... m64n64k16.f32.bf16.bf16

`build` checks every kernel it compiles or finds in its cache (a mismatch is a braze bug, an
InternalError), and `embed` writes the spec on the first line of the PTX it embeds, so the
kernels of a compiled artifact can be checked again from its .vmfb alone (`artifact_kernels`).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from braze.errors import InternalError

from braze.kernels.spec import AttentionSpec, GemmSpec, RowSpec, read_spec

SPEC_LINE = "// braze kernel: "
"""The first line of an embedded kernel's PTX: this, then its spec's JSON (a PTX comment)."""

PRECISIONS = ("tf32x3", "tf32", "bf16", "f16", "f32-fma")
"""What `ptx_precision` finds in a braze kernel; 'mixed' (products of several kinds, or a split
on some tf32 products only) or another MMA operand type name otherwise."""

_MMA = re.compile(r"^\s*(?:@!?%\w+\s+)?((?:wgmma\.mma_async|mma\.sync)\.[\w.]+)", re.M)
_SPLIT = re.compile(r"^\s*(?:@!?%\w+\s+)?cvt\.rna(?:\.satfinite)?\.tf32\.f32\b", re.M)
_SHAPE = re.compile(r"m\d+n\d+k\d+")
_LAYOUT = {"row", "col", "satfinite"}


def mma_counts(ptx: str) -> Counter:
    """{(shape, A operand type): instructions} over the PTX's MMA instructions (wgmma on
    sm_90, mma.sync where a tile is too small for it)."""
    counts: Counter = Counter()
    for opcode in _MMA.findall(ptx):
        parts = opcode.split(".")
        at = next((i for i, p in enumerate(parts) if _SHAPE.fullmatch(p)), None)
        if at is None:
            continue
        types = [p for p in parts[at + 1:] if p not in _LAYOUT]
        if len(types) >= 2:  # D type, then A's (then B's, and C's for mma.sync)
            counts[(parts[at], types[1])] += 1
    return counts


def splits(ptx: str) -> int:
    """The PTX's float32 -> TF32 roundings (cvt.rna.tf32.f32): the big halves of a tf32x3 split."""
    return len(_SPLIT.findall(ptx))


def ptx_precision(ptx: str) -> str:
    """How a kernel's products are computed, from its PTX: 'tf32x3', 'tf32', 'bf16', 'f16',
    'f32-fma' (no tensor-core MMA), 'mixed', or another MMA operand type's PTX name.

    tf32x3: TF32 MMAs, the split's roundings, and each MMA shape's count a multiple of 3 (three
    products per dot). A kernel with a split dot and a plain one is 'mixed': a dot's MMA count
    is a power of two times its unrolling (tiles and head sizes are powers of two), so three
    times the one plus the other is not a multiple of 3."""
    counts = mma_counts(ptx)
    kinds = {kind for _, kind in counts}
    if not kinds:
        return "f32-fma"
    if len(kinds) > 1:
        return "mixed"
    (kind,) = kinds
    if kind != "tf32" or not splits(ptx):
        return kind
    return "tf32x3" if all(n % 3 == 0 for n in counts.values()) else "mixed"


def expected_precision(spec: GemmSpec | AttentionSpec) -> str:
    """What the spec asks of its kernel's products, in `ptx_precision`'s words."""
    if isinstance(spec, RowSpec) or (isinstance(spec, GemmSpec) and spec.depthwise):
        return "f32-fma"  # a row kernel has no products of tiles  # no GEMM: each channel's taps as f32 FMAs, whatever the element type
    if spec.precision:
        return spec.precision
    return spec.dtype if isinstance(spec, AttentionSpec) else spec.a


def summary(ptx: str) -> str:
    """The instructions `ptx_precision` reads, for a message: '32 cvt.rna.tf32.f32, 12 m64n64k8 tf32 MMAs'."""
    mmas = ", ".join(f"{n} {shape} {kind} MMAs" for (shape, kind), n in sorted(mma_counts(ptx).items()))
    return f"{splits(ptx)} cvt.rna.tf32.f32, {mmas or 'no MMAs'}"


def check_precision(spec: GemmSpec | AttentionSpec, ptx: str, where: str = "") -> None:
    """InternalError when the PTX's arithmetic is not what the spec asks (a template or
    Triton lowering a dot differently from what braze promised the user)."""
    want, found = expected_precision(spec), ptx_precision(ptx)
    if found != want:
        raise InternalError(f"braze bug: the kernel for {spec.describe()} computes its products as {found} "
                            f"({summary(ptx)}) where its spec asks for {want}"
                            + (f"; its generated source is {where}" if where else ""))


@dataclass(frozen=True)
class EmbeddedKernel:
    name: str
    """The PTX's entry (braze_gemm_<key>, braze_attention_<key>)."""
    spec: GemmSpec | AttentionSpec
    ptx: str

    @property
    def expected(self) -> str:
        return expected_precision(self.spec)

    @property
    def found(self) -> str:
        return ptx_precision(self.ptx)


_EMBEDDED = re.compile(re.escape(SPEC_LINE.encode()) + rb"([^\n]*)\n([^\0]*)")
_ENTRY = re.compile(r"^\s*(?:\.visible\s+)?\.entry\s+(\w+)", re.M)


def artifact_kernels(vmfb: bytes) -> list[EmbeddedKernel]:
    """The generated kernels inside a compiled CUDA module (its .vmfb: IREE keeps each
    executable's PTX there as it was embedded, NUL-terminated), in the order they appear."""
    found = []
    for m in _EMBEDDED.finditer(vmfb):
        ptx = m.group(2).decode()
        entry = _ENTRY.search(ptx)
        found.append(EmbeddedKernel(entry.group(1) if entry else "", read_spec(m.group(1).decode()),
                                    SPEC_LINE + m.group(1).decode() + "\n" + ptx))
    return found
