// RUN: braze-opt %s --split-input-file -p fusion-form-groups,fusion-report | FileCheck %s
// fusion-report is an analysis: the IR after it is the IR fusion-form-groups made. Its
// table (groups, members, bytes saved, reasons) is checked from Python: braze-opt does not
// print analyses, and MLIR's Python bindings cannot emit remarks.

// The group and the recorded reason survive the report unchanged.
// CHECK-LABEL: func.func @reshape_exp_tanh
//       CHECK:   tensor.expand_shape
//       CHECK:   "fusion.group"
//       CHECK:     linalg.exp {fusion.unfused = {"0" = "non-elementwise: tensor.expand_shape"}}
//       CHECK:     linalg.tanh
//       CHECK:   label = "group0"
func.func @reshape_exp_tanh(%a: tensor<16xf32>, %c: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %0 = tensor.expand_shape %a [[0, 1]] output_shape [4, 4] : tensor<16xf32> into tensor<4x4xf32>
  %1 = linalg.exp ins(%0 : tensor<4x4xf32>) outs(%c : tensor<4x4xf32>) -> tensor<4x4xf32>
  %2 = linalg.tanh ins(%1 : tensor<4x4xf32>) outs(%c : tensor<4x4xf32>) -> tensor<4x4xf32>
  return %2 : tensor<4x4xf32>
}
