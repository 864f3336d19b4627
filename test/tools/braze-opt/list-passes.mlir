// RUN: braze-opt --list-passes | FileCheck %s

// --list-passes names braze's passes with their typed options, its pipelines with what they
// expand to, and says upstream passes are accepted too.
// CHECK: braze passes
// CHECK: fusion-channels-last - {{.+}}
// CHECK-NEXT: types=<str> (default: 'f32,bf16,f16') {{.+}}
// CHECK-NEXT: min-convs=<int> (default: 2) {{.+}}
// CHECK: fusion-configure-kernels - {{.+}}
// CHECK: target=<str> (default: '') {{.+}}
// CHECK: fusion-cpu-codegen - {{.+}}
// CHECK: data-tiling=<str> (default: 'auto') {{.+}}
// CHECK: fusion-expand-erf - {{.+}}
// CHECK: fusion-expand-f64-math - {{.+}}
// CHECK: fusion-form-groups - {{.+}}
// CHECK: recompute-multi-use=<bool> (default: true) {{.+}}
// CHECK: max-recompute-flops=<int> (default: 16) {{.+}}
// CHECK: fusion-lower-to-linalg - {{.+}}
// CHECK: fusion-report - {{.+}}
// The device pipelines braze.compile runs are listed with their options and expansion.
// CHECK: braze pipelines
// CHECK: fusion-baseline-pipeline - {{.+}}
// CHECK-NEXT: f64-math=<str> (default: 'keep') {{.+}}
// CHECK-NEXT: = canonicalize,cse
// CHECK: fusion-cpu-pipeline - {{.+}}
// CHECK-NEXT: conv=<str> (default: 'im2col') {{.+}}
// CHECK-NEXT: direct-pixels=<int> (default: 0) {{.+}}
// CHECK-NEXT: data-tiling=<str> (default: 'auto') {{.+}}
// CHECK-NEXT: reassociate=<str> (default: 'auto') {{.+}}
// CHECK-NEXT: channels-last=<str> (default: 'auto') {{.+}}
// CHECK-NEXT: mmt4d-tiles=<str> (default: 'auto') {{.+}}
// CHECK-NEXT: erf=<str> (default: 'rational') {{.+}}
// CHECK-NEXT: = fusion-conv-to-matmul{grouped=true},fusion-expand-f64-math,fusion-default-pipeline,fusion-expand-erf,fusion-cpu-codegen{data-tiling=auto reassociate=auto channels-last=auto mmt4d-tiles=auto}
// CHECK: fusion-cuda-pipeline - {{.+}}
// CHECK-NEXT: target=<str> (default: 'sm_90') {{.+}}
// CHECK-NEXT: tuning-cache=<str> (default: '') {{.+}}
// CHECK-NEXT: kernels=<str> (default: 'auto') {{.+}}
// CHECK-NEXT: fp32=<str> (default: 'tf32x3') {{.+}}
// CHECK-NEXT: conv-fp32=<str> (default: 'tf32') {{.+}}
// CHECK-NEXT: kernel-tiles=<str> (default: '') {{.+}}
// CHECK-NEXT: rows=<str> (default: 'on') {{.+}}
// CHECK-NEXT: channels-last=<str> (default: 'auto') {{.+}}
// CHECK-NEXT: = fusion-conv-to-matmul{target=sm_90{{( leave=f32,bf16,f16)?}}},fusion-default-pipeline,{{(fusion-channels-last\{types=bf16,f16 whole=true\},)?}}fusion-generate-kernels{target=sm_90 mode=auto fp32=tf32x3 conv-fp32=tf32},fusion-pad-matmuls{target=sm_90},fusion-split-k{target=sm_90},fusion-configure-kernels{target=sm_90},fusion-spread-scatters
// CHECK: fusion-default-pipeline - {{.+}}
// CHECK: fusion-vulkan-pipeline - {{.+}}
// CHECK-NEXT: conv=<str> (default: 'im2col') {{.+}}
// CHECK-NEXT: = fusion-conv-to-matmul,fusion-expand-f64-math,fusion-default-pipeline
// CHECK: Upstream MLIR passes are accepted too
