// RUN: braze-opt %s --split-input-file -p fusion-conv-to-matmul | FileCheck %s
// RUN: braze-opt %s --split-input-file -p 'fusion-conv-to-matmul,fusion-configure-kernels{target=sm_90}' | FileCheck %s --check-prefix=TILED
// RUN: braze-opt %s --split-input-file -p 'fusion-conv-to-matmul{target=sm_90}' | FileCheck %s --check-prefix=TARGET
// RUN: braze-opt %s --split-input-file -p 'fusion-conv-to-matmul{direct-pixels=16}' | FileCheck %s --check-prefix=DIRECT

// direct-pixels=16 (the CPU pipeline on AVX-512): unit-stride convolutions with 16 or more output
// pixels an image stay IREE's direct convolution; strided ones still become im2col + matmul.

// A strided, dilated 3x3 convolution: im2col rows (c, kh, kw) of columns (n, oh, ow), one
// [F, C*KH*KW] x [C*KH*KW, N*OH*OW] matmul, and the product back in NCHW plus the bias init.
// CHECK-DAG:   #[[IM2COL:.+]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d3, d0, d4 * 2 + d1 * 2, d5 * 2 + d2 * 2)>
// CHECK-DAG:   #[[BACK:.+]] = affine_map<(d0, d1, d2, d3) -> (d1, d0, d2, d3)>
// CHECK-LABEL: func.func @conv
//       CHECK:   %[[COL:.+]] = linalg.generic {indexing_maps = [#[[IM2COL]], {{.+}}]{{.*}} ins(%arg0 : tensor<2x4x13x13xf32>) outs(%{{.+}} : tensor<4x3x3x2x5x5xf32>) attrs = {braze.im2col}
//       CHECK:   %[[B:.+]] = tensor.collapse_shape %[[COL]] {{\[\[}}0, 1, 2], [3, 4, 5]] : tensor<4x3x3x2x5x5xf32> into tensor<36x50xf32>
//       CHECK:   %[[A:.+]] = tensor.collapse_shape %arg1 {{\[\[}}0], [1, 2, 3]] : tensor<6x4x3x3xf32> into tensor<6x36xf32>
//       CHECK:   %[[P:.+]] = linalg.matmul ins(%[[A]], %[[B]] : tensor<6x36xf32>, tensor<36x50xf32>)
//       CHECK:   %[[P4:.+]] = tensor.expand_shape %[[P]] {{\[\[}}0], [1, 2, 3]] output_shape [6, 2, 5, 5]
//       CHECK:   %[[O:.+]] = linalg.generic {indexing_maps = [#[[BACK]], {{.+}}]{{.*}} ins(%[[P4]], %arg2 : tensor<6x2x5x5xf32>, tensor<2x6x5x5xf32>)
//  CHECK-NEXT:   ^bb0
//  CHECK-NEXT:     arith.addf
//   CHECK-NOT:   linalg.conv_2d_nchw_fchw
//       CHECK:   return %[[O]]
// TILED-LABEL: func.func @conv
//       TILED:   attrs = {braze.im2col, braze.kernel_config = "workgroup=1,1,3,2,5,5 thread=1,1,1,1,1,1 threads=150"}
// DIRECT-LABEL: func.func @conv
//   DIRECT-NOT:   linalg.conv_2d_nchw_fchw
//       DIRECT:   braze.im2col
//   DIRECT-NOT:   linalg.conv_2d_nchw_fchw
//       DIRECT:   return
func.func @conv(%x: tensor<2x4x13x13xf32>, %w: tensor<6x4x3x3xf32>, %init: tensor<2x6x5x5xf32>) -> tensor<2x6x5x5xf32> {
  %0 = linalg.conv_2d_nchw_fchw {dilations = dense<2> : vector<2xi64>, strides = dense<2> : vector<2xi64>} ins(%x, %w : tensor<2x4x13x13xf32>, tensor<6x4x3x3xf32>) outs(%init : tensor<2x6x5x5xf32>) -> tensor<2x6x5x5xf32>
  return %0 : tensor<2x6x5x5xf32>
}

// -----

// bf16 operands keep the convolution's f32 accumulator in the matmul.
// CHECK-LABEL: func.func @bf16
//       CHECK:   linalg.matmul ins(%{{.+}}, %{{.+}} : tensor<8x36xbf16>, tensor<36x32xbf16>) outs(%{{.+}} : tensor<8x32xf32>)
// DIRECT-LABEL: func.func @bf16
//       DIRECT:   linalg.conv_2d_nchw_fchw
//   DIRECT-NOT:   braze.im2col
func.func @bf16(%x: tensor<2x4x6x6xbf16>, %w: tensor<8x4x3x3xbf16>, %init: tensor<2x8x4x4xf32>) -> tensor<2x8x4x4xf32> {
  %0 = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%x, %w : tensor<2x4x6x6xbf16>, tensor<8x4x3x3xbf16>) outs(%init : tensor<2x8x4x4xf32>) -> tensor<2x8x4x4xf32>
  return %0 : tensor<2x8x4x4xf32>
}

// -----

// Dynamic shapes are left alone.
// CHECK-LABEL: func.func @dynamic
//       CHECK:   linalg.conv_2d_nchw_fchw
func.func @dynamic(%x: tensor<?x4x6x6xf32>, %w: tensor<8x4x3x3xf32>, %init: tensor<?x8x4x4xf32>) -> tensor<?x8x4x4xf32> {
  %0 = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%x, %w : tensor<?x4x6x6xf32>, tensor<8x4x3x3xf32>) outs(%init : tensor<?x8x4x4xf32>) -> tensor<?x8x4x4xf32>
  return %0 : tensor<?x8x4x4xf32>
}

// -----

// Conv2d's zero padding (torch-mlir's tensor.pad of H and W) is read by the im2col copy itself:
// positions in the padding give 0, and the padded copy of the input is gone.
// CHECK-LABEL: func.func @padded
//   CHECK-NOT:   tensor.pad
//       CHECK:   linalg.generic {{.+}} outs(%{{.+}} : tensor<4x3x3x2x6x6xf32>) attrs = {braze.im2col}
//       CHECK:     affine.apply #{{.+}}(%{{.+}}, %{{.+}})
//       CHECK:     %[[V:.+]] = tensor.extract %arg0[
//       CHECK:     arith.select %{{.+}}, %[[V]], %{{.+}} : f32
//       CHECK:   linalg.matmul
// DIRECT-LABEL: func.func @padded
//       DIRECT:   linalg.conv_2d_nchw_fchw
//   DIRECT-NOT:   braze.im2col
//       DIRECT:   return
func.func @padded(%x: tensor<2x4x6x6xf32>, %w: tensor<8x4x3x3xf32>, %init: tensor<2x8x6x6xf32>) -> tensor<2x8x6x6xf32> {
  %cst = arith.constant 0.000000e+00 : f32
  %padded = tensor.pad %x low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%a: index, %b: index, %c: index, %d: index):
    tensor.yield %cst : f32
  } : tensor<2x4x6x6xf32> to tensor<2x4x8x8xf32>
  %0 = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%padded, %w : tensor<2x4x8x8xf32>, tensor<8x4x3x3xf32>) outs(%init : tensor<2x8x6x6xf32>) -> tensor<2x8x6x6xf32>
  return %0 : tensor<2x8x6x6xf32>
}

// -----

// With a target, a convolution whose matmul gets no tiles stays a convolution (IREE's own
// kernel for it is better than an untiled matmul) ...
// TARGET-LABEL: func.func @untiled_bf16_3x3
//       TARGET:   linalg.conv_2d_nchw_fchw
//   TARGET-NOT:   linalg.matmul
//       TARGET:   return
// CHECK-LABEL: func.func @untiled_bf16_3x3
//       CHECK:   linalg.matmul
func.func @untiled_bf16_3x3(%x: tensor<2x4x6x6xbf16>, %w: tensor<8x4x3x3xbf16>, %init: tensor<2x8x4x4xf32>) -> tensor<2x8x4x4xf32> {
  %0 = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%x, %w : tensor<2x4x6x6xbf16>, tensor<8x4x3x3xbf16>) outs(%init : tensor<2x8x4x4xf32>) -> tensor<2x8x4x4xf32>
  return %0 : tensor<2x8x4x4xf32>
}

// -----

// ... except a 16-bit 1x1 convolution, which IREE 3.13 miscompiles on CUDA: it becomes a matmul
// with or without tiles.
// TARGET-LABEL: func.func @untiled_bf16_1x1
//   TARGET-NOT:   linalg.conv_2d_nchw_fchw
//       TARGET:   linalg.matmul ins(%{{.+}}, %{{.+}} : tensor<96x16xbf16>, tensor<16x512xbf16>) outs(%{{.+}} : tensor<96x512xf32>)
// With direct-pixels, a 1x1 convolution is a matmul all the same (its im2col is its input as it
// is: 1.14 ms as a matmul against 3.6 direct at 64->256 on 56x56, bench/NOTES.md §39).
// DIRECT-LABEL: func.func @untiled_bf16_1x1
//   DIRECT-NOT:   linalg.conv_2d_nchw_fchw
//       DIRECT:   linalg.matmul
func.func @untiled_bf16_1x1(%x: tensor<2x16x16x16xbf16>, %w: tensor<96x16x1x1xbf16>, %init: tensor<2x96x16x16xf32>) -> tensor<2x96x16x16xf32> {
  %0 = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%x, %w : tensor<2x16x16x16xbf16>, tensor<96x16x1x1xbf16>) outs(%init : tensor<2x96x16x16xf32>) -> tensor<2x96x16x16xf32>
  return %0 : tensor<2x96x16x16xf32>
}

// -----

// A grouped convolution (torch-mlir's conv_2d_ngchw_gfchw) with grouped=true (the CPU pipeline):
// one im2col copy [G, C, KH, KW, N, OH, OW] and one batch matmul over the groups, the result back
// in [N, G, F, OH, OW] plus the init; without the option it stays a convolution.
// RUN: braze-opt %s --split-input-file -p 'fusion-conv-to-matmul{grouped=true}' | FileCheck %s --check-prefix=GROUPED
// GROUPED-LABEL: func.func @grouped
//   GROUPED-NOT:   linalg.conv_2d_ngchw_gfchw
//       GROUPED:   linalg.generic {{.+}} outs(%{{.+}} : tensor<2x3x3x3x2x4x4xf32>) attrs = {braze.im2col}
//       GROUPED:   tensor.collapse_shape {{.+}} into tensor<2x27x32xf32>
//       GROUPED:   tensor.collapse_shape {{.+}} into tensor<2x5x27xf32>
//       GROUPED:   linalg.batch_matmul ins(%{{.+}}, %{{.+}} : tensor<2x5x27xf32>, tensor<2x27x32xf32>)
//       GROUPED:   tensor.expand_shape {{.+}} into tensor<2x5x2x4x4xf32>
//       GROUPED:   arith.addf
// CHECK-LABEL: func.func @grouped
//       CHECK:   linalg.conv_2d_ngchw_gfchw
func.func @grouped(%x: tensor<2x2x3x9x9xf32>, %w: tensor<2x5x3x3x3xf32>, %init: tensor<2x2x5x4x4xf32>) -> tensor<2x2x5x4x4xf32> {
  %0 = linalg.conv_2d_ngchw_gfchw {dilations = dense<1> : vector<2xi64>, strides = dense<2> : vector<2xi64>} ins(%x, %w : tensor<2x2x3x9x9xf32>, tensor<2x5x3x3x3xf32>) outs(%init : tensor<2x2x5x4x4xf32>) -> tensor<2x2x5x4x4xf32>
  return %0 : tensor<2x2x5x4x4xf32>
}
