"""Run a generated kernel (GEMM, attention or row program) under Triton's interpreter (a child process of the
tests: TRITON_INTERPRET must be set before triton is first imported). bfloat16 is the GPU's:
the interpreter's own bf16 dot and conversions are replaced (see _dot, _bf16_exact).

    python interpret_kernel.py SPEC_JSON IN.pt OUT.pt   (IN.pt: the kernel's operands, a list)
"""

import os
import sys

os.environ["TRITON_INTERPRET"] = "1"

import builtins  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402
import triton.language as tl  # noqa: E402
from triton.runtime import interpreter  # noqa: E402

from braze.kernels import build  # noqa: E402


def _range(*bounds):
    """Triton 3.6's interpreter hands a loop bound computed from program_id to range() as a
    1-element array, which NumPy 2 no longer converts to an int; the compiled kernel is unaffected."""
    return builtins.range(*(int(np.asarray(b.handle.data).reshape(-1)[0]) if hasattr(b, "handle") else b
                            for b in bounds))


interpreter.range = _range

_convert_float = interpreter._convert_float


def _bf16_exact(data, src, dst, rounding_mode):
    """float32 <-> bfloat16 as the GPU converts: bf16 is float32's top 16 bits, rounded to
    nearest even unless round-toward-zero is asked (NaN kept a NaN). Triton 3.6's interpreter
    truncates where the GPU rounds (1.9999 -> 1.9921875, not 2.0)."""
    if (src, dst) == (tl.float32, tl.bfloat16):
        values = np.array(data, dtype=np.float32)
        bits = values.view(np.uint32).astype(np.uint64)
        if rounding_mode == interpreter._ir.ROUNDING_MODE.RTZ:
            rounded = (bits >> 16).astype(np.uint16)
        else:
            rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
        return np.where(np.isnan(values), np.uint16(0x7FC0), rounded)
    if (src, dst) == (tl.bfloat16, tl.float32):
        return (np.array(data, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)
    return _convert_float(data, src, dst, rounding_mode)


def _dot(self, a, b, d, input_precision, max_num_imprecise_acc):
    """Triton 3.6's interpreter multiplies bfloat16 operands as the integers that hold them; the
    GPU's MMA multiplies their values exactly and adds in float32, as np.matmul on them in float32 does."""
    if a.dtype.scalar == tl.bfloat16:
        a = interpreter.TensorHandle(_bf16_exact(a.data, tl.bfloat16, tl.float32, None), tl.float32)
    if b.dtype.scalar == tl.bfloat16:
        b = interpreter.TensorHandle(_bf16_exact(b.data, tl.bfloat16, tl.float32, None), tl.float32)
    return _create_dot(self, a, b, d, input_precision, max_num_imprecise_acc)


interpreter._convert_float = _bf16_exact
_create_dot = interpreter.InterpreterBuilder.create_dot
interpreter.InterpreterBuilder.create_dot = _dot

from braze.kernels.spec import AttentionSpec, RowSpec, read_spec  # noqa: E402

spec = read_spec(open(sys.argv[1]).read())
tpl = build.template(spec)
args = torch.load(sys.argv[2])
folder = os.path.dirname(sys.argv[3])
path = os.path.join(folder, tpl.kernel_name(spec) + ".py")
with open(path, "w") as f:
    f.write(tpl.source(spec))
fn = build.load_function(path, tpl.kernel_name(spec))
DTYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
if isinstance(spec, RowSpec):
    out = torch.empty(spec.rows, spec.cols, dtype=DTYPES[spec.out])
    fn[tpl.grid(spec)[:1]](*[a.contiguous() for a in args], out, **tpl.constexprs(spec))
    torch.save(out, sys.argv[3])
    sys.exit(0)
if isinstance(spec, AttentionSpec):
    heads = args[0].numel() // (spec.l * spec.e) if spec.dynamic_batch else spec.batch  # per call: q's
    shape = (heads, spec.l, spec.ev)
else:
    m = args[0].shape[0] if spec.dynamic_m else spec.m  # M per call: the rows of A
    shape = (spec.batch, m, spec.n) if spec.batch else (m, spec.n * spec.groups)
out = torch.empty(shape, dtype={"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}[spec.out])
split = None if isinstance(spec, AttentionSpec) else tpl.split_buffers(spec)
if split:  # the counters zeroed, the workspace not (IREE's fill and transient, as in embed)
    counters, workspace = split
    out_args = [torch.zeros(counters, dtype=torch.int32), out, torch.full((workspace,), float("nan"))]
else:
    out_args = [out]
grid = tpl.grid(spec)[:2]
if isinstance(spec, AttentionSpec) and spec.dynamic_batch:  # as braze.compiler.kernel_embed's count region
    grid = (grid[0], heads)
if not isinstance(spec, AttentionSpec) and spec.dynamic_m:  # as braze.compiler.kernel_embed's count region
    out_args.append(m)
    grid = (-(-m // spec.tile[0]) * tpl.tiles_n(spec), 1)
fn[grid](*args, *out_args, **tpl.constexprs(spec))
torch.save(out, sys.argv[3])
