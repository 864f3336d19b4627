"""Reproducer (IREE 3.13, SPIR-V): a batch matmul whose result feeds a fused permuting copy is
computed wrong by the MatmulPromoteVectorize pipeline: each workgroup writes only its first
thread's four elements of the tile (1/256 of the result; relative error 1.0).

vulkan_promoted_copy.mlir is the dispatch torch's multi-head attention makes for softmax(QK^T) V
with its [batch * heads, tokens, dim] -> [tokens, batch * heads, dim] permute (bench/repro/vulkan_mha.py,
reduced with --iree-flow-trace-dispatch-tensors to the first dispatch that differs from the CPU's).
Wrong for the NVIDIA Vulkan targets (ampere, turing: MatmulPromoteVectorize), right for rdna3,
valhall and llvmpipe (other pipelines), right with the copy replaced by x + x, right with the
copy in a dispatch of its own (util.optimization_barrier), and right with the same tiles under
BaseVectorize (which braze uses instead: braze/compiler/vulkan_workarounds.py). Why: the accumulator is staged in
workgroup memory (the consumer cannot write it in place); after distribution to threads each
thread's [1, 1, 4] copy of it to the output still carries the `copy_to_workgroup_memory` marker,
and GPUDistributeSharedMemoryCopy distributes it over the workgroup again, so only thread (0, 0)
stores (the final IR guards the store with thread_id.y < 1 and 4 * thread_id.x < 4).

Any Vulkan device shows it, Mesa's CPU driver included (apt-get install mesa-vulkan-drivers):

    python bench/repro/vulkan_promoted_copy.py [DIR]     # needs iree-base-compiler, iree-base-runtime, numpy
"""

import os
import subprocess
import sys
import tempfile

import numpy as np


def main(out: str) -> int:
    import iree._runtime_libs as libs

    here = os.path.dirname(os.path.abspath(__file__))
    rng = np.random.default_rng(0)
    p = rng.standard_normal((8, 16, 16)).astype(np.float32)
    v = rng.standard_normal((8, 16, 64)).astype(np.float32)
    expected = np.einsum("bij,bjk->ibk", p.astype(np.float64), v.astype(np.float64))
    np.save(os.path.join(out, "p.npy"), p)
    np.save(os.path.join(out, "v.npy"), v)
    tool = os.path.join(os.path.dirname(libs.__file__), "iree-run-module")
    worst = 0.0
    for target in ("ampere", "turing", "rdna3", "valhall", "llvmpipe"):
        vmfb = os.path.join(out, f"{target}.vmfb")
        subprocess.run(["iree-compile", os.path.join(here, "vulkan_promoted_copy.mlir"),
                        "--iree-hal-target-device=vulkan", f"--iree-vulkan-target={target}", "-o", vmfb], check=True)
        result = os.path.join(out, f"{target}.npy")
        r = subprocess.run([tool, f"--module={vmfb}", "--device=vulkan", f"--input=@{out}/p.npy",
                            f"--input=@{out}/v.npy", f"--output=@{result}"], capture_output=True, text=True)
        if r.returncode:
            print(f"{target:9s} did not run: {(r.stderr.strip().splitlines() or ['?'])[-1]}")
            continue
        err = float(np.abs(np.load(result) - expected).max() / np.abs(expected).max())
        worst = max(worst, err)
        print(f"{target:9s} max relative error {err:.2e}")
    return 0 if worst < 1e-5 else 1


if __name__ == "__main__":
    if len(sys.argv) > 2:
        sys.exit(__doc__)
    if len(sys.argv) == 2:
        os.makedirs(sys.argv[1], exist_ok=True)
        sys.exit(main(sys.argv[1]))
    with tempfile.TemporaryDirectory() as tmp:
        sys.exit(main(tmp))
