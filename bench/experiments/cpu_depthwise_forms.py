"""A depthwise 3x3 convolution (96 channels, 56x56, stride 1, the input already padded) written
three ways in MLIR and timed by iree-benchmark-module on the CPU (bench/NOTES.md §40):

    python bench/experiments/cpu_depthwise_forms.py [THREADS]

nchw: IREE's `linalg.depthwise_conv_2d_nchw_chw` as torch-mlir imports it; nhwc: the same as
`depthwise_conv_2d_nhwc_hwc` between transposes; taps: nine shifted slices of the input, each
times its weight, summed in one elementwise `linalg.generic`. Eager's time for the same
convolution is printed beside them.
"""

import os
import shutil
import subprocess
import sys
import tempfile
import time

import torch
from iree.compiler.tools import binaries

threads = int(sys.argv[1]) if len(sys.argv) > 1 else 1
C, H = 96, 56
X, W, Y = f"tensor<1x{C}x{H + 2}x{H + 2}xf32>", f"tensor<{C}x3x3xf32>", f"tensor<1x{C}x{H}x{H}xf32>"
TAPS = [(i, j) for i in range(3) for j in range(3)]
IDENTITY = "affine_map<(n, c, oh, ow) -> (n, c, oh, ow)>"


def taps() -> str:
    slices = "\n".join(f"  %x{k} = tensor.extract_slice %x[0, 0, {i}, {j}] [1, {C}, {H}, {H}] [1, 1, 1, 1] : {X} to {Y}"
                       for k, (i, j) in enumerate(TAPS))
    maps = ", ".join([IDENTITY] * 9 + [f"affine_map<(n, c, oh, ow) -> (c, {i}, {j})>" for i, j in TAPS] + [IDENTITY])
    body = ["      %s0 = arith.mulf %a0, %b0 : f32"]
    for k in range(1, 9):
        body += [f"      %p{k} = arith.mulf %a{k}, %b{k} : f32", f"      %s{k} = arith.addf %s{k - 1}, %p{k} : f32"]
    return f"""
func.func @taps(%x: {X}, %w: {W}) -> {Y} {{
{slices}
  %e = tensor.empty() : {Y}
  %y = linalg.generic {{indexing_maps = [{maps}], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}}
      ins({", ".join(f"%x{k}" for k in range(9))}, {", ".join(["%w"] * 9)} : {", ".join([Y] * 9)}, {", ".join([W] * 9)})
      outs(%e : {Y}) {{
    ^bb0({", ".join(f"%a{k}: f32" for k in range(9))}, {", ".join(f"%b{k}: f32" for k in range(9))}, %out: f32):
{chr(10).join(body)}
      linalg.yield %s8 : f32
  }} -> {Y}
  return %y : {Y}
}}"""


SOURCE = f"""
func.func @nchw(%x: {X}, %w: {W}) -> {Y} {{
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : {Y}
  %f = linalg.fill ins(%z : f32) outs(%e : {Y}) -> {Y}
  %y = linalg.depthwise_conv_2d_nchw_chw {{dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>}}
         ins(%x, %w : {X}, {W}) outs(%f : {Y}) -> {Y}
  return %y : {Y}
}}
func.func @nhwc(%x: {X}, %w: {W}) -> {Y} {{
  %z = arith.constant 0.0 : f32
  %xe = tensor.empty() : tensor<1x{H + 2}x{H + 2}x{C}xf32>
  %xt = linalg.transpose ins(%x : {X}) outs(%xe : tensor<1x{H + 2}x{H + 2}x{C}xf32>) permutation = [0, 2, 3, 1]
  %we = tensor.empty() : tensor<3x3x{C}xf32>
  %wt = linalg.transpose ins(%w : {W}) outs(%we : tensor<3x3x{C}xf32>) permutation = [1, 2, 0]
  %e = tensor.empty() : tensor<1x{H}x{H}x{C}xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<1x{H}x{H}x{C}xf32>) -> tensor<1x{H}x{H}x{C}xf32>
  %y = linalg.depthwise_conv_2d_nhwc_hwc {{dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>}}
         ins(%xt, %wt : tensor<1x{H + 2}x{H + 2}x{C}xf32>, tensor<3x3x{C}xf32>)
         outs(%f : tensor<1x{H}x{H}x{C}xf32>) -> tensor<1x{H}x{H}x{C}xf32>
  %oe = tensor.empty() : {Y}
  %o = linalg.transpose ins(%y : tensor<1x{H}x{H}x{C}xf32>) outs(%oe : {Y}) permutation = [0, 3, 1, 2]
  return %o : {Y}
}}
{taps()}
"""
FLAGS = ["--iree-hal-target-device=local", "--iree-hal-local-target-device-backends=llvm-cpu",
         "--iree-llvmcpu-target-cpu=host", "--iree-llvmcpu-reassociate-fp-reductions=true",
         "--iree-dispatch-creation-enable-aggressive-fusion=true"]

with tempfile.TemporaryDirectory() as tmp:
    src, vmfb = os.path.join(tmp, "dw.mlir"), os.path.join(tmp, "dw.vmfb")
    with open(src, "w") as f:
        f.write(SOURCE)
    subprocess.run([binaries.find_tool("iree-compile"), *FLAGS, src, "-o", vmfb], check=True)
    bench = shutil.which("iree-benchmark-module")  # iree-base-runtime's console script
    for fn in ("nchw", "nhwc", "taps"):
        out = subprocess.run([bench, f"--module={vmfb}", f"--function={fn}", f"--input=1x{C}x{H + 2}x{H + 2}xf32=1",
                              f"--input={C}x3x3xf32=0.5", "--device=local-task",
                              f"--task_topology_group_count={threads}", "--benchmark_repetitions=5"],
                             capture_output=True, text=True, check=True).stdout
        median = next(line.split()[1:3] for line in out.splitlines() if "real_time_median" in line)
        print(f"depthwise {fn:5s} threads={threads} {' '.join(median)}", flush=True)

torch.set_num_threads(threads)
conv = torch.nn.Conv2d(C, C, 3, groups=C, bias=False).eval()
x = torch.randn(1, C, H + 2, H + 2)
with torch.no_grad():
    conv(x)
    t = time.perf_counter()
    for _ in range(50):
        conv(x)
print(f"depthwise eager threads={threads} {(time.perf_counter() - t) / 50 * 1e3:.2f} ms", flush=True)
