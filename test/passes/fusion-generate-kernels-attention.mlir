// torch-mlir registers tm_tensor in the importer's context, not braze-opt's: the attention op is read
// as an unregistered op, which is all the pass needs (its name, operands and scale).
// RUN: braze-opt %s --allow-unregistered-dialect --split-input-file -p 'fusion-generate-kernels{target=sm_90 mode=on}' | FileCheck %s
// RUN: braze-opt %s --allow-unregistered-dialect --split-input-file -p 'fusion-generate-kernels{target=sm_90 mode=on fp32=off}' | FileCheck %s --check-prefix=OFF

// torch-mlir's causal mask (a generic of indices, materialized over [B, H, L, S]) is not read:
// the kernel masks keys past each query itself, and the mask's ops move into the kernel's body.
// CHECK-LABEL: func.func @causal
//       CHECK:   %[[R:.+]] = call @braze_kernel0(%collapsed, %collapsed_1, %collapsed_2) : (tensor<8x64x32xf32>, tensor<8x64x32xf32>, tensor<8x64x32xf32>) -> tensor<8x64x32xf32>
//   CHECK-NOT:   linalg.generic
//       CHECK:   tensor.expand_shape %[[R]]
//       CHECK: func.func private @braze_kernel0{{.+}}\22kind\22:\22attention\22,\22l\22:64,\22mask\22:\22causal\22{{.+}}\22precision\22:\22tf32x3\22,\22s\22:64,\22scale\22:0.17677669529663687
//       CHECK:   linalg.index 2
//       CHECK:   "tm_tensor.attention"
// With fp32=off float32 attention keeps IREE's kernel, and says why.
//         OFF:   "tm_tensor.attention"{{.+}}braze.kernel_skipped = "float32 attention with fp32=off"
#map = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
func.func @causal(%arg0: tensor<2x4x64x32xf32>, %arg1: tensor<2x4x64x32xf32>, %arg2: tensor<2x4x64x32xf32>) -> tensor<2x4x64x32xf32> {
  %cst = arith.constant 0.000000e+00 : f32
  %cst_0 = arith.constant 0xFF800000 : f32
  %0 = tensor.empty() : tensor<2x4x64x64xf32>
  %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<2x4x64x64xf32>) -> tensor<2x4x64x64xf32>
  %2 = linalg.generic {indexing_maps = [#map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} outs(%1 : tensor<2x4x64x64xf32>) {
  ^bb0(%out: f32):
    %6 = linalg.index 2 : index
    %7 = linalg.index 3 : index
    %8 = arith.cmpi sge, %6, %7 : index
    %9 = arith.select %8, %cst, %cst_0 : f32
    linalg.yield %9 : f32
  } -> tensor<2x4x64x64xf32>
  %collapsed = tensor.collapse_shape %arg0 [[0, 1], [2], [3]] : tensor<2x4x64x32xf32> into tensor<8x64x32xf32>
  %collapsed_1 = tensor.collapse_shape %arg1 [[0, 1], [2], [3]] : tensor<2x4x64x32xf32> into tensor<8x64x32xf32>
  %collapsed_2 = tensor.collapse_shape %arg2 [[0, 1], [2], [3]] : tensor<2x4x64x32xf32> into tensor<8x64x32xf32>
  %collapsed_3 = tensor.collapse_shape %2 [[0, 1], [2], [3]] : tensor<2x4x64x64xf32> into tensor<8x64x64xf32>
  %3 = tensor.empty() : tensor<8x64x32xf32>
  %4 = linalg.fill ins(%cst : f32) outs(%3 : tensor<8x64x32xf32>) -> tensor<8x64x32xf32>
  %5 = "tm_tensor.attention"(%collapsed, %collapsed_1, %collapsed_2, %collapsed_3, %4) <{operandSegmentSizes = array<i32: 4, 1>}> : (tensor<8x64x32xf32>, tensor<8x64x32xf32>, tensor<8x64x32xf32>, tensor<8x64x64xf32>, tensor<8x64x32xf32>) -> tensor<8x64x32xf32>
  %expanded = tensor.expand_shape %5 [[0, 1], [2], [3]] output_shape [2, 4, 64, 32] : tensor<8x64x32xf32> into tensor<2x4x64x32xf32>
  return %expanded : tensor<2x4x64x32xf32>
}

// -----

// A bf16 mask broadcast over heads is read where it is, at stride 0 over the heads: the
// kernel takes the [B, 1, L, S] tensor, not the [B*H, L, S] copy.
// CHECK-LABEL: func.func @broadcast_mask
//       CHECK:   call @braze_kernel0(%collapsed, %collapsed_0, %collapsed_1, %arg3) : (tensor<8x64x32xbf16>, tensor<8x48x32xbf16>, tensor<8x48x32xbf16>, tensor<2x1x64x48xbf16>) -> tensor<8x64x32xbf16>
//       CHECK: func.func private @braze_kernel0{{.+}}\22heads\22:4,{{.+}}\22mask\22:\22add\22,\22mask_dtype\22:\22bf16\22,\22mask_strides\22:[3072,0,48,1]{{.+}}\22scale\22:0.5
#bmap = affine_map<(d0, d1, d2, d3) -> (d0, 0, d2, d3)>
#imap = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
func.func @broadcast_mask(%arg0: tensor<2x4x64x32xbf16>, %arg1: tensor<2x4x48x32xbf16>, %arg2: tensor<2x4x48x32xbf16>, %arg3: tensor<2x1x64x48xbf16>) -> tensor<2x4x64x32xbf16> {
  %cst = arith.constant 0.000000e+00 : bf16
  %0 = tensor.empty() : tensor<2x4x64x48xbf16>
  %1 = linalg.generic {indexing_maps = [#bmap, #imap], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%arg3 : tensor<2x1x64x48xbf16>) outs(%0 : tensor<2x4x64x48xbf16>) {
  ^bb0(%in: bf16, %out: bf16):
    linalg.yield %in : bf16
  } -> tensor<2x4x64x48xbf16>
  %collapsed = tensor.collapse_shape %arg0 [[0, 1], [2], [3]] : tensor<2x4x64x32xbf16> into tensor<8x64x32xbf16>
  %collapsed_0 = tensor.collapse_shape %arg1 [[0, 1], [2], [3]] : tensor<2x4x48x32xbf16> into tensor<8x48x32xbf16>
  %collapsed_1 = tensor.collapse_shape %arg2 [[0, 1], [2], [3]] : tensor<2x4x48x32xbf16> into tensor<8x48x32xbf16>
  %collapsed_2 = tensor.collapse_shape %1 [[0, 1], [2], [3]] : tensor<2x4x64x48xbf16> into tensor<8x64x48xbf16>
  %2 = tensor.empty() : tensor<8x64x32xbf16>
  %3 = linalg.fill ins(%cst : bf16) outs(%2 : tensor<8x64x32xbf16>) -> tensor<8x64x32xbf16>
  %4 = "tm_tensor.attention"(%collapsed, %collapsed_0, %collapsed_1, %collapsed_2, %3) <{operandSegmentSizes = array<i32: 4, 1>, scale = 5.000000e-01 : f64}> : (tensor<8x64x32xbf16>, tensor<8x48x32xbf16>, tensor<8x48x32xbf16>, tensor<8x64x48xbf16>, tensor<8x64x32xbf16>) -> tensor<8x64x32xbf16>
  %expanded = tensor.expand_shape %4 [[0, 1], [2], [3]] output_shape [2, 4, 64, 32] : tensor<8x64x32xbf16> into tensor<2x4x64x32xbf16>
  return %expanded : tensor<2x4x64x32xbf16>
}
