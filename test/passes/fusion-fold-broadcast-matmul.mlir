// RUN: braze-opt %s --split-input-file -p fusion-fold-broadcast-matmul | FileCheck %s

#bcast = affine_map<(d0, d1, d2) -> (d1, d2)>
#id = affine_map<(d0, d1, d2) -> (d0, d1, d2)>

// A batch_matmul against one matrix broadcast over the batch becomes one [B*M, K] x [K, N] matmul.
// CHECK-LABEL: func.func @broadcast_rhs
//       CHECK:   %[[A:.+]] = tensor.collapse_shape %arg0 {{\[\[}}0, 1], [2]] : tensor<4x8x16xf32> into tensor<32x16xf32>
//       CHECK:   %[[C:.+]] = tensor.collapse_shape %{{.+}} {{\[\[}}0, 1], [2]] : tensor<4x8x32xf32> into tensor<32x32xf32>
//       CHECK:   %[[M:.+]] = linalg.matmul ins(%[[A]], %arg1 : tensor<32x16xf32>, tensor<16x32xf32>) outs(%[[C]] : tensor<32x32xf32>)
//       CHECK:   %[[E:.+]] = tensor.expand_shape %[[M]] {{\[\[}}0, 1], [2]] output_shape [4, 8, 32]
//   CHECK-NOT:   linalg.batch_matmul
//       CHECK:   return %[[E]]
func.func @broadcast_rhs(%a: tensor<4x8x16xf32>, %w: tensor<16x32xf32>, %init: tensor<4x8x32xf32>) -> tensor<4x8x32xf32> {
  %e = tensor.empty() : tensor<4x16x32xf32>
  %w3 = linalg.generic {indexing_maps = [#bcast, #id], iterator_types = ["parallel", "parallel", "parallel"]} ins(%w : tensor<16x32xf32>) outs(%e : tensor<4x16x32xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<4x16x32xf32>
  %0 = linalg.batch_matmul ins(%a, %w3 : tensor<4x8x16xf32>, tensor<4x16x32xf32>) outs(%init : tensor<4x8x32xf32>) -> tensor<4x8x32xf32>
  return %0 : tensor<4x8x32xf32>
}

// -----

// A batch_matmul of two real batches (attention scores) is left alone.
// CHECK-LABEL: func.func @true_batch
//       CHECK:   linalg.batch_matmul
//   CHECK-NOT:   linalg.matmul
func.func @true_batch(%a: tensor<4x8x16xf32>, %b: tensor<4x16x32xf32>, %init: tensor<4x8x32xf32>) -> tensor<4x8x32xf32> {
  %0 = linalg.batch_matmul ins(%a, %b : tensor<4x8x16xf32>, tensor<4x16x32xf32>) outs(%init : tensor<4x8x32xf32>) -> tensor<4x8x32xf32>
  return %0 : tensor<4x8x32xf32>
}

// -----

#bcast_k = affine_map<(d0, d1, d2) -> (d0, d2)>
#id = affine_map<(d0, d1, d2) -> (d0, d1, d2)>

// A broadcast along another dimension is not one matrix per batch: left alone.
// CHECK-LABEL: func.func @other_broadcast
//       CHECK:   linalg.batch_matmul
func.func @other_broadcast(%a: tensor<4x8x16xf32>, %w: tensor<4x32xf32>, %init: tensor<4x8x32xf32>) -> tensor<4x8x32xf32> {
  %e = tensor.empty() : tensor<4x16x32xf32>
  %w3 = linalg.generic {indexing_maps = [#bcast_k, #id], iterator_types = ["parallel", "parallel", "parallel"]} ins(%w : tensor<4x32xf32>) outs(%e : tensor<4x16x32xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<4x16x32xf32>
  %0 = linalg.batch_matmul ins(%a, %w3 : tensor<4x8x16xf32>, tensor<4x16x32xf32>) outs(%init : tensor<4x8x32xf32>) -> tensor<4x8x32xf32>
  return %0 : tensor<4x8x32xf32>
}
