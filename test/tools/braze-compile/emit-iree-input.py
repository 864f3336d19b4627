# REQUIRES: iree-compile
# RUN: braze compile %inputs/conv_net.py:make_model --device cuda --target sm_90 --emit iree-input -o %t.mlir --flags-file %t.flags
# RUN: FileCheck %s --input-file=%t.mlir
# RUN: iree-compile @%t.flags %t.mlir -o %t.vmfb
# RUN: braze compile %inputs/conv_net.py:make_model --emit iree-input --flags-file %t.cpu.flags | FileCheck %s --check-prefix=CPU
# RUN: FileCheck %s --input-file=%t.cpu.flags --check-prefix=CPU-FLAGS
# RUN: braze compile %inputs/bf16_linear.py:make_model --device vulkan --target ampere --emit iree-input -o %t.vk.mlir --flags-file %t.vk.flags
# RUN: FileCheck %s --input-file=%t.vk.mlir --check-prefix=VULKAN
# RUN: iree-compile @%t.vk.flags %t.vk.mlir -o %t.vk.vmfb
# RUN: not braze compile %inputs/conv_net.py:make_model --emit mlir --flags-file %t.x 2>&1 | FileCheck %s --check-prefix=MISUSE

# `braze compile --emit iree-input` prints what IREE's compiler receives from braze.compile:
# the module after braze's passes and after the back end's own rewrites, which `--emit mlir`
# does not show, with the flags; `iree-compile @FLAGS FILE` compiles it (the second RUN line).
# On CUDA: the explicit Hopper device target braze attaches (IREE 3.13 cannot target sm_90 by
# flag), each generated kernel embedded as an executable holding its PTX (the convolution with
# its BatchNorm and ReLU, and the Linear, as Triton needs: CI installs it), dispatched from the
# function that stood for it, and main wrapped to take braze's result and transient buffers.
# CHECK: // {{.*}}iree-compile --iree-dispatch-creation-enable-aggressive-fusion=true {{.*}}.mlir -o module.vmfb
# CHECK: #hal.executable.target<"cuda", "cuda-nvptx-fb", {iree_codegen.target_info = #iree_gpu.target<arch = "sm_90", features = "+ptx80"
# CHECK: #device_target_cuda = #hal.device.target<"cuda", [#executable_target_cuda_nvptx_fb]>
# CHECK: util.global private @__device_0 = #device_target_cuda
# CHECK: call @braze_kernel0(%arg0,
# CHECK: hal.executable.source private @braze_kernel0_exe <objects = <{{.*}}path = "braze_gemm_{{[0-9a-f]+}}.ptx", data = dense<"0x2F2F206272617A65206B65726E656C
# CHECK: func.func private @braze_kernel0(
# CHECK-NEXT: {{.*}}arith.constant 0 : i32
# CHECK-NEXT: flow.dispatch @braze_kernel0_exe::@braze_gemm_
# CHECK: hal.executable.source private @braze_kernel1_exe
# CHECK: func.func @main(%arg0: tensor<2x4x8x8xf32>, %arg1: !hal.buffer, %arg2: !hal.buffer {iree.abi.transients}) -> tensor<2x10xf32>

# For the CPU there are no kernels, the flags name the host's LLVM target, and main takes the transient
# buffer only (results stay in IREE's buffers there).
# CPU: // The module braze.compile hands IREE's compiler for ConvNet on cpu
# CPU-NOT: hal.executable.source
# CPU: func.func @main(%arg0: tensor<2x4x8x8xf32>, %arg1: !hal.buffer {iree.abi.transients}) -> tensor<2x10xf32>
# CPU-FLAGS: --iree-hal-target-device=local
# CPU-FLAGS: --iree-llvmcpu-target-cpu=

# For Vulkan, a bf16 matmul reads its operands widened to float32 behind optimization barriers
# (IREE 3.13 cannot compile a bf16 contraction for SPIR-V; the replay above would fail without).
# VULKAN: util.optimization_barrier {{.*}} : tensor<8x64xf32>
# VULKAN-NEXT: util.optimization_barrier {{.*}} : tensor<64x32xf32>
# VULKAN-NEXT: linalg.matmul ins({{.*}} : tensor<8x64xf32>, tensor<64x32xf32>) outs({{.*}} : tensor<8x32xf32>)

# MISUSE: braze compile: error: --flags-file goes with --emit iree-input
