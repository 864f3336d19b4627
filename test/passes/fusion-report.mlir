// RUN: braze-opt %s --split-input-file -p fusion-form-groups,fusion-report | FileCheck %s
// fusion-report is an analysis: the IR after it is the IR fusion-form-groups made. Its
// table (groups, members, bytes saved, reasons) is checked from Python: braze-opt does not
// print analyses, and MLIR's Python bindings cannot emit remarks.

// The group and the recorded reason survive the report unchanged.
// CHECK-LABEL: func.func @matmul_exp_tanh
//       CHECK:   linalg.matmul
//       CHECK:   "fusion.group"
//       CHECK:     linalg.exp {fusion.unfused = {"0" = "non-elementwise: linalg.matmul (reduction)"}}
//       CHECK:     linalg.tanh
//       CHECK:   label = "group0"
func.func @matmul_exp_tanh(%a: tensor<4x8xf32>, %b: tensor<8x4xf32>, %c: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %0 = linalg.matmul ins(%a, %b : tensor<4x8xf32>, tensor<8x4xf32>) outs(%c : tensor<4x4xf32>) -> tensor<4x4xf32>
  %1 = linalg.exp ins(%0 : tensor<4x4xf32>) outs(%c : tensor<4x4xf32>) -> tensor<4x4xf32>
  %2 = linalg.tanh ins(%1 : tensor<4x4xf32>) outs(%c : tensor<4x4xf32>) -> tensor<4x4xf32>
  return %2 : tensor<4x4xf32>
}
