# RUN: braze import %inputs/conv_net.py:make_model -o %t.imported.mlir
# RUN: braze-opt %t.imported.mlir -p 'fusion-cuda-pipeline{target=sm_90}' -o %t.replayed.mlir
# RUN: braze compile %inputs/conv_net.py:make_model --device cuda --target sm_90 --emit mlir -o %t.compiled.mlir --report 2>%t.report
# RUN: diff %t.replayed.mlir %t.compiled.mlir
# RUN: FileCheck %s --input-file=%t.compiled.mlir
# RUN: FileCheck %s --input-file=%t.report --check-prefix=REPORT
# RUN: braze-opt %t.imported.mlir -p fusion-default-pipeline -o %t.default.mlir
# RUN: not diff %t.default.mlir %t.compiled.mlir > /dev/null

# `braze import` + `braze-opt -p fusion-cuda-pipeline{target=sm_90}` is exactly what
# braze.compile(device="cuda", target="sm_90") hands to IREE: the pipeline is registered, so
# the IR a compile produced can be replayed and bisected with braze-opt. (The compile's tuning
# cache is lit's empty one; the CPU's pipeline gives other IR, so the diff can fail.)
# The convolution, its BatchNorm and ReLU become one implicit-GEMM kernel reading the unpadded
# input where Triton is installed (as in CI), an im2col copy and a matmul elsewhere; the Linear
# no tile divides is padded, with IREE's tile on the matmul in its body.
# CHECK: func.func @main
# CHECK: {{call @braze_kernel0\(%arg0.*tensor<2x4x8x8xf32>|linalg.generic .*braze.im2col}}
# CHECK: tensor.pad
# CHECK: linalg.matmul {{.*}}braze.matmul_config = "simt
# The report names the pipeline the compile ran, with its options.
# REPORT: fusion {{ +}} on (fusion-cuda-pipeline{target=sm_90 tuning-cache={{.*}}tuning.json{{( kernels=on)?}}})
