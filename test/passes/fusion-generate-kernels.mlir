// RUN: braze-opt %s --split-input-file -p 'fusion-generate-kernels{target=sm_90 mode=on}' | FileCheck %s
// RUN: braze-opt %s --split-input-file -p 'fusion-generate-kernels{target=sm_90 mode=off}' | FileCheck %s --check-prefix=OFF

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>
#v = affine_map<(d0) -> (d0)>

// A bf16 Linear as torch-mlir writes it (extf of x, extf of the transposed weight, an f32
// matmul from zero), then the bias (itself widened from bf16), the cast back and a ReLU: one
// call; the function keeps the same ops and carries the kernel's spec, the bias read as bf16.
// CHECK-LABEL: func.func @linear_relu
//       CHECK:   %[[R:.+]] = call @braze_kernel0(%arg0, %arg1, %arg2) : (tensor<64x32xbf16>, tensor<48x32xbf16>, tensor<48xbf16>) -> tensor<64x48xbf16>
//   CHECK-NOT:   linalg.matmul
//       CHECK:   return %[[R]]
//       CHECK: func.func private @braze_kernel0({{.+}}) -> tensor<64x48xbf16> attributes {braze.kernel = "{{.+}}b_layout\22:\22nk{{.+}}\22inputs\22:[{\22access\22:\22row\22,\22dtype\22:\22bf16\22}]{{.+}}[\22%0\22,\22addf\22,[\22acc\22,\22in0\22],\22f32\22,null],[\22%1\22,\22truncf\22,[\22%0\22],\22bf16\22,null],[\22%2\22,\22maximumf\22,[\22%1\22,0.0],\22bf16\22,null]{{.+}}\22result\22:\22%2\22
//       CHECK:   linalg.transpose
//       CHECK:   linalg.matmul
//       CHECK:   arith.maximumf
// OFF-LABEL: func.func @linear_relu
//       OFF:   linalg.matmul
//   OFF-NOT:   call
func.func @linear_relu(%x: tensor<64x32xbf16>, %w: tensor<48x32xbf16>, %b: tensor<48xbf16>) -> tensor<64x48xbf16> {
  %zero = arith.constant 0.0 : f32
  %zero16 = arith.constant 0.0 : bf16
  %et = tensor.empty() : tensor<32x48xbf16>
  %wt = linalg.transpose ins(%w : tensor<48x32xbf16>) outs(%et : tensor<32x48xbf16>) permutation = [1, 0]
  %ex = tensor.empty() : tensor<64x32xf32>
  %x32 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<64x32xbf16>) outs(%ex : tensor<64x32xf32>) {
  ^bb0(%in: bf16, %out: f32):
    %e = arith.extf %in : bf16 to f32
    linalg.yield %e : f32
  } -> tensor<64x32xf32>
  %ew = tensor.empty() : tensor<32x48xf32>
  %w32 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%wt : tensor<32x48xbf16>) outs(%ew : tensor<32x48xf32>) {
  ^bb0(%in: bf16, %out: f32):
    %e = arith.extf %in : bf16 to f32
    linalg.yield %e : f32
  } -> tensor<32x48xf32>
  %eb = tensor.empty() : tensor<48xf32>
  %b32 = linalg.generic {indexing_maps = [#v, #v], iterator_types = ["parallel"]} ins(%b : tensor<48xbf16>) outs(%eb : tensor<48xf32>) {
  ^bb0(%in: bf16, %out: f32):
    %e = arith.extf %in : bf16 to f32
    linalg.yield %e : f32
  } -> tensor<48xf32>
  %ec = tensor.empty() : tensor<64x48xf32>
  %init = linalg.fill ins(%zero : f32) outs(%ec : tensor<64x48xf32>) -> tensor<64x48xf32>
  %mm = linalg.matmul ins(%x32, %w32 : tensor<64x32xf32>, tensor<32x48xf32>) outs(%init : tensor<64x48xf32>) -> tensor<64x48xf32>
  %biased = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]} ins(%mm, %b32 : tensor<64x48xf32>, tensor<48xf32>) outs(%ec : tensor<64x48xf32>) {
  ^bb0(%in: f32, %bias: f32, %out: f32):
    %s = arith.addf %in, %bias : f32
    linalg.yield %s : f32
  } -> tensor<64x48xf32>
  %e16 = tensor.empty() : tensor<64x48xbf16>
  %narrow = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%biased : tensor<64x48xf32>) outs(%e16 : tensor<64x48xbf16>) {
  ^bb0(%in: f32, %out: bf16):
    %t = arith.truncf %in : f32 to bf16
    linalg.yield %t : bf16
  } -> tensor<64x48xbf16>
  %relu = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%narrow : tensor<64x48xbf16>) outs(%e16 : tensor<64x48xbf16>) {
  ^bb0(%in: bf16, %out: bf16):
    %r = arith.maximumf %in, %zero16 : bf16
    linalg.yield %r : bf16
  } -> tensor<64x48xbf16>
  return %relu : tensor<64x48xbf16>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>

// The matmul's result has two readers: the kernel stores the f32 accumulator and both
// readers stay outside.
// CHECK-LABEL: func.func @two_readers
//       CHECK:   %[[C:.+]] = call @braze_kernel0(%arg0, %arg1) : (tensor<16x32xf16>, tensor<32x16xf16>) -> tensor<16x16xf32>
//       CHECK:   linalg.generic {{.+}} ins(%[[C]], %[[C]]
//       CHECK: func.func private @braze_kernel0{{.+}}b_layout\22:\22kn{{.+}}\22ops\22:[]{{.+}}\22result\22:\22acc\22
func.func @two_readers(%a: tensor<16x32xf16>, %b: tensor<32x16xf16>) -> (tensor<16x16xf32>, tensor<16x16xf32>) {
  %zero = arith.constant 0.0 : f32
  %ea = tensor.empty() : tensor<16x32xf32>
  %a32 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%a : tensor<16x32xf16>) outs(%ea : tensor<16x32xf32>) {
  ^bb0(%in: f16, %out: f32):
    %e = arith.extf %in : f16 to f32
    linalg.yield %e : f32
  } -> tensor<16x32xf32>
  %eb = tensor.empty() : tensor<32x16xf32>
  %b32 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%b : tensor<32x16xf16>) outs(%eb : tensor<32x16xf32>) {
  ^bb0(%in: f16, %out: f32):
    %e = arith.extf %in : f16 to f32
    linalg.yield %e : f32
  } -> tensor<32x16xf32>
  %ec = tensor.empty() : tensor<16x16xf32>
  %init = linalg.fill ins(%zero : f32) outs(%ec : tensor<16x16xf32>) -> tensor<16x16xf32>
  %mm = linalg.matmul ins(%a32, %b32 : tensor<16x32xf32>, tensor<32x16xf32>) outs(%init : tensor<16x16xf32>) -> tensor<16x16xf32>
  %sq = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%mm, %mm : tensor<16x16xf32>, tensor<16x16xf32>) outs(%ec : tensor<16x16xf32>) {
  ^bb0(%x: f32, %y: f32, %out: f32):
    %p = arith.mulf %x, %y : f32
    linalg.yield %p : f32
  } -> tensor<16x16xf32>
  return %mm, %sq : tensor<16x16xf32>, tensor<16x16xf32>
}

// -----

// float32 with B stored [K, N] keeps IREE's matmul, and says why.
// CHECK-LABEL: func.func @float32
//       CHECK:   linalg.matmul {braze.kernel_skipped = "float32 B stored [K, N]: TF32 kernels read it 5x slower than K-major (IREE's matmul)"}
//   CHECK-NOT:   call
func.func @float32(%a: tensor<16x32xf32>, %b: tensor<32x16xf32>) -> tensor<16x16xf32> {
  %zero = arith.constant 0.0 : f32
  %ec = tensor.empty() : tensor<16x16xf32>
  %init = linalg.fill ins(%zero : f32) outs(%ec : tensor<16x16xf32>) -> tensor<16x16xf32>
  %mm = linalg.matmul ins(%a, %b : tensor<16x32xf32>, tensor<32x16xf32>) outs(%init : tensor<16x16xf32>) -> tensor<16x16xf32>
  return %mm : tensor<16x16xf32>
}

// -----

#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>

// A padded float32 convolution of 32 input channels and its ReLU become one implicit-GEMM kernel
// reading the unpadded input (padding 1 in the spec), float32-accurate (tf32x3) although TF32 is
// allowed: at 2.2 flop/B it is memory-bound, where cuDNN stays in float32 (TF32X3_MAX_INTENSITY);
// with conv-fp32=im2col it is left alone.
// RUN: braze-opt %s --split-input-file -p 'fusion-generate-kernels{target=sm_90 mode=on conv-fp32=im2col}' | FileCheck %s --check-prefix=IM2COL
// CHECK-LABEL: func.func @conv_relu
//       CHECK:   call @braze_kernel0(%arg0, %arg1) : (tensor<1x32x6x6xf32>, tensor<4x32x3x3xf32>) -> tensor<1x4x3x3xf32>
//       CHECK: func.func private @braze_kernel0{{.+}}\22conv\22:[1,32,6,6,3,3,2,2,1,1,1,1,3,3]{{.+}}\22precision\22:\22tf32x3\22
//       CHECK:   tensor.pad
//       CHECK:   linalg.conv_2d_nchw_fchw
// IM2COL-LABEL: func.func @conv_relu
//       IM2COL:   linalg.conv_2d_nchw_fchw
//   IM2COL-NOT:   call
func.func @conv_relu(%x: tensor<1x32x6x6xf32>, %w: tensor<4x32x3x3xf32>) -> tensor<1x4x3x3xf32> {
  %zero = arith.constant 0.0 : f32
  %padded = tensor.pad %x low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : f32
  } : tensor<1x32x6x6xf32> to tensor<1x32x8x8xf32>
  %e = tensor.empty() : tensor<1x4x3x3xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<1x4x3x3xf32>) -> tensor<1x4x3x3xf32>
  %c = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<2> : vector<2xi64>} ins(%padded, %w : tensor<1x32x8x8xf32>, tensor<4x32x3x3xf32>) outs(%init : tensor<1x4x3x3xf32>) -> tensor<1x4x3x3xf32>
  %r = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%c : tensor<1x4x3x3xf32>) outs(%e : tensor<1x4x3x3xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.maximumf %in, %zero : f32
    linalg.yield %m : f32
  } -> tensor<1x4x3x3xf32>
  return %r : tensor<1x4x3x3xf32>
}

// -----

// A float32 convolution of fewer than 32 input channels a group runs float32-accurate (tf32x3) even
// where TF32 is allowed, as cuDNN runs it in float32.
// CHECK-LABEL: func.func @conv_few_channels
//       CHECK: func.func private @braze_kernel0{{.+}}\22conv\22:[1,2,6,6,3,3,1,1,1,1,0,0,4,4]{{.+}}\22precision\22:\22tf32x3\22
func.func @conv_few_channels(%x: tensor<1x2x6x6xf32>, %w: tensor<4x2x3x3xf32>) -> tensor<1x4x4x4xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x4x4x4xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
  %c = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%x, %w : tensor<1x2x6x6xf32>, tensor<4x2x3x3xf32>) outs(%init : tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
  return %c : tensor<1x4x4x4xf32>
}
