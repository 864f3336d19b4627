// RUN: braze-opt %s --split-input-file -p 'fusion-form-groups,fusion-report{print}' 2>%t.report | FileCheck %s --check-prefix=IR
// RUN: FileCheck %s --input-file=%t.report --check-prefix=REPORT
// RUN: braze-opt %s --split-input-file -p fusion-form-groups,fusion-report 2>&1 >/dev/null | FileCheck %s --check-prefix=QUIET --allow-empty

// fusion-report is an analysis: the IR after it is the IR fusion-form-groups made, and without
// `print` it prints nothing.
// QUIET-NOT: fusion group
// IR-LABEL: func.func @reshape_exp_tanh
//       IR:   tensor.expand_shape
//       IR:   "fusion.group"
//       IR:     linalg.exp {fusion.unfused = {"0" = "non-elementwise: tensor.expand_shape"}}
//       IR:     linalg.tanh
//       IR:   label = "group0"

// A group's members with their source lines (lines 24-26 below), the bytes kept out of memory (one 4x4xf32 write
// and read), and the unfused pair with the recorded reason.
// REPORT-LABEL: 1 fusion group(s), ~128 bytes of intermediates kept out of memory
//  REPORT-NEXT:   @reshape_exp_tanh group0 [elementwise] 2 ops, 2 in / 1 out, saves ~128 B
//  REPORT-NEXT:       linalg.exp {{ +}} {{.*}}fusion-report.mlir:25
//  REPORT-NEXT:       linalg.tanh {{ +}} {{.*}}fusion-report.mlir:26
//  REPORT-NEXT: not fused:
//  REPORT-NEXT:   @reshape_exp_tanh tensor.expand_shape ({{.*}}fusion-report.mlir:24) -> linalg.exp ({{.*}}fusion-report.mlir:25): non-elementwise: tensor.expand_shape
func.func @reshape_exp_tanh(%a: tensor<16xf32>, %c: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %0 = tensor.expand_shape %a [[0, 1]] output_shape [4, 4] : tensor<16xf32> into tensor<4x4xf32>
  %1 = linalg.exp ins(%0 : tensor<4x4xf32>) outs(%c : tensor<4x4xf32>) -> tensor<4x4xf32>
  %2 = linalg.tanh ins(%1 : tensor<4x4xf32>) outs(%c : tensor<4x4xf32>) -> tensor<4x4xf32>
  return %2 : tensor<4x4xf32>
}

// -----

// Two chains on either side of a reduction: the reduction stays apart, with its reason on each
// side, and a chain next to it is left for IREE to fuse into the reduction's dispatch.
// REPORT-LABEL: 0 fusion group(s), ~0 bytes of intermediates kept out of memory
//  REPORT-NEXT: not fused:
//   REPORT-DAG:   @around_sum linalg.exp ({{.*}}) -> linalg.generic{addf} ({{.*}}): non-elementwise: linalg.generic (reduction)
//   REPORT-DAG:   @around_sum linalg.generic{addf} ({{.*}}) -> linalg.tanh ({{.*}}): non-elementwise: linalg.generic (reduction)
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
func.func @around_sum(%x: tensor<4x8xf32>, %e: tensor<4x8xf32>, %r: tensor<4xf32>) -> tensor<4xf32> {
  %0 = linalg.exp ins(%x : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
  %1 = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%0 : tensor<4x8xf32>) outs(%r : tensor<4xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %s = arith.addf %in, %acc : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  %2 = linalg.tanh ins(%1 : tensor<4xf32>) outs(%r : tensor<4xf32>) -> tensor<4xf32>
  return %2 : tensor<4xf32>
}
