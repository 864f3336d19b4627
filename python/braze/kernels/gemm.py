"""braze's GEMM template: a Triton kernel per GemmSpec, compiled on a machine with no GPU.

The kernel computes one [BM, BN] tile of C = epilogue(A @ B) per program: A [M, K] row-major,
B [N, K] (a Linear's weight, K-major) or [K, N], fp32 accumulation (`tl.dot`, wgmma on sm_90),
then the spec's epilogue on the accumulator tile, then one store. Programs are ordered in
groups of GROUP_M row tiles so that neighbouring programs share B's columns in L2.

Its parameters are what IREE's CUDA HAL passes an external executable: the bindings in
dispatch order (A, B, the epilogue inputs, C) as device pointers; the shapes are compile-time
constants (braze compiles static shapes), and the two scratch pointers Triton appends are fed by
two dummy 32-bit push constants (braze.compiler.kernel_embed).

Split K (a tile's sixth entry, S > 1): where the output has too few tiles to fill the SMs and K
is long, S programs share a tile, each summing 1/S of the K loop. Each stores its partial
product to a workspace and counts itself in (an atomic on the tile's counter); the last to
arrive adds the S partials in split order (the sum is the same whichever program is last) and
runs the epilogue and the store. The workspace [tiles, S, BM, BN] f32 and the counters [tiles]
i32 are two more bindings (`split_buffers`): the counters come in zeroed by a fill in IREE's
program and are tied to a result, so IREE knows the kernel writes them.

The generated source is a Python file (Triton's JIT reads a function's source from its file),
written once per kernel into the kernel cache next to its PTX (braze.kernels.cache).
"""

from __future__ import annotations

import dataclasses
import math
import struct
import textwrap

from braze.kernels.spec import GemmSpec

TL_TYPES = {"f32": "tl.float32", "bf16": "tl.bfloat16", "f16": "tl.float16"}
TRITON_TYPES = {"f32": "fp32", "bf16": "bf16", "f16": "fp16"}
GROUP_M = 8

TF32_ROUNDING = '''

@triton.jit
def _tf32(x):
    """float32 to TF32, rounded to nearest (ties away from zero), as cvt.rna.tf32.f32 and cuBLAS
    do. tl.dot(input_precision="tf32") hands the float32 bits to wgmma, which drops the low 13
    bits: truncation, a bias of half a TF32 ulp per operand that compounds layer after layer
    (a ResNet-50-class network 4.7x cuDNN's error, bench/NOTES.md §42)."""
    bits = x.to(tl.int32, bitcast=True)
    rounded = ((bits + 0x1000) & -8192).to(tl.float32, bitcast=True)
    return tl.where(x == x, rounded, x)
'''
"""The source of `_tf32`, in every kernel whose float32 operands go to tensor cores as one TF32
product (spec precision 'tf32'): integer operations, so that Triton's interpreter runs it too."""


def dot(a: str, b: str, acc: str, precision: str) -> str:
    """The text of `acc += a @ b` in a kernel of that precision ('tf32x3': three TF32 products,
    float32-accurate; 'tf32': one, its operands rounded to nearest first; '': 16-bit operands)."""
    if precision == "tf32":
        return f'tl.dot(_tf32({a}), _tf32({b}), {acc}, input_precision="tf32")'
    if precision:
        return f'tl.dot({a}, {b}, {acc}, input_precision="{precision}")'
    return f"tl.dot({a}, {b}, {acc})"


def rounding_source(precision: str) -> str:
    """What a kernel of that precision needs beside its own functions."""
    return TF32_ROUNDING if precision == "tf32" else ""

_BINARY = {"addf": "({0} + {1})", "subf": "({0} - {1})", "mulf": "({0} * {1})", "divf": "({0} / {1})",
           "maximumf": "tl.maximum({0}, {1})", "minimumf": "tl.minimum({0}, {1})",
           "maxnumf": "tl.maximum({0}, {1})", "minnumf": "tl.minimum({0}, {1})",
           "powf": "libdevice.pow({0}, {1})"}
_UNARY = {"negf": "(-{0})", "exp": "tl.exp({0})", "exp2": "tl.exp2({0})", "log": "tl.log({0})",
          "erf": "tl.erf({0})", "tanh": "libdevice.tanh({0})", "sqrt": "tl.sqrt_rn({0})",
          "rsqrt": "(1.0 / tl.sqrt_rn({0}))", "absf": "tl.abs({0})", "extf": "{0}", "truncf": "{0}"}
_CMP = {1: "==", 2: ">", 3: ">=", 4: "<", 5: "<=", 6: "!=", 8: "==", 9: ">", 10: ">=", 11: "<", 12: "<=",
        13: "!="}
"""arith.cmpf predicates (ordered and unordered alike: NaN inputs are the user's problem here
as in a fused IREE kernel) to Python operators."""

EPILOGUE_OPS = frozenset(_BINARY) | frozenset(_UNARY) | {"cmpf", "select"}
"""The arith/math op names (without dialect) an epilogue may hold."""


_FOLD = {"addf": lambda a, b: a + b, "subf": lambda a, b: a - b, "mulf": lambda a, b: a * b,
         "divf": lambda a, b: a / b if b else math.copysign(math.inf, a) if a else math.nan,
         "maximumf": max, "minimumf": min, "maxnumf": max, "minnumf": min,
         "negf": lambda a: -a, "absf": abs, "exp": math.exp, "exp2": lambda a: 2.0 ** a, "log": math.log,
         "erf": math.erf, "tanh": math.tanh, "sqrt": math.sqrt, "rsqrt": lambda a: 1.0 / math.sqrt(a),
         "extf": lambda a: a, "truncf": lambda a: a, "powf": lambda a, b: a ** b}


def round_to(value: float, ty: str) -> float:
    """`value` rounded to the nearest `ty` (f32, bf16 or f16), ties to even."""
    if ty == "f16":
        return struct.unpack("<e", struct.pack("<e", value))[0]
    bits = struct.unpack("<I", struct.pack("<f", value))[0]
    if ty == "bf16" and math.isfinite(value):
        bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return struct.unpack("<f", struct.pack("<I", bits))[0]


def _fold(op: str, args: list, ty: str) -> float | None:
    """The value of an op whose operands are all numbers (a GELU's sqrt(2)), or None."""
    if op not in _FOLD or not all(isinstance(a, (int, float)) for a in args):
        return None
    try:
        return round_to(float(_FOLD[op](*[float(a) for a in args])), ty)
    except (ValueError, OverflowError, ZeroDivisionError):
        return None


def _operand(x, loaded: dict) -> str:
    if isinstance(x, (int, float)):
        if isinstance(x, float) and not math.isfinite(x):
            return {math.inf: "float('inf')", -math.inf: "float('-inf')"}.get(x, "float('nan')")
        return repr(float(x))
    return loaded.get(x, x.replace("%", "t"))


def op_expression(op: str, a: list[str], extra, where: str) -> str:
    """The Triton expression of an epilogue op (EPILOGUE_OPS) on operand texts `a`; `extra` is
    a cmpf's predicate; ValueError naming `where` for an op or predicate it has none for."""
    if op in _BINARY:
        return _BINARY[op].format(*a)
    if op in _UNARY:
        return _UNARY[op].format(*a)
    if op == "cmpf":
        if extra not in _CMP:
            raise ValueError(f"cmpf predicate {extra} is not supported in {where}")
        return f"({a[0]} {_CMP[extra]} {a[1]})"
    if op == "select":
        return f"tl.where({a[0]}, {a[1]}, {a[2]})"
    raise ValueError(f"'{op}' is not an op {where} supports")


def epilogue_lines(spec: GemmSpec, transposed: bool = False) -> list[str]:
    """Triton statements computing the spec's epilogue on `acc` ([BM, BN], f32; [BN, BM] when
    `transposed`); the result is left in `out`."""
    lines = []
    loaded = {}
    along_n, along_m = ("[:, None]", "[None, :]") if transposed else ("[None, :]", "[:, None]")
    for i, inp in enumerate(spec.inputs):
        ptr = f"e{i}_ptr + batch_id * {_input_batch_stride(spec, i)}"
        if inp.access == "full":
            load = f"tl.load(e{i}_ptr + c_offs, mask=mask_mn)"
        elif inp.access == "row":
            load = f"tl.load({ptr} + rn, mask=rn < {spec.n}){along_n}"
        elif inp.access == "col":
            load = f"tl.load({ptr} + rm, mask=rm < {m_text(spec)}){along_m}"
        else:
            load = f"tl.load({ptr})"
        lines.append(f"in{i} = {load}.to(tl.float32)")
        loaded[f"in{i}"] = f"in{i}"
    folded: dict = {}
    for dst, op, args, ty, extra in spec.ops:
        args = [folded.get(x, x) if isinstance(x, str) else x for x in args]
        value = _fold(op, args, ty)
        if value is not None:
            folded[dst] = value
            continue
        expr = op_expression(op, [_operand(x, loaded) for x in args], extra, "a generated epilogue")
        name = dst.replace("%", "t")
        if ty in ("bf16", "f16"):
            expr = f"({expr}).to({TL_TYPES[ty]}).to(tl.float32)"
        lines.append(f"{name} = {expr}")
    result = folded.get(spec.result, spec.result)
    shape = "(BN, BM)" if transposed else "(BM, BN)"
    lines.append(f"out = {_operand(result, loaded)} + tl.zeros({shape}, dtype=tl.float32)")
    return lines


def m_text(spec: GemmSpec) -> str:
    """M in a kernel's source: the number, or the argument `M` where it is known per call."""
    return "M" if spec.dynamic_m else str(spec.m)


def _input_batch_stride(spec: GemmSpec, i: int) -> int:
    if spec.groups > 1:  # a group's output channels start at group * n ('full' inputs read at c_offs)
        return spec.n if spec.inputs[i].access == "row" else 0
    if not spec.batch:
        return 0
    return {"full": spec.m * spec.n, "row": spec.n, "col": spec.m, "scalar": 1}[spec.inputs[i].access]


def kernel_name(spec: GemmSpec) -> str:
    return f"braze_gemm_{spec.key()}"


def split(spec: GemmSpec) -> int:
    """How many programs share an output tile's K loop (1: no split)."""
    return spec.tile[5] if len(spec.tile) > 5 else 1


def tma(spec: GemmSpec) -> bool:
    """Whether A and B are read through TMA descriptors (a tile's seventh entry, 1): the
    descriptors are made on the device, in a global scratch buffer Triton asks for, which braze
    binds after the kernel's own buffers (braze.compiler.kernel_embed)."""
    return len(spec.tile) > 6 and spec.tile[6] == 1


def tiles(spec: GemmSpec) -> int:
    """Output tiles over all batches (one counter each when K is split)."""
    bm, bn = spec.tile[0], spec.tile[1]
    return -(-spec.m // bm) * -(-spec.n // bn) * spec.grid_y()


def stream_k(spec: GemmSpec) -> int:
    """Persistent programs of a stream-K or data-parallel persistent kernel (a tile's eighth
    entry without split K; 0: neither)."""
    return spec.tile[7] if len(spec.tile) > 7 and split(spec) == 1 else 0


def whole_tiles(spec: GemmSpec) -> int:
    """With split K, how many output tiles (the first, in the grouped order) are computed whole
    by one program each, the rest split (the eighth entry; 0: every tile split). One wave of
    whole tiles plus the tail split: 192 tiles on 132 SMs as 132 whole and 60 in halves."""
    return spec.tile[7] if len(spec.tile) > 7 and split(spec) > 1 else 0


def split_buffers(spec: GemmSpec) -> tuple[int, int] | None:
    """(counters, workspace elements) of a split-K or stream-K kernel, None for neither."""
    if persistent(spec):
        return None
    if stream_k(spec):  # two partial tiles a program at most: the head of one, the tail of another
        return tiles(spec), stream_k(spec) * 2 * spec.tile[0] * spec.tile[1]
    s = split(spec)
    if s == 1:
        return None
    return tiles(spec), tiles(spec) * s * spec.tile[0] * spec.tile[1]


def chunks(bn: int) -> tuple[int, ...]:
    """A tile's columns as the dots that compute them side by side: BN's powers of 2, widest
    first (96 -> 64 + 32). Triton's blocks are powers of 2; wgmma's N need not be, and a 96-wide
    tile is what fills 132 SMs in one wave at N = 768 (bench/NOTES.md §35)."""
    return tuple(1 << b for b in reversed(range(bn.bit_length())) if bn >> b & 1)


def source(spec: GemmSpec) -> str:
    """The Python source of the spec's Triton kernel (tile constants are parameters)."""
    if spec.depthwise:
        return _depthwise_source(spec)
    if persistent(spec):
        return _persistent_source(spec)
    if stream_k(spec):
        return _stream_k_source(spec)
    n, k = spec.n, spec.k
    m = m_text(spec)  # the number, or the argument M (the batch terms below are 0 then: no batch)
    s = split(spec)
    e_params = "".join(f"e{i}_ptr, " for i in range(len(spec.inputs)))
    widths = chunks(spec.tile[1])
    # one dot: rn, b_ptrs, acc; several: rn0, rn1, ... (each chunk's columns start at its offset)
    parts = [("" if len(widths) == 1 else str(j), sum(widths[:j]), w) for j, w in enumerate(widths)]
    if tma(spec):
        a_setup, a_load, b_desc, b_load = _tma_parts(spec)
        c_offs = f"batch_id * {spec.m * n} + rm[:, None] * {n} + rn[None, :]"
    elif spec.conv and spec.nhwc and not pointwise(spec):
        a_setup, a_load, c_offs = _conv_nhwc_parts(spec)
    elif spec.conv and not spec.nhwc:
        a_setup, a_load, c_offs = _conv_parts(spec)
    else:  # a matmul, or an NHWC 1x1 convolution of stride 1 without padding: A is [N*H*W, C] as it is
        a_setup = f"    a_ptrs = a_ptr + batch_id * {spec.m * k} + rm[:, None] * {k} + (k0 + rk)[None, :]"
        a_load = (f"        a = tl.load(a_ptrs, mask=(rm[:, None] < {m}) & (rk[None, :] < k_left), other=0.0)\n"
                  "        a_ptrs += BK")
        c_offs = f"batch_id * {spec.m * n} + rm[:, None] * {n} + rn[None, :]"
    columns, b_setup, dots = [], [], []
    for c, off, w in parts:
        width = "BN" if len(widths) == 1 else str(w)
        columns.append(f"    rn{c} = pid_n * BN + {f'{off} + ' if off else ''}tl.arange(0, {width})")
        if tma(spec):
            b_setup.append(f"    b_desc = {b_desc}")
            dots.append(f"{b_load}\n        acc = {dot('a', 'b', 'acc', spec.precision)}")
        else:
            if spec.b_layout == "nk":
                at, step = f"rn{c}[None, :] * {k} + (k0 + rk)[:, None]", "BK"
            else:
                at, step = f"(k0 + rk)[:, None] * {n} + rn{c}[None, :]", f"BK * {n}"
            b_setup.append(f"    b_ptrs{c} = b_ptr + batch_id * {n * k} + {at}")
            dots.append(f"        b{c} = tl.load(b_ptrs{c}, mask=(rn{c}[None, :] < {n}) & (rk[:, None] < k_left), other=0.0)\n"
                        f"        b_ptrs{c} += {step}\n"
                        f"        acc{c} = {dot('a', f'b{c}', f'acc{c}', spec.precision)}")
        b_setup.append(f"    acc{c} = tl.zeros((BM, {width}), dtype=tl.float32)")
    m_arg = "M, " if spec.dynamic_m else ""
    finish = [f"_epilogue(acc{c}, rm, rn{c}, batch_id, {e_params}c_ptr, {m_arg}BM, {w})" for c, _, w in parts]
    if s == 1:
        params, split_setup, steps = "c_ptr, M" if spec.dynamic_m else "c_ptr", "    k0 = 0", f"({k} + BK - 1) // BK"
        tail = textwrap.indent("\n".join(finish), " " * 4)
    else:
        params = "cnt_ptr, c_ptr, ws_ptr"
        w = whole_tiles(spec)
        if w:
            split_setup = (f"    prog = tl.program_id(0)\n"
                           f"    whole = prog < {w}\n"
                           f"    pid = tl.where(whole, prog, {w} + (prog - {w}) // {s})\n"
                           f"    part = tl.where(whole, 0, (prog - {w}) % {s})\n"
                           f"    k0 = part * STEPS * BK")
            steps = f"tl.where(whole, ({k} + BK - 1) // BK, STEPS)"
        else:
            split_setup = (f"    part = tl.program_id(0) % {s}\n"
                           f"    pid = tl.program_id(0) // {s}\n"
                           f"    k0 = part * STEPS * BK")
            steps = "STEPS"
        # the workspace holds a tile's SPLIT partials [BM, BN] chunk by chunk: [SPLIT, BM, width] each
        stores, sums = [], []
        for (c, off, width), line in zip(parts, finish):
            stores += [f"ws{c} = ws_ptr + tile * (SPLIT * BM * BN) + {f'SPLIT * BM * {off} + ' if off else ''}"
                       f"tl.arange(0, BM)[:, None] * {width} + tl.arange(0, {width})[None, :]",
                       f"tl.store(ws{c} + part * (BM * {width}), acc{c})"]
            sums += [f'    acc{c} = tl.load(ws{c}, cache_modifier=".cg")',
                     "    for j in range(1, SPLIT):",
                     f'        acc{c} += tl.load(ws{c} + j * (BM * {width}), cache_modifier=".cg")',
                     f"    {line}"]
        tail = textwrap.indent("\n".join([
            "tile = batch_id * tiles_m * tiles_n + pid",
            *stores,
            "tl.debug_barrier()  # every thread's partial is written before the count says so",
            'arrived = tl.atomic_add(cnt_ptr + tile, 1, sem="acq_rel", scope="gpu")',
            "if arrived == SPLIT - 1:",
            "    tl.debug_barrier()",
            *sums]), " " * 4)
        if w:
            tail = textwrap.indent("\n".join(["if whole:", *("    " + line for line in finish), "else:"]), " " * 4) + \
                "\n" + textwrap.indent(tail, "    ")
    epilogue = "\n".join("    " + line for line in [
        f"mask_mn = (rm[:, None] < {m}) & (rn[None, :] < {n})", f"c_offs = {c_offs}", *epilogue_lines(spec),
        f"tl.store(c_ptr + c_offs, out.to({TL_TYPES[spec.out]}), mask=mask_mn)"])
    newline = "\n"
    return f'''\
# Generated by braze (braze.kernels.gemm) for: {spec.describe()}
import triton
import triton.language as tl
from triton.language.extra import libdevice
{rounding_source(spec.precision)}

@triton.jit
def _epilogue(acc, rm, rn, batch_id, {e_params}c_ptr, {m_arg}BM: tl.constexpr, BN: tl.constexpr):
    """The epilogue and the masked store of the [BM, BN] block of output at rm x rn."""
{epilogue}


@triton.jit
def {kernel_name(spec)}(a_ptr, b_ptr, {e_params}{params},
        BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP_M: tl.constexpr,
        SPLIT: tl.constexpr, STEPS: tl.constexpr):
    pid = tl.program_id(0)
    batch_id = tl.program_id(1)
{split_setup}
    tiles_m = ({m} + BM - 1) // BM
    tiles_n = ({n} + BN - 1) // BN
    in_group = GROUP_M * tiles_n
    first_m = (pid // in_group) * GROUP_M
    group_m = min(tiles_m - first_m, GROUP_M)
    pid_m = first_m + ((pid % in_group) % group_m)
    pid_n = (pid % in_group) // group_m
    rm = pid_m * BM + tl.arange(0, BM)
{newline.join(columns)}
    rk = tl.arange(0, BK)
{a_setup}
{newline.join(b_setup)}
    for kk in range(0, {steps}):
        k_left = {k} - k0 - kk * BK
{a_load}
{newline.join(dots)}
{tail}
'''


def persistent(spec: GemmSpec) -> bool:
    """Whether the kernel is data-parallel persistent (a tile's ninth entry, 1): its eighth
    entry's P programs each loop over whole output tiles (tile p, p + P, ...) in one flattened
    loop with the K steps, so Triton pipelines across tile boundaries; with TMA (the seventh
    entry) each program makes its descriptors once."""
    return len(spec.tile) > 8 and spec.tile[8] == 1


def _header(spec: GemmSpec, params: str) -> str:
    """The kernel's imports and signature (the tile's constants are constexpr parameters)."""
    e_params = "".join(f"e{i}_ptr, " for i in range(len(spec.inputs)))
    return f'''\
# Generated by braze (braze.kernels.gemm) for: {spec.describe()}
import triton
import triton.language as tl
from triton.language.extra import libdevice
{rounding_source(spec.precision)}

@triton.jit
def {kernel_name(spec)}(a_ptr, b_ptr, {e_params}{params},
        BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP_M: tl.constexpr,
        SPLIT: tl.constexpr, STEPS: tl.constexpr):
'''


def _finish(spec: GemmSpec, indent: int) -> str:
    """The epilogue on `acc` and the masked store of the tile at rm x rn of a plain matmul."""
    lines = [f"mask_mn = (rm[:, None] < {spec.m}) & (rn[None, :] < {spec.n})",
             f"c_offs = rm[:, None] * {spec.n} + rn[None, :]",
             *epilogue_lines(spec), f"tl.store(c_ptr + c_offs, out.to({TL_TYPES[spec.out]}), mask=mask_mn)"]
    return textwrap.indent("\n".join(lines), " " * indent)


def _tile_of(tile: str, indent: int) -> str:
    """rm, rn of output tile number `tile` (GROUP_M row tiles a group, as `source` orders them)."""
    return textwrap.indent(textwrap.dedent(f"""\
        in_group = GROUP_M * tiles_n
        first_m = ({tile} // in_group) * GROUP_M
        group_m = tl.minimum(tiles_m - first_m, GROUP_M)
        pid_m = first_m + (({tile} % in_group) % group_m)
        pid_n = ({tile} % in_group) // group_m
        rm = pid_m * BM + tl.arange(0, BM)
        rn = pid_n * BN + tl.arange(0, BN)"""), " " * indent)


def _step_addresses(spec: GemmSpec) -> tuple[str, str]:
    """The addresses of A's and B's [BM, BK] and [BK, BN] tiles at K step `kk` of the tile at rm x rn."""
    k, n = spec.k, spec.n
    b_offs = (f"rn[None, :] * {k} + (kk * BK + rk)[:, None]" if spec.b_layout == "nk"
              else f"(kk * BK + rk)[:, None] * {n} + rn[None, :]")
    return f"a_ptr + rm[:, None] * {k} + (kk * BK + rk)[None, :]", f"b_ptr + {b_offs}"


def _step_loads(spec: GemmSpec, indent: int) -> str:
    """a, b of K step `kk` of the tile at rm x rn, addressed from kk alone (no pointer carried
    from one step to the next: a flattened loop restarts K at each tile)."""
    m, n, k = spec.m, spec.n, spec.k
    if tma(spec):
        a = "a = a_desc.load([pid_m * BM, kk * BK])"
        b = ("b = b_desc.load([pid_n * BN, kk * BK]).T" if spec.b_layout == "nk"
             else "b = b_desc.load([kk * BK, pid_n * BN])")
        return textwrap.indent(f"{a}\n{b}", " " * indent)
    a_at, b_at = _step_addresses(spec)
    return textwrap.indent(textwrap.dedent(f"""\
        k_left = {k} - kk * BK
        a = tl.load({a_at}, mask=(rm[:, None] < {m}) & (rk[None, :] < k_left), other=0.0)
        b = tl.load({b_at}, mask=(rn[None, :] < {n}) & (rk[:, None] < k_left), other=0.0)"""), " " * indent)


def _descriptors(spec: GemmSpec) -> str:
    if not tma(spec):
        return ""
    a_setup, _, b_setup, _ = _tma_parts(spec)
    return f"{a_setup}\n    b_desc = {b_setup}\n"


def _persistent_source(spec: GemmSpec) -> str:
    """Data-parallel persistent: P programs, program p computing output tiles p, p + P, ...,
    each whole (its K loop, the epilogue, the store), the tile loop and the K loop flattened
    into one pipelined loop by Triton (`tl.range(..., flatten=True)`)."""
    m, n = spec.m, spec.n
    return _header(spec, "c_ptr") + f'''\
    batch_id = 0
    tiles_m = ({m} + BM - 1) // BM
    tiles_n = ({n} + BN - 1) // BN
    rk = tl.arange(0, BK)
{_descriptors(spec)}    for tile in tl.range(tl.program_id(0), tiles_m * tiles_n, {stream_k(spec)}, flatten=True):
{_tile_of("tile", 8)}
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for kk in range(0, STEPS):
{_step_loads(spec, 12)}
            acc = {dot("a", "b", "acc", spec.precision)}
{_finish(spec, 8)}
'''


def _stream_k_loop(spec: GemmSpec, ks: int) -> str:
    """The head of stream-K's flat loop up to a, b of step kk of the tile at rm x rn. TMA loads
    take the tile's coordinates (scalars); cp.async loads carry their pointers from step to step
    and compute them afresh only where a new tile starts (computing [BM, BK] + [BK, BN] 64-bit
    addresses every step tripled the loop's instructions)."""
    if tma(spec):
        return textwrap.indent(textwrap.dedent(f"""\
            for it in tl.range(start, end):
                tile = it // {ks}
                kk = it % {ks}
            """), "    ") + _tile_of("tile", 8) + "\n" + _step_loads(spec, 8)
    m, n, k = spec.m, spec.n, spec.k
    b_step = "BK" if spec.b_layout == "nk" else f"BK * {n}"

    a_at, b_at = _step_addresses(spec)

    def pointers(indent: int) -> str:
        return textwrap.indent(f"a_ptrs = {a_at}\nb_ptrs = {b_at}", " " * indent)

    return (f"    tile = start // {ks}\n    kk = start % {ks}\n" + _tile_of("tile", 4) + "\n" + pointers(4) + "\n"
            f"    for it in tl.range(start, end):\n        tile = it // {ks}\n        kk = it % {ks}\n"
            f"        if (kk == 0) & (it > start):  # a new tile\n" + _tile_of("tile", 12) + "\n" + pointers(12) + "\n"
            + textwrap.indent(textwrap.dedent(f"""\
                k_left = {k} - kk * BK
                a = tl.load(a_ptrs, mask=(rm[:, None] < {m}) & (rk[None, :] < k_left), other=0.0)
                b = tl.load(b_ptrs, mask=(rn[None, :] < {n}) & (rk[:, None] < k_left), other=0.0)
                a_ptrs += BK
                b_ptrs += {b_step}"""), " " * 8))


def _stream_k_source(spec: GemmSpec) -> str:
    """Stream-K: P persistent programs share the tiles' K steps evenly (program p takes a
    contiguous run of the tiles x K-steps iteration space, one flat loop that Triton pipelines),
    so no SM idles in a last wave. A tile the program covers whole gets its epilogue in the
    loop; a tile split between programs (at most two a program: the first and the last of its
    run) gets a partial from each, stored in the loop (slot 2p + 1 for the part that starts at
    the tile's K step 0, 2p for the other). After the loop (a barrier there does not stop
    Triton pipelining the loop, one inside it does) each program counts itself in on its split
    tiles' counters; the last to arrive adds the partials in program order and runs the
    epilogue (as split K's fixup)."""
    m, n, k = spec.m, spec.n, spec.k
    bm, bn, bk, *_ = spec.tile
    programs = stream_k(spec)
    ks = -(-k // bk)
    total = -(-m // bm) * -(-n // bn) * ks
    per, extra = divmod(total, programs)
    sharers = -(-ks // max(per, 1)) + 1  # the most programs one tile's K steps can be spread over
    owner = (f"tl.where(ITER < {extra * (per + 1)}, ITER // {per + 1}, "
             f"{extra} + (ITER - {extra * (per + 1)}) // {max(per, 1)})")
    return _header(spec, "cnt_ptr, c_ptr, ws_ptr") + f'''\
    prog = tl.program_id(0)
    batch_id = 0
    tiles_m = ({m} + BM - 1) // BM
    tiles_n = ({n} + BN - 1) // BN
    start = prog * {per} + tl.minimum(prog, {extra})
    end = start + {per} + tl.where(prog < {extra}, 1, 0)
    rk = tl.arange(0, BK)
    ws_tile = tl.arange(0, BM)[:, None] * BN + tl.arange(0, BN)[None, :]
{_descriptors(spec)}    acc = tl.zeros((BM, BN), dtype=tl.float32)
{_stream_k_loop(spec, ks)}
        acc = {dot("a", "b", "acc", spec.precision)}
        if (kk == {ks - 1}) | (it == end - 1):
            k_first = tl.maximum(tile * {ks}, start) - tile * {ks}
            if (k_first == 0) & (kk == {ks - 1}):
{_finish(spec, 16)}
            else:
                tl.store(ws_ptr + (prog * 2 + tl.where(k_first == 0, 1, 0)) * (BM * BN) + ws_tile, acc)
            acc = tl.zeros((BM, BN), dtype=tl.float32)
    tl.debug_barrier()  # every thread's partials are written before a count says so
    first = start // {ks}
    last = (end - 1) // {ks}
    for which in tl.static_range(2):
        tile = first if which == 0 else last
        cut = (tile * {ks} < start) | ((tile + 1) * {ks} > end)
        if cut & ((which == 0) | (last != first)):
            ITER = tile * {ks}
            p0 = {owner}
            ITER = tile * {ks} + {ks - 1}
            p1 = {owner}
            arrived = tl.atomic_add(cnt_ptr + tile, 1, sem="acq_rel", scope="gpu")
            if arrived == p1 - p0:
                tl.debug_barrier()
                acc = tl.load(ws_ptr + (p0 * 2 + 1) * (BM * BN) + ws_tile, cache_modifier=".cg")
                for j in tl.static_range(1, {sharers}):
                    p = tl.minimum(p0 + j, p1)
                    acc += tl.load(ws_ptr + (p * 2) * (BM * BN) + ws_tile, mask=(ws_tile >= 0) & (p0 + j <= p1),
                                   other=0.0, cache_modifier=".cg")
{_tile_of("tile", 16)}
{_finish(spec, 16)}
'''


def _tma_parts(spec: GemmSpec) -> tuple[str, str, str, str]:
    """A and B through TMA descriptors (out-of-range rows and columns read as zeros, so no
    masks): (A setup, A load, B setup, B load) in the K loop of `source`."""
    m, n, k = spec.m, spec.n, spec.k
    setup = (f"    a_desc = tl.make_tensor_descriptor(a_ptr + batch_id * {m * k}, shape=[{m}, {k}], strides=[{k}, 1], "
             "block_shape=[BM, BK])")
    load = "        a = a_desc.load([pid_m * BM, k0 + kk * BK])"
    if spec.b_layout == "nk":
        b_setup = (f"tl.make_tensor_descriptor(b_ptr + batch_id * {n * k}, shape=[{n}, {k}], strides=[{k}, 1], "
                   "block_shape=[BN, BK])")
        b_load = "        b = b_desc.load([pid_n * BN, k0 + kk * BK]).T"
    else:
        b_setup = (f"tl.make_tensor_descriptor(b_ptr + batch_id * {n * k}, shape=[{k}, {n}], strides=[{n}, 1], "
                   "block_shape=[BK, BN])")
        b_load = "        b = b_desc.load([k0 + kk * BK, pid_n * BN])"
    return setup, load, b_setup, b_load


def _conv_parts(spec: GemmSpec) -> tuple[str, str, str]:
    """Implicit GEMM for a 2-D NCHW convolution: rows are output pixels (n, oh, ow), columns
    output channels, K runs over (c, kh, kw) as the weight [F, C, KH, KW] is laid out. Each
    K step gathers its A tile from the input (zero outside it: the padding), so there is no
    im2col copy; the result is stored as NCHW."""
    n_, c, h, w, kh, kw, sh, sw, dh, dw, pt, pl, oh, ow = spec.conv
    ohw = oh * ow
    group = f" + batch_id * {c // spec.groups * h * w}" if spec.groups > 1 else ""  # a group's first channel
    setup = f"""    img = rm // {ohw}
    pix = rm % {ohw}
    h0 = (pix // {ow}) * {sh} - {pt}
    w0 = (pix % {ow}) * {sw} - {pl}
    a_base = img * {c * h * w}{group}"""
    load = f"""        kidx = k0 + kk * BK + rk
        ch = kidx // {kh * kw}
        kr = kidx % {kh * kw}
        hh = h0[:, None] + (kr // {kw})[None, :] * {dh}
        ww = w0[:, None] + (kr % {kw})[None, :] * {dw}
        inside = (rm[:, None] < {spec.m}) & (kidx[None, :] < {spec.k}) & (hh >= 0) & (hh < {h}) & (ww >= 0) & (ww < {w})
        a = tl.load(a_ptr + a_base[:, None] + ch[None, :] * {h * w} + hh * {w} + ww, mask=inside, other=0.0)"""
    channel = f"(batch_id * {spec.n} + rn)" if spec.groups > 1 else "rn"
    offs = f"(rm // {ohw})[:, None] * {spec.n * spec.groups * ohw} + {channel}[None, :] * {ohw} + (rm % {ohw})[:, None]"
    return setup, load, offs


def pointwise(spec: GemmSpec) -> bool:
    """Whether an NHWC convolution is a plain GEMM: 1x1, stride 1, no padding, so that its
    input [N, H, W, C] is A [N*H*W, C] as it is."""
    n_, c, h, w, kh, kw, sh, sw, dh, dw, pt, pl, oh, ow = spec.conv
    return spec.nhwc and not spec.nchw_input and (kh, kw, sh, sw, pt, pl, oh, ow) == (1, 1, 1, 1, 0, 0, h, w)


def _conv_nhwc_parts(spec: GemmSpec) -> tuple[str, str, str]:
    """Implicit GEMM for a 2-D NHWC convolution: rows are output pixels (n, oh, ow), columns
    output channels, K runs over (kh, kw, c) as the weight [F, KH, KW, C] is laid out. Where BK
    divides C, a K step is one filter tap and BK consecutive channels: each row of the A tile
    is a contiguous run (16-byte vector loads, masked per row: zero outside the input, the
    padding); else each element is gathered (the 3-channel stem), from an NCHW input where the
    spec says so (nchw_input). The result is [M, F]."""
    n_, c, h, w, kh, kw, sh, sw, dh, dw, pt, pl, oh, ow = spec.conv
    ohw = oh * ow
    setup = f"""    img = rm // {ohw}
    pix = rm % {ohw}
    h0 = (pix // {ow}) * {sh} - {pt}
    w0 = (pix % {ow}) * {sw} - {pl}
    a_base = img * {h * w * c}
    in_m = rm < {spec.m}"""
    bk = spec.tile[2] if spec.tile else 0
    if bk and c % bk == 0 and c % 16 == 0 and not spec.nchw_input:
        load = f"""        kb = k0 + kk * BK
        tap = kb // {c}
        hh = h0 + (tap // {kw}) * {dh}
        ww = w0 + (tap % {kw}) * {dw}
        inside = in_m & (hh >= 0) & (hh < {h}) & (ww >= 0) & (ww < {w}) & (kb < {spec.k})
        row = tl.multiple_of(a_base + (hh * {w} + ww) * {c} + kb % {c}, 16)
        a = tl.load(a_ptr + row[:, None] + rk[None, :], mask=inside[:, None], other=0.0)"""
    else:
        at = (f"(kidx % {c})[None, :] * {h * w} + hh * {w} + ww" if spec.nchw_input
              else f"(hh * {w} + ww) * {c} + (kidx % {c})[None, :]")
        load = f"""        kidx = k0 + kk * BK + rk
        tap = kidx // {c}
        hh = h0[:, None] + (tap // {kw})[None, :] * {dh}
        ww = w0[:, None] + (tap % {kw})[None, :] * {dw}
        inside = in_m[:, None] & (kidx[None, :] < {spec.k}) & (hh >= 0) & (hh < {h}) & (ww >= 0) & (ww < {w})
        a = tl.load(a_ptr + a_base[:, None] + {at}, mask=inside, other=0.0)"""
    return setup, load, f"rm[:, None] * {spec.n} + rn[None, :]"


def _depthwise_source(spec: GemmSpec) -> str:
    """A depthwise NCHW convolution, direct: a program per [BN channels, BM output pixels] tile
    (pixels along the tile's fast dimension, so a warp's loads and stores are runs of one
    channel's row), each of the KH*KW taps a gathered load times the channel's weight, summed
    in f32; then the epilogue and an NCHW store."""
    n_, c, h, w, kh, kw, sh, sw, dh, dw, pt, pl, oh, ow = spec.conv
    ohw = oh * ow
    e_params = "".join(f"e{i}_ptr, " for i in range(len(spec.inputs)))
    finish = "\n".join("    " + line for line in epilogue_lines(spec, transposed=True))
    return f'''\
# Generated by braze (braze.kernels.gemm) for: {spec.describe()}
import triton
import triton.language as tl
from triton.language.extra import libdevice


@triton.jit
def {kernel_name(spec)}(a_ptr, b_ptr, {e_params}c_ptr,
        BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP_M: tl.constexpr,
        SPLIT: tl.constexpr, STEPS: tl.constexpr):
    pid = tl.program_id(0)
    batch_id = tl.program_id(1)
    tiles_n = ({c} + BN - 1) // BN
    rm = (pid // tiles_n) * BM + tl.arange(0, BM)
    rn = (pid % tiles_n) * BN + tl.arange(0, BN)
    img = rm // {ohw}
    pix = rm % {ohw}
    h0 = (pix // {ow}) * {sh} - {pt}
    w0 = (pix % {ow}) * {sw} - {pl}
    in_m = rm < {spec.m}
    in_n = rn < {c}
    base = rn[:, None] * {h * w} + (img * {c * h * w})[None, :]
    acc = tl.zeros((BN, BM), dtype=tl.float32)
    for r in range({kh}):  # filter rows in a loop, columns unrolled: 7x7 filters unrolled whole spilled
        hh = h0 + r * {dh}
        row_in = in_m & (hh >= 0) & (hh < {h})
        for q in tl.static_range({kw}):
            ww = w0 + q * {dw}
            inside = row_in & (ww >= 0) & (ww < {w})
            x = tl.load(a_ptr + base + (hh * {w} + ww)[None, :], mask=in_n[:, None] & inside[None, :], other=0.0)
            wt = tl.load(b_ptr + rn * {kh * kw} + r * {kw} + q, mask=in_n, other=0.0)
            acc += x.to(tl.float32) * wt.to(tl.float32)[:, None]
    mask_mn = in_n[:, None] & in_m[None, :]
    c_offs = rn[:, None] * {ohw} + (img * {c * ohw} + pix)[None, :]
{finish}
    tl.store(c_ptr + c_offs, out.to({TL_TYPES[spec.out]}), mask=mask_mn)
'''


# -- the cost model --------------------------------------------------------------------------

CONV_TILES = (
    # (BM, BN, BK, warps, stages, relative efficiency of a full tile)
    (128, 256, 64, 8, 3, 1.00),
    (128, 128, 64, 8, 4, 0.92),
    (128, 64, 64, 4, 4, 0.78),
    (64, 128, 64, 4, 4, 0.74),
    (64, 64, 64, 4, 4, 0.55),
)
"""Tiles for implicit-GEMM convolutions, whose A tile is gathered (no wide vector loads): the
first cost model's (waves of programs over the SMs, each as long as its tile over a predicted
efficiency), with which ResNet-18 ran in 1.215 ms; the Linear-measured tiles below made its
strided 3x3 convolutions 2x slower (bench/NOTES.md §18)."""
TILE_16_LARGE = (128, 256, 64, 8, 3)
"""Where it makes 2 waves; as a persistent kernel with TMA loads where the spec takes one
(`_persistent_tma`)."""
TILE_16 = (64, 64, 64, 4, 4)
TILE_16_WIDE = (64, 96, 64, 4, 5)
"""64 + 32 columns (two dots): where 64x64 tiles make a second, partial wave and 96-wide ones
fit in fewer, as 1024x768 (BERT's FFN down and attention output) makes 192 tiles of 64x64 on
132 SMs but 128 of 64x96, one wave (cuBLAS's own tile there is 96x64). Measured (bench/NOTES.md
§35, one kernel with CUDA-graph launches beside cuBLAS's, two GPU runs): 1024x768x3072 14.2 ->
11.7-12.1 µs (0.64-0.74x -> 0.78-0.87x cuBLAS), 1024x768x768 5.6 -> 5.0-5.4 (0.88-0.90x ->
0.92-0.99x). A 64x96 program does 1.5 tiles' work in 1.64-1.70x a 64x64 one's time."""
TILES_16 = ((64, 64, 64, 4, 4, 1.0), TILE_16_WIDE + (0.9,))
"""The two plain 16-bit tiles the cost model weighs by waves (see TILE_16_WIDE)."""
TILES_TF32X3 = (
    # (BM, BN, BK, warps, stages, relative efficiency of a full tile)
    (128, 64, 32, 8, 3, 0.9),
    (64, 64, 32, 4, 4, 1.0),
    (64, 32, 32, 4, 4, 0.8),
)
TILE_TF32_HUGE = (128, 256, 32, 8, 4)
"""TF32 where 128x256 tiles make two waves: 4096x4096x1024 110.3 µs against cuBLAS TF32's 94.5
(128x128: 123.1; bench/results/splitk-tiles-ncu-cuda-2026-12-02.txt)."""
TILE_TF32_LARGE = (128, 128, 32, 8, 3)
TILE_TF32 = (128, 64, 32, 4, 3)
"""The tiles the cost model picks from, measured on the H200 (bench/NOTES.md §18: ncu kernel
times of 8 tiles a shape at the bench's Linear shapes, bench/experiments/kernel_tiles.py).
16-bit: 128x256 where its grid fills two waves (a 4096x4096 GEMM: 57 µs against 96 for
64x64), else 64x64 (best or within 2% at every bench shape: more programs beat bigger tiles
when there are fewer than 2 waves of big ones), 64x32 where 64x64 leaves SMs idle (64x64 with K split
where K >= 2048: SPLIT_MIN_K), and 128-deep K steps for K >= 2048 (1024x768x3072: 15.7 µs
against 16.1). float32 as 3xTF32 is compute-bound: waves of
programs over the SMs, each as long as its tile over its efficiency (the efficiencies fitted to
the measurement, which they reproduce at all 6 shapes). TF32: 128x256 where it fills 2 waves, else 128x128 where that fills 4."""


def _programs(spec: GemmSpec, bm: int, bn: int) -> int:
    return -(-spec.m // bm) * -(-spec.n // bn) * spec.grid_y()


def _cheapest(spec: GemmSpec, sms: int, tiles) -> tuple[int, int, int, int, int]:
    """The tile of `tiles` with the least predicted time: waves of programs over the SMs, each
    as long as its tile's work over its efficiency."""
    costs = [(-(-_programs(spec, bm, bn) // sms) * bm * bn / eff, i) for i, (bm, bn, *_, eff) in enumerate(tiles)]
    return tiles[min(costs)[1]][:5]


SPLIT_MIN_K = 2048
SPLIT_MIN_PART = 512
"""Split K (bench/NOTES.md §26, ncu on the H200): where a spec's tiles leave SMs idle and its K
loop is long, 64x64 tiles with the K loop split into the fewest of 2, 4, 8 parts that make
1.5 waves of programs, each part at least 512 deep. Measured: 256x1024x4096 bf16 15.8 -> 11.9
µs (cuBLAS 11.1), the 256-channel 3x3 bf16 convolution on 8x14x14 54.0 -> 32.5 µs (cuDNN's op
37.2); 1024x768x3072 (192 tiles of 64x64) is slower split in every way tried, and is not split.
Bigger tiles split further lost: the last program of a tile adds S partials of BM x BN alone."""


def _split(spec: GemmSpec, sms: int, bm: int, bn: int) -> int:
    """The K split for a spec at a tile of bm x bn (1: none)."""
    programs = _programs(spec, bm, bn)
    if programs >= sms or spec.k < SPLIT_MIN_K:
        return 1
    best = 1
    for s in (2, 4, 8):
        if spec.k // s < SPLIT_MIN_PART:
            break
        best = s
        if 2 * programs * s >= 3 * sms:
            break
    return best


GEMV_MAX_M = 16
GEMV_TILE = (16, 16, 256, 4, 4)
GEMV_SPLIT_TILE = (16, 32, 128, 4, 4)
GEMV_SPLIT_MIN_K = 4096
"""A matmul of at most 16 rows (a decode step's projections at batch 1-16) streams its weight
once: its time is the weight's bytes over the bandwidth the programs keep in flight. 16 rows
(the least a dot takes), 16 columns and 256-deep K steps four stages deep, one program per 16
columns: q/k/v 1x2048x1536 bf16 9.18 -> 6.98 us, o 1x1536x1536 8.78 -> 6.58 (cuBLAS 7.37 and
6.44) against the 64x32 tiles before; a K of 4096 and more (the MLP's down projection) split 4
ways (2, 4 or 8: the fewest that make 0.8 of a wave) at 16x32x128 where 16x32 tiles leave SMs
idle: 1x1536x8960 15.42 -> 14.13 us (cuBLAS's split K 16.82), 1x896x4864 8.82 ->
8.21 (10.81). Wide N (gate/up 1x17920x1536: 280 programs of 64x64) keeps the tiles it had:
the best narrow tile was within 2% of them (21.86 against 22.10 us), 16x16 8% slower (ncu on an
H100, bench/experiments/kernel_tiles.py, NOTES §53)."""


def _gemv_tile(spec: GemmSpec, sms: int) -> tuple[int, ...]:
    programs = _programs(spec, 16, 32)
    if spec.k < GEMV_SPLIT_MIN_K or programs >= sms:
        return GEMV_TILE
    split = next((s for s in (2, 4, 8) if 5 * programs * s >= 4 * sms or spec.k // (2 * s) < SPLIT_MIN_PART),
                 8)
    return GEMV_SPLIT_TILE + (split,)


def _conv_tile(spec: GemmSpec, sms: int) -> tuple[int, ...]:
    tiles = [t for t in CONV_TILES if spec.a != "f32" or t[1] <= 128]
    bm, bn, bk, warps, stages = _cheapest(spec, sms, tiles)
    if spec.groups > 1:  # a group's GEMM is narrow (ResNeXt's: 4 output channels): no wider tile than it
        bn = min(bn, max(16, 1 << (spec.n - 1).bit_length()))
    if spec.a == "f32" and bm * bn > 128 * 16:  # 32-bit operands take twice the shared memory per stage
        bk, stages = 32, 3
    elif spec.a == "f32":  # a narrow tile has the room; ResNeXt's 8x128x56 with 32 groups: 31.6 µs at
        stages = 3         # BK 64 against 114 at 32 (bench/results/gconv-*-cuda-2026-12-02.txt)
    split = _split(spec, sms, bm, bn)
    if split > 1:
        bm, bn = 64, min(bn, 64)
        split = _split(spec, sms, bm, bn)
    return bm, bn, min(bk, max(16, 1 << (spec.k - 1).bit_length())), warps, stages, *((split,) if split > 1 else ())


DEPTHWISE_TILE = (256, 4, 16, 4, 1)
"""(pixels, channels, -, warps, stages) of the depthwise template: long runs of one channel's
pixels a program. Measured (ncu, H200, bench/results/dw-tiles-ncu-cuda-2026-12-02-loop.txt, 8
tiles at 4 MobileNetV2/ConvNeXt shapes): the fastest at three, 11% behind 64x32 at the fourth;
2.2-2.8x torch's depthwise, BatchNorm and ReLU kernels at all four."""


def _persistent_tma(spec: GemmSpec, tile: tuple[int, ...], sms: int) -> tuple[int, ...]:
    """`tile` as a data-parallel persistent kernel over `sms` programs with TMA loads, where
    the spec takes one (a plain matmul whose rows are multiples of 16 bytes), else `tile`.
    Measured (bench/NOTES.md §27): bf16 4096x4096x1024 at 128x256x64, 3 stages, 53.3 µs against
    56.3 non-persistent with cp.async and cuBLAS's 49.6 (0.93x against 0.88x)."""
    candidate = (*tile[:5], 1, 1, sms, 1)
    try:
        dataclasses.replace(spec, tile=candidate).check()
    except ValueError:
        return tile
    return candidate


def choose_tile(spec: GemmSpec, sms: int) -> tuple[int, ...]:
    """The tile for a spec on a GPU of `sms` SMs (see TILES_TF32X3's and SPLIT_MIN_K's notes
    for the evidence)."""
    if spec.dynamic_m:
        return _dynamic_tile(spec, sms)
    if spec.depthwise:
        return DEPTHWISE_TILE
    if spec.conv:
        return _conv_tile(spec, sms)
    if spec.precision == "tf32x3":
        tile = _cheapest(spec, sms, TILES_TF32X3)
    elif spec.precision == "tf32":
        if _programs(spec, 128, 256) >= 2 * sms:
            tile = TILE_TF32_HUGE
        else:
            tile = TILE_TF32_LARGE if _programs(spec, 128, 128) >= 4 * sms else TILE_TF32
    elif spec.m <= GEMV_MAX_M and not spec.batch and _programs(spec, 64, 64) < sms:
        tile = _gemv_tile(spec, sms)
    elif _programs(spec, 128, 256) >= 2 * sms:
        tile = _persistent_tma(spec, TILE_16_LARGE, sms)
    elif _split(spec, sms, 64, 64) > 1:
        tile = TILE_16 + (_split(spec, sms, 64, 64),)
    elif _programs(spec, 64, 64) < sms:  # more programs where 64x64 would leave SMs idle
        tile = (64, 32, 128, 4, 3) if spec.k >= 2048 else (64, 32, 64, 4, 4)
    elif _cheapest(spec, sms, TILES_16) == TILE_16_WIDE:
        tile = TILE_16_WIDE
    else:  # longer K steps for long K loops
        tile = (64, 64, 128, 4, 3) if spec.k >= 2048 else (64, 64, 64, 4, 4)
    bm, bn, bk, warps, stages, *rest = tile
    bk = min(bk, max(16, 1 << (spec.k - 1).bit_length()))  # no K tile longer than K itself
    return (bm, bn, bk, warps, stages, *rest)


DYNAMIC_M = 1024
"""The M a kernel whose M is known per call is tiled for (spec.m): 8 of BERT's 128-token
sequences. Its tile is a plain one (the grid follows M; split K and persistent programs are
chosen for one M): for 16-bit operands the 64x64 tiles that were best or within 2% at every
bench shape that fills the GPU (§18), for float32 the cost model's at M = DYNAMIC_M."""


def _dynamic_tile(spec: GemmSpec, sms: int) -> tuple[int, ...]:
    if spec.precision:
        tile = choose_tile(dataclasses.replace(spec, dynamic_m=False), sms)[:5]
    else:
        tile = (64, 64, 128, 4, 3) if spec.k >= 2048 else (64, 64, 64, 4, 4)
    bm, bn, bk, warps, stages = tile
    return (bm, bn, min(bk, max(16, 1 << (spec.k - 1).bit_length())), warps, stages)


def tiles_n(spec: GemmSpec) -> int:
    """Output tiles along N (a kernel with M per call: its grid is ceil(M / BM) times this)."""
    return -(-spec.n // spec.tile[1])


def grid(spec: GemmSpec) -> tuple[int, int, int]:
    bm, bn = spec.tile[0], spec.tile[1]
    if stream_k(spec):
        return (stream_k(spec), 1, 1)
    per_y = -(-spec.m // bm) * -(-spec.n // bn)
    w = min(whole_tiles(spec), per_y)
    return (w + (per_y - w) * split(spec), spec.grid_y(), 1)


def signature(spec: GemmSpec) -> dict[str, str]:
    sig = {"a_ptr": "*" + TRITON_TYPES[spec.a], "b_ptr": "*" + TRITON_TYPES[spec.b]}
    for i, inp in enumerate(spec.inputs):
        sig[f"e{i}_ptr"] = "*" + TRITON_TYPES[inp.dtype]
    if split_buffers(spec):
        sig["cnt_ptr"] = "*i32"
    sig["c_ptr"] = "*" + TRITON_TYPES[spec.out]
    if spec.dynamic_m:
        sig["M"] = "i32"
    if split_buffers(spec):
        sig["ws_ptr"] = "*fp32"
    for c in ("BM", "BN", "BK", "GROUP_M", "SPLIT", "STEPS"):
        sig[c] = "constexpr"
    return sig


def constexprs(spec: GemmSpec) -> dict[str, int]:
    bm, bn, bk = spec.tile[:3]
    s = split(spec)
    return {"BM": bm, "BN": bn, "BK": bk, "GROUP_M": GROUP_M, "SPLIT": s,
            "STEPS": -(-(-(-spec.k // bk)) // s)}


def options(spec: GemmSpec) -> tuple[int, int]:
    """(warps, stages) for triton.compile."""
    return spec.tile[3], spec.tile[4]


TUNE_16 = ((128, 256, 64, 8, 3), (128, 128, 64, 8, 4), (128, 64, 64, 4, 4), (64, 128, 64, 4, 4),
           (64, 64, 64, 4, 4), (64, 64, 128, 4, 3), (64, 32, 128, 4, 3), (128, 64, 32, 4, 5), TILE_16_WIDE,
           (64, 96, 64, 4, 4))
TUNE_TF32X3 = ((128, 64, 32, 8, 3), (64, 64, 32, 4, 4), (64, 32, 32, 4, 4), (128, 128, 32, 8, 3),
               (64, 128, 32, 4, 3))
TUNE_TF32 = ((128, 256, 32, 8, 4), (128, 128, 32, 8, 3), (128, 64, 32, 4, 3), (64, 128, 32, 4, 3),
             (64, 64, 32, 4, 4))
TUNE_CONV_32 = ((128, 128, 32, 8, 3), (128, 64, 32, 4, 3), (64, 128, 32, 4, 3), (64, 64, 32, 4, 3))
TUNE_DEPTHWISE = ((256, 4, 16, 4, 1), (512, 4, 16, 8, 1), (1024, 2, 16, 4, 1), (512, 4, 16, 4, 1),
                  (256, 8, 16, 4, 1), (64, 32, 16, 4, 1), (128, 4, 16, 4, 1), (256, 2, 16, 2, 1))


def candidates(spec: GemmSpec, sms: int) -> list[tuple[int, ...]]:
    """Tiles `braze tune` measures for a spec: the cost model's first, then the tables the
    cost model was fitted on (bench/NOTES.md §18, §20, §26), with K split 2 and 4 ways at
    64x64 where K is long, each tile's K step no longer than K."""
    first = choose_tile(spec, sms)
    if spec.depthwise:
        table = list(TUNE_DEPTHWISE)
    elif spec.conv:
        table = list(TUNE_CONV_32) if spec.a == "f32" else [t[:5] for t in CONV_TILES]
    elif spec.precision == "tf32x3":
        table = list(TUNE_TF32X3)
    elif spec.precision == "tf32":
        table = list(TUNE_TF32)
    else:
        table = list(TUNE_16)
    if not spec.conv and not spec.batch and spec.a != "f32" and spec.m <= GEMV_MAX_M:  # weight-streaming (§53)
        table = [GEMV_TILE, (16, 16, 128, 4, 6), (16, 32, 256, 2, 4), (16, 32, 128, 4, 4, 4), (16, 64, 128, 4, 4, 4),
                 (16, 16, 256, 4, 4, 2)] + table
    if not spec.conv and spec.a != "f32" and _programs(spec, 128, 128) >= 2 * sms:  # persistent, TMA (§27)
        table += [t for t in (_persistent_tma(spec, (128, 256, 64, 8, 3), sms),
                              _persistent_tma(spec, (128, 128, 64, 8, 4), sms)) if len(t) > 5]
    if not spec.depthwise and spec.k >= SPLIT_MIN_K // 2:
        bk, stages = (32, 3) if spec.a == "f32" else (64, 4)
        table += [(64, 64, bk, 4, stages, s) for s in (2, 4) if spec.k // s >= SPLIT_MIN_PART // 2]
    fitted = []
    for bm, bn, bk, *rest in table:
        tile = (bm, bn, min(bk, max(16, 1 << (spec.k - 1).bit_length())), *rest)
        if tile != first and tile not in fitted:
            fitted.append(tile)
    return [first] + fitted
