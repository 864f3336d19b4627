// RUN: braze-opt %s --split-input-file -p 'fusion-split-k{target=sm_90}' | FileCheck %s
// RUN: braze-opt %s --split-input-file -p 'fusion-split-k{target=sm_90 split=1}' | FileCheck %s --check-prefix=NEVER

// 256 x 1024 x 4096: 64 output tiles of 64 x 64 for 132 SMs, so K is split 8 ways: A copied to
// [8, 256, 512], B viewed as [8, 512, 1024], one batch_matmul, and the 8 partial sums added to init.
// CHECK-LABEL: func.func @mlp_down
//       CHECK:   %[[A1:.+]] = tensor.expand_shape %arg0 {{\[\[}}0], [1, 2]] output_shape [256, 8, 512]
//       CHECK:   %[[A3:.+]] = linalg.transpose ins(%[[A1]] : tensor<256x8x512xf32>) outs(%{{.+}} : tensor<8x256x512xf32>) permutation = [1, 0, 2]
//       CHECK:   %[[B3:.+]] = tensor.expand_shape %arg1 {{\[\[}}0, 1], [2]] output_shape [8, 512, 1024]
//       CHECK:   %[[P:.+]] = linalg.batch_matmul ins(%[[A3]], %[[B3]] : tensor<8x256x512xf32>, tensor<8x512x1024xf32>)
//       CHECK:   linalg.generic {{.+}} iterator_types = ["parallel", "parallel", "reduction"]} ins(%[[P]] : tensor<8x256x1024xf32>) outs(%arg2 : tensor<256x1024xf32>)
//   CHECK-NOT:   linalg.matmul
// NEVER-LABEL: func.func @mlp_down
//       NEVER:   linalg.matmul
//   NEVER-NOT:   linalg.batch_matmul
func.func @mlp_down(%a: tensor<256x4096xf32>, %b: tensor<4096x1024xf32>, %init: tensor<256x1024xf32>) -> tensor<256x1024xf32> {
  %0 = linalg.matmul ins(%a, %b : tensor<256x4096xf32>, tensor<4096x1024xf32>) outs(%init : tensor<256x1024xf32>) -> tensor<256x1024xf32>
  return %0 : tensor<256x1024xf32>
}

// -----

// A transformer's FF2 (1024 x 768 x 3072) has 192 output tiles: not split.
// CHECK-LABEL: func.func @ff2
//       CHECK:   linalg.matmul
//   CHECK-NOT:   linalg.batch_matmul
func.func @ff2(%a: tensor<1024x3072xf32>, %b: tensor<3072x768xf32>, %init: tensor<1024x768xf32>) -> tensor<1024x768xf32> {
  %0 = linalg.matmul ins(%a, %b : tensor<1024x3072xf32>, tensor<3072x768xf32>) outs(%init : tensor<1024x768xf32>) -> tensor<1024x768xf32>
  return %0 : tensor<1024x768xf32>
}
