// RUN: braze-opt %s --split-input-file -p fusion-lower-to-linalg | FileCheck %s

#id = affine_map<(d0, d1) -> (d0, d1)>
#tr = affine_map<(d0, d1) -> (d1, d0)>

// A group with a permuted producer->consumer read becomes one generic whose input map is composed.
// CHECK-DAG: #[[ID:.+]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[TR:.+]] = affine_map<(d0, d1) -> (d1, d0)>
// CHECK-LABEL: func.func @permuted
//       CHECK:   linalg.generic {indexing_maps = [#[[ID]], #[[TR]]]
//       CHECK:     math.exp
//       CHECK:     math.sqrt
//   CHECK-NOT:   "fusion.group"
func.func @permuted(%x: tensor<4x8xf32>) -> tensor<8x4xf32> {
  %g = "fusion.group"(%x) ({
  ^bb0(%a: tensor<4x8xf32>):
    %e = tensor.empty() : tensor<4x8xf32>
    %et = tensor.empty() : tensor<8x4xf32>
    %0 = linalg.exp ins(%a : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
    %1 = linalg.generic {indexing_maps = [#tr, #id], iterator_types = ["parallel", "parallel"]} ins(%0 : tensor<4x8xf32>) outs(%et : tensor<8x4xf32>) {
    ^bb0(%in: f32, %out: f32):
      %r = math.sqrt %in : f32
      linalg.yield %r : f32
    } -> tensor<8x4xf32>
    "fusion.yield"(%1) {operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<8x4xf32>) -> ()
  }) {kind = "elementwise", label = "group0", operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<4x8xf32>) -> tensor<8x4xf32>
  return %g : tensor<8x4xf32>
}

// -----

// The same input read twice through the same map becomes one input of the fused op.
// CHECK-LABEL: func.func @dedup
//       CHECK:   linalg.generic
//  CHECK-SAME:     ins(%{{[a-z0-9]+}} : tensor<16xf32>)
//       CHECK:     arith.mulf
//       CHECK:     arith.addf
func.func @dedup(%x: tensor<16xf32>) -> tensor<16xf32> {
  %g = "fusion.group"(%x) ({
  ^bb0(%a: tensor<16xf32>):
    %e = tensor.empty() : tensor<16xf32>
    %0 = linalg.mul ins(%a, %a : tensor<16xf32>, tensor<16xf32>) outs(%e : tensor<16xf32>) -> tensor<16xf32>
    %1 = linalg.add ins(%0, %a : tensor<16xf32>, tensor<16xf32>) outs(%e : tensor<16xf32>) -> tensor<16xf32>
    "fusion.yield"(%1) {operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<16xf32>) -> ()
  }) {kind = "elementwise", label = "group0", operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<16xf32>) -> tensor<16xf32>
  return %g : tensor<16xf32>
}

// -----

// A group with two results becomes one multi-result generic.
// CHECK-LABEL: func.func @two_results
//       CHECK:   %[[R:.+]]:2 = linalg.generic
//       CHECK:   return %[[R]]#0, %[[R]]#1
func.func @two_results(%x: tensor<16xf32>) -> (tensor<16xf32>, tensor<16xf32>) {
  %g:2 = "fusion.group"(%x) ({
  ^bb0(%a: tensor<16xf32>):
    %e = tensor.empty() : tensor<16xf32>
    %0 = linalg.exp ins(%a : tensor<16xf32>) outs(%e : tensor<16xf32>) -> tensor<16xf32>
    %1 = linalg.tanh ins(%0 : tensor<16xf32>) outs(%e : tensor<16xf32>) -> tensor<16xf32>
    "fusion.yield"(%0, %1) {operandSegmentSizes = array<i32: 1, 1, 0, 0, 0, 0, 0, 0>} : (tensor<16xf32>, tensor<16xf32>) -> ()
  }) {kind = "elementwise", label = "group0", operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 1, 0, 0, 0, 0, 0, 0>} : (tensor<16xf32>) -> (tensor<16xf32>, tensor<16xf32>)
  return %g#0, %g#1 : tensor<16xf32>, tensor<16xf32>
}
