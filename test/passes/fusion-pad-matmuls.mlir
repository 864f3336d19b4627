// RUN: braze-opt %s --split-input-file -p 'fusion-pad-matmuls{target=sm_90},fusion-configure-kernels{target=sm_90}' | FileCheck %s
// RUN: braze-opt %s --split-input-file -p fusion-pad-matmuls | FileCheck %s --check-prefix=NOTARGET

// A classifier's 8 x 1000 x 512 matmul: no tile divides 8 or 1000, so it is padded to
// 32 x 1024 x 512 with zeros, tiled, and the 8 x 1000 corner is added to the init (a 1-D
// kernel after fusion-configure-kernels).
// CHECK-LABEL: func.func @classifier
//       CHECK:   %[[A:.+]] = tensor.pad %arg0 low[0, 0] high[24, 0]
//       CHECK:   : tensor<8x512xf32> to tensor<32x512xf32>
//       CHECK:   %[[B:.+]] = tensor.pad %arg1 low[0, 0] high[0, 24]
//       CHECK:   : tensor<512x1000xf32> to tensor<512x1024xf32>
//       CHECK:   %[[P:.+]] = linalg.matmul {braze.matmul_config = "simt {{.+}}"} ins(%[[A]], %[[B]] : tensor<32x512xf32>, tensor<512x1024xf32>)
//       CHECK:   %[[S:.+]] = tensor.extract_slice %[[P]][0, 0] [8, 1000] [1, 1]
//       CHECK:   %[[S1:.+]] = tensor.collapse_shape %[[S]]
//       CHECK:   linalg.generic {{.+}} ins(%[[S1]], %{{.+}} : tensor<8000xf32>, tensor<8000xf32>)
//       CHECK:     arith.addf
// NOTARGET-LABEL: func.func @classifier
//   NOTARGET-NOT:   tensor.pad
func.func @classifier(%a: tensor<8x512xf32>, %b: tensor<512x1000xf32>, %init: tensor<8x1000xf32>) -> tensor<8x1000xf32> {
  %0 = linalg.matmul ins(%a, %b : tensor<8x512xf32>, tensor<512x1000xf32>) outs(%init : tensor<8x1000xf32>) -> tensor<8x1000xf32>
  return %0 : tensor<8x1000xf32>
}

// -----

// A matmul a tile divides is left as it is.
// CHECK-LABEL: func.func @divisible
//   CHECK-NOT:   tensor.pad
//       CHECK:   linalg.matmul {braze.matmul_config
func.func @divisible(%a: tensor<256x512xf32>, %b: tensor<512x1024xf32>, %init: tensor<256x1024xf32>) -> tensor<256x1024xf32> {
  %0 = linalg.matmul ins(%a, %b : tensor<256x512xf32>, tensor<512x1024xf32>) outs(%init : tensor<256x1024xf32>) -> tensor<256x1024xf32>
  return %0 : tensor<256x1024xf32>
}

// -----

// A matmul with a zero-size dimension has no work to tile: it is neither padded (from 0 columns
// to 32, it made an out-of-bounds slice) nor configured.
// CHECK-LABEL: func.func @zero_columns
//   CHECK-NOT:   tensor.pad
//       CHECK:   %[[M:.+]] = linalg.matmul ins(%arg0, %arg1 : tensor<4x8xf32>, tensor<8x0xf32>)
//   CHECK-NOT:   tensor.pad
//       CHECK:   return %[[M]]
func.func @zero_columns(%a: tensor<4x8xf32>, %b: tensor<8x0xf32>, %init: tensor<4x0xf32>) -> tensor<4x0xf32> {
  %0 = linalg.matmul ins(%a, %b : tensor<4x8xf32>, tensor<8x0xf32>) outs(%init : tensor<4x0xf32>) -> tensor<4x0xf32>
  return %0 : tensor<4x0xf32>
}
