// RUN: braze-opt %s --split-input-file -p fusion-default-pipeline | FileCheck %s
// RUN: braze-opt %s --split-input-file -p fusion-form-groups | not FileCheck %s > /dev/null 2>&1

#id = affine_map<(d0, d1) -> (d0, d1)>
#tr = affine_map<(d0, d1) -> (d1, d0)>

// A chain with a constant and a transpose becomes one linalg.generic with the bodies composed in order.
// CHECK-LABEL: func.func @chain
//       CHECK:   %[[C:.+]] = arith.constant 2.0
//       CHECK:   %[[R:.+]] = linalg.generic
//  CHECK-SAME:     ins(%{{.+}} : tensor<4x8xf32>)
//       CHECK:     %[[M:.+]] = arith.mulf %{{.+}}, %[[C]] : f32
//       CHECK:     %[[E:.+]] = math.exp %[[M]] : f32
//       CHECK:     linalg.yield %[[E]] : f32
//   CHECK-NOT:   linalg.generic
//   CHECK-NOT:   "fusion.group"
//       CHECK:   return %[[R]]
func.func @chain(%x: tensor<4x8xf32>) -> tensor<8x4xf32> {
  %c2 = arith.constant 2.0 : f32
  %e = tensor.empty() : tensor<4x8xf32>
  %et = tensor.empty() : tensor<8x4xf32>
  %0 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.mulf %in, %c2 : f32
    linalg.yield %r : f32
  } -> tensor<4x8xf32>
  %1 = linalg.transpose ins(%0 : tensor<4x8xf32>) outs(%et : tensor<8x4xf32>) permutation = [1, 0]
  %2 = linalg.exp ins(%1 : tensor<8x4xf32>) outs(%et : tensor<8x4xf32>) -> tensor<8x4xf32>
  return %2 : tensor<8x4xf32>
}

// -----

// Siblings become one multi-result linalg.generic reading their shared input once.
// CHECK-LABEL: func.func @siblings
//       CHECK:   %[[R:.+]]:2 = linalg.generic
//  CHECK-SAME:     ins(%{{.+}} : tensor<16xf32>)
//       CHECK:     math.exp
//       CHECK:     math.tanh
//       CHECK:   return %[[R]]#0, %[[R]]#1
func.func @siblings(%x: tensor<16xf32>) -> (tensor<16xf32>, tensor<16xf32>) {
  %e = tensor.empty() : tensor<16xf32>
  %1 = linalg.exp ins(%x : tensor<16xf32>) outs(%e : tensor<16xf32>) -> tensor<16xf32>
  %2 = linalg.tanh ins(%x : tensor<16xf32>) outs(%e : tensor<16xf32>) -> tensor<16xf32>
  return %1, %2 : tensor<16xf32>, tensor<16xf32>
}

// -----

// The fusion.unfused attributes left for fusion-report are gone after lowering (without the
// lowering they stay, and these checks fail: the second RUN line).
// CHECK-LABEL: func.func @matmul
//       CHECK:   linalg.matmul ins(
//       CHECK:   linalg.exp ins(
//   CHECK-NOT:   fusion.unfused
//       CHECK:   return
func.func @matmul(%a: tensor<4x8xf32>, %b: tensor<8x4xf32>, %c: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %0 = linalg.matmul ins(%a, %b : tensor<4x8xf32>, tensor<8x4xf32>) outs(%c : tensor<4x4xf32>) -> tensor<4x4xf32>
  %1 = linalg.exp ins(%0 : tensor<4x4xf32>) outs(%c : tensor<4x4xf32>) -> tensor<4x4xf32>
  return %1 : tensor<4x4xf32>
}
