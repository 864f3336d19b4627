"""Run a generated GEMM kernel under Triton's interpreter (a child process of the tests:
TRITON_INTERPRET must be set before triton is first imported).

    python interpret_kernel.py SPEC_JSON IN.pt OUT.pt   (IN.pt: the kernel's operands, a list)
"""

import os
import sys

os.environ["TRITON_INTERPRET"] = "1"

import torch  # noqa: E402

from braze.kernels import build, gemm  # noqa: E402
from braze.kernels.spec import GemmSpec  # noqa: E402

spec = GemmSpec.from_json(open(sys.argv[1]).read())
args = torch.load(sys.argv[2])
folder = os.path.dirname(sys.argv[3])
path = os.path.join(folder, gemm.kernel_name(spec) + ".py")
with open(path, "w") as f:
    f.write(gemm.source(spec))
fn = build.load_function(path, gemm.kernel_name(spec))
shape = (spec.batch, spec.m, spec.n) if spec.batch else (spec.m, spec.n)
out = torch.empty(shape, dtype={"f32": torch.float32, "f16": torch.float16}[spec.out])
fn[gemm.grid(spec)[:2]](*args, out, **gemm.constexprs(spec))
torch.save(out, sys.argv[3])
