"""Reproducer: IREE 3.13's Vulkan (ampere) code computes torch's multi-head attention wrong.

torch.nn.MultiheadAttention(256, 4) on [2, 16, 256] (the self-attention of
TransformerEncoderLayer(256, 4)), written out as plain ops: in-projection, the packed
reshape torch uses, scaled_dot_product_attention, out-projection. Every part alone is
correct on Vulkan, and the whole is correct on CPU and CUDA; on the H200 through Vulkan the
result has a max relative error of 1.5. No braze pass is involved: the module is torch-mlir's
linalg IR compiled by iree-compile and run by iree-run-module. Reduced to one dispatch (softmax(QK^T)
V with its permuted result, IREE's SPIR-V MatmulPromoteVectorize pipeline) in
bench/repro/vulkan_promoted_copy.py; braze avoids it (python/braze/compiler/vulkan_workarounds.py, bench/NOTES.md §30).
Mesa's CPU Vulkan driver (lavapipe) shows it too.

    python bench/repro/vulkan_mha.py build DIR     # needs torch, torch-mlir, iree-base-compiler
    python bench/repro/vulkan_mha.py run DIR       # needs iree-base-runtime and numpy (GPU host)
"""

import os
import subprocess
import sys

import numpy as np

B, L, E, H, HD = 2, 16, 256, 4, 64
TARGETS = {
    "vulkan": (["--iree-hal-target-device=vulkan", "--iree-vulkan-target=ampere"], "vulkan"),
    "cuda": (["--iree-hal-target-device=cuda", "--iree-cuda-target=sm_80"], "cuda"),
    "cpu": (["--iree-hal-target-device=local", "--iree-hal-local-target-device-backends=llvm-cpu",
             "--iree-llvmcpu-target-cpu=x86-64-v3"], "local-task"),
}


def build(out: str) -> None:
    import torch
    import torch.nn.functional as F

    from braze.compiler import frontend

    torch.manual_seed(0)
    att = torch.nn.MultiheadAttention(E, H, batch_first=True).eval()
    w, b = att.in_proj_weight.detach(), att.in_proj_bias.detach()
    wo, bo = att.out_proj.weight.detach(), att.out_proj.bias.detach()

    class Attention(torch.nn.Module):
        def forward(self, x):
            proj = F.linear(x.transpose(1, 0), w, b)
            proj = proj.unflatten(-1, (3, E)).unsqueeze(0).transpose(0, -2).squeeze(-2).contiguous()
            heads = [t.view(L, B * H, HD).transpose(0, 1).view(B, H, L, HD) for t in (proj[0], proj[1], proj[2])]
            a = F.scaled_dot_product_attention(*heads)
            a = a.permute(2, 0, 1, 3).contiguous().view(B * L, E)
            return F.linear(a, wo, bo).view(L, B, E).transpose(1, 0)

    x = torch.randn(B, L, E)
    with torch.no_grad():
        expected = Attention()(x)
        assert torch.allclose(expected, att(x, x, x, need_weights=False)[0], atol=1e-5)
    os.makedirs(out, exist_ok=True)
    mlir = os.path.join(out, "attention.mlir")
    with open(mlir, "w") as f:
        f.write(str(frontend.import_model(Attention(), (x,)).module))
    np.save(os.path.join(out, "x.npy"), x.numpy())
    np.save(os.path.join(out, "expected.npy"), expected.contiguous().numpy())
    for name, (flags, _) in TARGETS.items():
        subprocess.run(["iree-compile", mlir, *flags, "-o", os.path.join(out, f"attention.{name}.vmfb")], check=True)
        print("built", name, "with:", " ".join(["iree-compile", "attention.mlir", *flags]))


def run(out: str) -> int:
    import iree._runtime_libs as libs

    tool = os.path.join(os.path.dirname(libs.__file__), "iree-run-module")
    expected = np.load(os.path.join(out, "expected.npy"))
    worst = {}
    for name, (_, driver) in TARGETS.items():
        result = os.path.join(out, f"out.{name}.npy")
        r = subprocess.run([tool, f"--module={os.path.join(out, f'attention.{name}.vmfb')}", f"--device={driver}",
                            "--function=main", f"--input=@{os.path.join(out, 'x.npy')}", f"--output=@{result}"],
                           capture_output=True, text=True)
        if r.returncode:
            print(f"{name:7s} did not run: {r.stderr.strip().splitlines()[-1] if r.stderr.strip() else r.returncode}")
            continue
        got = np.load(result)
        worst[name] = float(np.abs(got - expected).max() / np.abs(expected).max())
        print(f"{name:7s} max relative error {worst[name]:.2e}")
    return 0 if all(v < 1e-4 for v in worst.values()) else 1


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("build", "run"):
        sys.exit(__doc__)
    sys.exit(build(sys.argv[2]) if sys.argv[1] == "build" else run(sys.argv[2]))
