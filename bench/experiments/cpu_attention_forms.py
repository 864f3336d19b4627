"""Attention's pieces on the CPU through iree-benchmark-module, one worker (bench/NOTES.md §41):
QK^T as IREE gets it (batch matmul with B transposed) and with B not transposed, and IREE's fused
attention op with its own configuration and with tiles braze chose by hand (compilation_info on
LinalgExtTileAndVectorize). Shapes: the bench's CPU attention, 12 heads x 128 tokens x 64.

    python bench/experiments/cpu_attention_forms.py [WORKERS]
"""

import os
import subprocess
import sys
import tempfile

WORKERS = sys.argv[1] if len(sys.argv) > 1 else "1"
FLAGS = ["--iree-hal-target-device=local", "--iree-hal-local-target-device-backends=llvm-cpu",
         "--iree-llvmcpu-target-cpu=host", "--iree-llvmcpu-reassociate-fp-reductions=true"]
T = "tensor<12x128x64xf32>"
MAPS5 = ("affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d3)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d4, d3)>, "
         "affine_map<(d0, d1, d2, d3, d4) -> (d0, d4, d2)>, affine_map<(d0, d1, d2, d3, d4) -> ()>, "
         "affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2)>")


def bmm(transposed_b: bool) -> tuple[str, list[str]]:
    b = T if transposed_b else "tensor<12x64x128xf32>"
    maps = ("indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>, affine_map<(d0, d1, d2, d3) -> "
            "(d0, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>] ") if transposed_b else ""
    src = f"""func.func @main(%q: {T}, %k: {b}) -> tensor<12x128x128xf32> {{
  %c = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<12x128x128xf32>
  %f = linalg.fill ins(%c : f32) outs(%e : tensor<12x128x128xf32>) -> tensor<12x128x128xf32>
  %r = linalg.batch_matmul {maps}ins(%q, %k : {T}, {b}) outs(%f : tensor<12x128x128xf32>) -> tensor<12x128x128xf32>
  return %r : tensor<12x128x128xf32>
}}"""
    return src, ["12x128x64xf32", "12x128x64xf32" if transposed_b else "12x64x128xf32"]


def attention(tiles: tuple[int, int, int] | None) -> tuple[str, list[str]]:
    attrs = ""
    if tiles:
        m, n, k2 = tiles
        attrs = ("compilation_info = #iree_codegen.compilation_info<lowering_config = #iree_cpu.lowering_config<"
                 f"distribution = [1, 64, 64, 0, 0], vector_common_parallel = [1, {m}, {n}, 0, 0], "
                 f"vector_reduction = [0, 0, 0, 0, {k2}]>, translation_info = #iree_codegen.translation_info<"
                 "pipeline = #iree_cpu.pipeline<LinalgExtTileAndVectorize>>>")
    src = f"""func.func @main(%q: {T}, %k: {T}, %v: {T}) -> {T} {{
  %s = arith.constant 0.125 : f32
  %e = tensor.empty() : {T}
  %r = iree_linalg_ext.attention <indexing_maps = [{MAPS5}]> {{{attrs}}} ins(%q, %k, %v, %s : {T}, {T}, {T}, f32) outs(%e : {T}) {{
  ^bb0(%a: f32):
    iree_linalg_ext.yield %a : f32
  }} -> {T}
  return %r : {T}
}}"""
    return src, ["12x128x64xf32"] * 3


def run(label: str, src: str, inputs: list[str], tmp: str) -> None:
    mlir, vmfb = os.path.join(tmp, "m.mlir"), os.path.join(tmp, "m.vmfb")
    with open(mlir, "w") as f:
        f.write(src)
    c = subprocess.run(["iree-compile", mlir, *FLAGS, "-o", vmfb], capture_output=True, text=True)
    if c.returncode:
        print(f"{label:44s} does not compile: {c.stderr.splitlines()[0][:120]}", flush=True)
        return
    b = subprocess.run(["iree-benchmark-module", f"--module={vmfb}", "--device=local-task",
                        f"--task_topology_group_count={WORKERS}", "--function=main",
                        "--benchmark_repetitions=5", "--benchmark_min_time=0.2s"]
                       + [f"--input={i}" for i in inputs], capture_output=True, text=True)
    med = [line.split()[1:3] for line in b.stdout.splitlines() if "real_time_median" in line]
    print(f"{label:44s} {' '.join(med[0]) if med else b.stderr[-200:]}", flush=True)


with tempfile.TemporaryDirectory() as tmp:
    run("QK^T, B transposed (as IREE gets it)", *bmm(True), tmp)
    run("QK^T, B not transposed", *bmm(False), tmp)
    run("attention op, IREE's configuration", *attention(None), tmp)
    for tiles in [(4, 64, 8), (8, 64, 4), (8, 64, 8), (16, 64, 4), (8, 64, 16)]:
        run(f"attention op, rows {tiles[0]} x {tiles[1]} x keys {tiles[2]}", *attention(tiles), tmp)
