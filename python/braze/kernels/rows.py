"""braze's row template: one Triton kernel per RowSpec (LayerNorm, RMSNorm, softmax and the
elementwise work around them).

Each program holds BR whole rows in registers as a [BR, BC] block (BC: the row length rounded
up to a power of 2), loads every input once, runs the spec's straight-line program on the block
(a reduction over the row gives a [BR, 1] per-row value, which the ops after it broadcast), and
stores the result once. IREE 3.13 compiles the same chain as a reduction dispatch that reached
42% of copy bandwidth for GPT-2's LayerNorm on an H100 (bench/NOTES.md §46); a row that stays in
registers reads and writes each element once, which is the memory roofline of the op.

Values are held in f32 (16-bit results rounded to their type after each op, as IREE's emulation
of 16-bit arithmetic rounds), in f64 where the program computes in f64 (torch-mlir's variance).
Padded columns (BC > cols) are left out of each reduction (the neutral element in their place);
padded rows (rows not a multiple of BR) compute on zeros and are not stored. The parameters are
IREE's CUDA ABI for an external executable, as for the GEMM template (braze.kernels.gemm).
"""

from __future__ import annotations

import math

from braze.kernels.gemm import _FOLD, TL_TYPES, op_expression, round_to
from braze.kernels.spec import ROW_REDUCTIONS, RowSpec

TYPES = {**TL_TYPES, "f64": "tl.float64"}
TRITON = {"f32": "fp32", "bf16": "bf16", "f16": "fp16", "f64": "fp64"}
ELEMENTS_A_PROGRAM = 2048
"""A program's block holds this many elements (BR rows of short ones)."""
BYTES_A_THREAD = 64
"""Each thread loads this many bytes of a full input (four 16-byte vectors): Triton's LayerNorm
tutorial has 8 elements a thread (a 1,024-wide row with 4 warps), which made 35-60% of copy
bandwidth on the H100 where 32 bf16 or 16 f32 elements made 80-107% (bench/NOTES.md §47)."""
BYTES = {"f32": 4, "bf16": 2, "f16": 2, "f64": 8}


def kernel_name(spec: RowSpec) -> str:
    return f"braze_rows_{spec.key()}"


def block(cols: int) -> int:
    return max(16, 1 << (cols - 1).bit_length())


def _number(x: float) -> str:
    if not math.isfinite(x):
        return {math.inf: "float('inf')", -math.inf: "float('-inf')"}.get(x, "float('nan')")
    return repr(float(x))


def _fold(op: str, args: list, ty: str) -> float | None:
    """The value of an op whose operands are all numbers, rounded to its type (f64 kept)."""
    if op not in _FOLD or ty == "i1" or not all(isinstance(a, (int, float)) for a in args):
        return None
    try:
        value = float(_FOLD[op](*[float(a) for a in args]))
    except (ValueError, OverflowError, ZeroDivisionError):
        return None
    return value if ty == "f64" else round_to(value, ty)


def _held(expr: str, ty: str) -> str:
    """`expr` as the kernel holds a value of type `ty`."""
    if ty == "i1":
        return expr
    if ty == "f64":
        return f"({expr}).to(tl.float64)"
    if ty in ("bf16", "f16"):
        return f"({expr}).to({TYPES[ty]}).to(tl.float32)"
    return f"({expr}).to(tl.float32)"


def _power(x: str, n: int) -> str:
    """x ** n for a small integer n, as products (math.fpowi: x * x for a square)."""
    if n == 0:
        return f"({x} * 0.0 + 1.0)"
    product = " * ".join([x] * abs(n))
    return f"({product})" if n > 0 else f"(1.0 / ({product}))"


def body_lines(spec: RowSpec, cmask: str | None) -> list[str]:
    """The statements computing the spec's program on the loaded inputs; the result in `out`."""
    lines, folded = [], {}
    for dst, op, args, ty, extra in spec.ops:
        args = [folded.get(x, x) if isinstance(x, str) else x for x in args]
        value = _fold(op, args, ty)
        if value is not None and op not in ROW_REDUCTIONS:
            folded[dst] = value
            continue
        a = [_number(x) if isinstance(x, (int, float)) else x.replace("%", "t") for x in args]
        name = dst.replace("%", "t")
        if op in ROW_REDUCTIONS:
            x = a[0]
            neutral = "0.0" if op == "sum" else "float('-inf')"
            masked = f"tl.where({cmask}, {x}, {neutral})" if cmask else x
            if op == "sum":
                expr = f"tl.sum({masked}, axis=1, keep_dims=True)"
                if extra:
                    expr = f"({expr} + {_number(extra)})"
            else:
                expr = f"tl.max({masked}, axis=1, keep_dims=True)"
                if extra is not None and extra != -math.inf:
                    expr = f"tl.maximum({expr}, {_number(extra)})"
                if op == "max":  # arith.maximumf: a NaN anywhere in the row is the row's maximum
                    nans = f"({x} != {x})" + (f" & {cmask}" if cmask else "")
                    expr = f"tl.where(tl.max(({nans}).to(tl.int32), axis=1, keep_dims=True) > 0, float('nan'), {expr})"
            lines.append(f"{name} = {_held(expr, ty)}")
            continue
        expr = _power(a[0], int(extra)) if op == "fpowi" else op_expression(op, a, extra, "a row kernel")
        lines.append(f"{name} = {_held(expr, ty)}")
    result = folded.get(spec.result, spec.result)
    result = _number(result) if isinstance(result, (int, float)) else result.replace("%", "t")
    lines.append(f"out = tl.zeros((BR, BC), dtype=tl.float32) + {result}")
    return lines


def source(spec: RowSpec) -> str:
    rows, cols = spec.rows, spec.cols
    br = spec.tile[0]
    bc = block(cols)
    wide = rows * cols >= 2 ** 31
    rmask = f"(rr < {rows})" if rows % br else None
    cmask = f"(cc < {cols})" if bc != cols else None
    both = " & ".join(m for m in (rmask, cmask) if m) or None
    params = "".join(f"in{i}_ptr, " for i in range(len(spec.inputs)))
    lines = ["rr = pid * BR + tl.arange(0, BR)[:, None]" + (".to(tl.int64)" if wide else ""),
             "cc = tl.arange(0, BC)[None, :]", f"offs = rr * {cols} + cc"]

    def load(ptr: str, mask: str | None, dtype: str) -> str:
        masked = f", mask={mask}, other=0.0" if mask else ""
        held = "tl.float64" if dtype == "f64" else "tl.float32"
        return f"tl.load({ptr}{masked}).to({held})"

    for i, inp in enumerate(spec.inputs):
        at = {"full": (f"in{i}_ptr + offs", both), "row": (f"in{i}_ptr + cc", cmask),
              "col": (f"in{i}_ptr + rr", rmask), "scalar": (f"in{i}_ptr", None)}[inp.access]
        lines.append(f"in{i} = {load(*at, inp.dtype)}")
    lines += body_lines(spec, cmask)
    store_mask = f", mask={both}" if both else ""
    lines.append(f"tl.store(o_ptr + offs, out.to({TYPES[spec.out]}){store_mask})")
    body = "\n".join("    " + line for line in lines)
    return f'''\
# Generated by braze (braze.kernels.rows) for: {spec.describe()}
import triton
import triton.language as tl
from triton.language.extra import libdevice


@triton.jit
def {kernel_name(spec)}({params}o_ptr, BR: tl.constexpr, BC: tl.constexpr):
    pid = tl.program_id(0)
{body}
'''


def choose_tile(spec: RowSpec, sms: int) -> tuple[int, int]:
    """(BR, warps): blocks of ELEMENTS_A_PROGRAM elements (short rows share a program, while the
    programs still fill the SMs twice over) and BYTES_A_THREAD of the widest full input a thread
    (32 bf16 or 16 f32 elements), 1 to 16 warps. Measured on an H100 (bench/NOTES.md §47, every
    candidate tile of seven cases): the bf16 LayerNorm 768 wide at 2x2 80-98% of copy bandwidth
    (12,608 to 131,072 rows; 1x8, 8 elements a thread, 27-37%), RMSNorm 2048 wide at 1x2 82-107%,
    a 197-wide float32 softmax at 8x4 102%."""
    bc = block(spec.cols)
    br = max(1, ELEMENTS_A_PROGRAM // bc)
    while br > 1 and math.ceil(spec.rows / br) < 2 * sms:
        br //= 2
    size = max([BYTES[i.dtype] for i in spec.inputs if i.access == "full"] or [4])
    warps = max(1, min(16, br * bc // (32 * (BYTES_A_THREAD // size))))
    return br, 1 << (warps.bit_length() - 1)


def grid(spec: RowSpec) -> tuple[int, int, int]:
    return (math.ceil(spec.rows / spec.tile[0]), 1, 1)


def signature(spec: RowSpec) -> dict[str, str]:
    sig = {f"in{i}_ptr": "*" + TRITON[inp.dtype] for i, inp in enumerate(spec.inputs)}
    sig["o_ptr"] = "*" + TRITON[spec.out]
    sig["BR"] = sig["BC"] = "constexpr"
    return sig


def constexprs(spec: RowSpec) -> dict[str, int]:
    return {"BR": spec.tile[0], "BC": block(spec.cols)}


def options(spec: RowSpec) -> tuple[int, int]:
    """(warps, stages) for triton.compile."""
    return spec.tile[1], 1


def candidates(spec: RowSpec, sms: int) -> list[tuple[int, ...]]:
    """Tiles `braze tune` measures: the cost model's first, then 1-8 rows a program with 2-16
    warps (blocks of 512 to 16,384 elements)."""
    first = choose_tile(spec, sms)
    bc = block(spec.cols)
    rest = [(br, w) for br in (1, 2, 4, 8) for w in (2, 4, 8, 16)
            if 512 <= br * bc <= 16384 and br <= max(1, spec.rows) and 64 <= br * bc // w <= 1024]
    return [first] + [t for t in rest if t != first]
