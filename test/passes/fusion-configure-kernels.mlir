// RUN: braze-opt %s --split-input-file -p 'fusion-configure-kernels{target=sm_90}' | FileCheck %s
// RUN: braze-opt %s --split-input-file -p 'fusion-configure-kernels{target=sm_90 config=512:2:256}' | FileCheck %s --check-prefix=FORCED
// RUN: braze-opt %s --split-input-file -p 'fusion-configure-kernels' | FileCheck %s --check-prefix=NOTARGET
// RUN: braze-opt %s --split-input-file -p 'fusion-configure-kernels{target=sm_90 matmul-config=simt:64x32:16:4x2:16x16}' | FileCheck %s --check-prefix=MMFORCED

#id = affine_map<(d0, d1) -> (d0, d1)>

// A standalone 2-D float32 kernel becomes 1-D with the cost model's configuration (16-byte accesses: 4 x f32).
// CHECK-LABEL: func.func @standalone
//       CHECK:   %[[C:.+]] = tensor.collapse_shape %{{.+}} {{\[\[}}0, 1]] : tensor<64x32xf32> into tensor<2048xf32>
//       CHECK:   %[[G:.+]] = linalg.generic {{.*}}iterator_types = ["parallel"]{{.*}} ins(%[[C]] : tensor<2048xf32>)
//  CHECK-SAME:     braze.kernel_config = "workgroup=1024 thread=4 threads=256"
//       CHECK:     math.exp
//       CHECK:   %[[E:.+]] = tensor.expand_shape %[[G]] {{\[\[}}0, 1]] output_shape [64, 32]
//       CHECK:   return %[[E]]
// FORCED-LABEL: func.func @standalone
//       FORCED:   braze.kernel_config = "workgroup=512 thread=2 threads=256"
// NOTARGET-LABEL: func.func @standalone
//       NOTARGET:   tensor.collapse_shape
//   NOTARGET-NOT:   braze.kernel_config
func.func @standalone(%x: tensor<64x32xf32>) -> tensor<64x32xf32> {
  %e = tensor.empty() : tensor<64x32xf32>
  %0 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<64x32xf32>) outs(%e : tensor<64x32xf32>) {
  ^bb0(%in: f32, %out: f32):
    %1 = math.exp %in : f32
    linalg.yield %1 : f32
  } -> tensor<64x32xf32>
  return %0 : tensor<64x32xf32>
}

// -----

#id = affine_map<(d0) -> (d0)>

// bfloat16 elements: 8 per 16-byte access.
// CHECK-LABEL: func.func @bf16
//       CHECK:   braze.kernel_config = "workgroup=2048 thread=8 threads=256"
func.func @bf16(%x: tensor<4096xbf16>) -> tensor<4096xbf16> {
  %e = tensor.empty() : tensor<4096xbf16>
  %0 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%x : tensor<4096xbf16>) outs(%e : tensor<4096xbf16>) {
  ^bb0(%in: bf16, %out: bf16):
    %1 = arith.addf %in, %in : bf16
    linalg.yield %1 : bf16
  } -> tensor<4096xbf16>
  return %0 : tensor<4096xbf16>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>

// An elementwise op that reads a matmul's result is fused into the matmul by IREE: left alone.
// CHECK-LABEL: func.func @after_matmul
//   CHECK-NOT:   tensor.collapse_shape
//   CHECK-NOT:   braze.kernel_config
func.func @after_matmul(%a: tensor<64x32xf32>, %b: tensor<32x64xf32>, %c: tensor<64x64xf32>) -> tensor<64x64xf32> {
  %0 = linalg.matmul ins(%a, %b : tensor<64x32xf32>, tensor<32x64xf32>) outs(%c : tensor<64x64xf32>) -> tensor<64x64xf32>
  %1 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%0 : tensor<64x64xf32>) outs(%c : tensor<64x64xf32>) {
  ^bb0(%in: f32, %out: f32):
    %2 = math.exp %in : f32
    linalg.yield %2 : f32
  } -> tensor<64x64xf32>
  return %1 : tensor<64x64xf32>
}

// -----

#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>

// A reshape between the matmul and the elementwise op does not hide it: IREE folds the reshape
// and fuses the op into the matmul's dispatch, so it stays multi-dimensional and unconfigured
// (collapsing it kept IREE from fusing it into the matmul's tiles: FF1 of a 768-wide layer ran
// 256 us instead of ~165).
// CHECK-LABEL: func.func @after_matmul_reshape
//   CHECK-NOT:   braze.kernel_config
func.func @after_matmul_reshape(%a: tensor<64x32xf32>, %b: tensor<32x64xf32>, %c: tensor<64x64xf32>) -> tensor<4x16x64xf32> {
  %0 = linalg.matmul ins(%a, %b : tensor<64x32xf32>, tensor<32x64xf32>) outs(%c : tensor<64x64xf32>) -> tensor<64x64xf32>
  %1 = tensor.expand_shape %0 [[0, 1], [2]] output_shape [4, 16, 64] : tensor<64x64xf32> into tensor<4x16x64xf32>
  %e = tensor.empty() : tensor<4x16x64xf32>
  %2 = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]} ins(%1 : tensor<4x16x64xf32>) outs(%e : tensor<4x16x64xf32>) {
  ^bb0(%in: f32, %out: f32):
    %3 = math.exp %in : f32
    linalg.yield %3 : f32
  } -> tensor<4x16x64xf32>
  return %2 : tensor<4x16x64xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>

// A broadcast input cannot be collapsed to 1-D: left to IREE.
// CHECK-LABEL: func.func @broadcast
//   CHECK-NOT:   braze.kernel_config
func.func @broadcast(%x: tensor<64x32xf32>, %b: tensor<32xf32>) -> tensor<64x32xf32> {
  %e = tensor.empty() : tensor<64x32xf32>
  %0 = linalg.generic {indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel"]} ins(%x, %b : tensor<64x32xf32>, tensor<32xf32>) outs(%e : tensor<64x32xf32>) {
  ^bb0(%in: f32, %in2: f32, %out: f32):
    %1 = arith.addf %in, %in2 : f32
    linalg.yield %1 : f32
  } -> tensor<64x32xf32>
  return %0 : tensor<64x32xf32>
}

// -----

#id = affine_map<(d0) -> (d0)>

// No tile of 32 or more threads divides 100 elements: collapsed, but no configuration.
// CHECK-LABEL: func.func @odd_size
//   CHECK-NOT:   braze.kernel_config
func.func @odd_size(%x: tensor<100xf32>) -> tensor<100xf32> {
  %e = tensor.empty() : tensor<100xf32>
  %0 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%x : tensor<100xf32>) outs(%e : tensor<100xf32>) {
  ^bb0(%in: f32, %out: f32):
    %1 = math.exp %in : f32
    linalg.yield %1 : f32
  } -> tensor<100xf32>
  return %0 : tensor<100xf32>
}

// -----

// A static f32 matmul too small to give each of the 132 SMs two workgroups gets the tiles
// with the most workgroups (32 x 32: 12 of them); a forced configuration replaces the model's;
// without a target it is left alone.
// CHECK-LABEL: func.func @matmul_f32
//       CHECK:   linalg.matmul {braze.matmul_config = "simt workgroup=32,32 reduction=8 thread=2,2 threads=16,16"}
// MMFORCED-LABEL: func.func @matmul_f32
//       MMFORCED:   linalg.matmul {braze.matmul_config = "simt workgroup=64,32 reduction=16 thread=4,2 threads=16,16"}
// NOTARGET-LABEL: func.func @matmul_f32
//   NOTARGET-NOT:   braze.matmul_config
func.func @matmul_f32(%a: tensor<128x64xf32>, %b: tensor<64x96xf32>, %c: tensor<128x96xf32>) -> tensor<128x96xf32> {
  %0 = linalg.matmul ins(%a, %b : tensor<128x64xf32>, tensor<64x96xf32>) outs(%c : tensor<128x96xf32>) -> tensor<128x96xf32>
  return %0 : tensor<128x96xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>

// A matmul fed by bf16 -> f32 extf generics is a bf16 matmul for IREE: 1024 x 3072 is large
// enough for two waves of 128 x 64 MMA tiles (384 workgroups); the forced SIMT tiles do not apply.
// CHECK-LABEL: func.func @matmul_bf16_via_extf
//       CHECK:   linalg.matmul {braze.matmul_config = "mma=NV_MMA_SYNC_F32_16x8x16_BF16 workgroup=128,64 subgroup=4,4 reduction=4 threads=128 stages=3"}
// MMFORCED-LABEL: func.func @matmul_bf16_via_extf
//   MMFORCED-NOT:   braze.matmul_config
func.func @matmul_bf16_via_extf(%a: tensor<1024x64xbf16>, %b: tensor<64x3072xbf16>, %c: tensor<1024x3072xf32>) -> tensor<1024x3072xf32> {
  %ea = tensor.empty() : tensor<1024x64xf32>
  %eb = tensor.empty() : tensor<64x3072xf32>
  %0 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%a : tensor<1024x64xbf16>) outs(%ea : tensor<1024x64xf32>) {
  ^bb0(%in: bf16, %out: f32):
    %x = arith.extf %in : bf16 to f32
    linalg.yield %x : f32
  } -> tensor<1024x64xf32>
  %1 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%b : tensor<64x3072xbf16>) outs(%eb : tensor<64x3072xf32>) {
  ^bb0(%in: bf16, %out: f32):
    %x = arith.extf %in : bf16 to f32
    linalg.yield %x : f32
  } -> tensor<64x3072xf32>
  %2 = linalg.matmul ins(%0, %1 : tensor<1024x64xf32>, tensor<64x3072xf32>) outs(%c : tensor<1024x3072xf32>) -> tensor<1024x3072xf32>
  return %2 : tensor<1024x3072xf32>
}

// -----

// A matmul reading a transposed weight (a Linear: x @ W^T) reads B along K once IREE folds the
// transpose in: 32-deep K steps (f32_tb); 1024 x 768 takes 64 x 32 tiles for 384 workgroups.
// CHECK-LABEL: func.func @matmul_transposed_weight
//       CHECK:   linalg.matmul {braze.matmul_config = "simt workgroup=64,32 reduction=32 thread=4,2 threads=16,16"}
// MMFORCED-LABEL: func.func @matmul_transposed_weight
//       MMFORCED:   linalg.matmul {braze.matmul_config = "simt workgroup=64,32 reduction=16 thread=4,2 threads=16,16"}
func.func @matmul_transposed_weight(%x: tensor<1024x768xf32>, %w: tensor<768x768xf32>, %c: tensor<1024x768xf32>) -> tensor<1024x768xf32> {
  %e = tensor.empty() : tensor<768x768xf32>
  %t = linalg.transpose ins(%w : tensor<768x768xf32>) outs(%e : tensor<768x768xf32>) permutation = [1, 0]
  %0 = linalg.matmul ins(%x, %t : tensor<1024x768xf32>, tensor<768x768xf32>) outs(%c : tensor<1024x768xf32>) -> tensor<1024x768xf32>
  return %0 : tensor<1024x768xf32>
}

// -----

// A bf16 matmul too small for two waves of MMA tiles keeps IREE's configuration, which
// measured faster on such shapes.
// CHECK-LABEL: func.func @matmul_bf16_small
//   CHECK-NOT:   braze.matmul_config
func.func @matmul_bf16_small(%a: tensor<1024x768xbf16>, %b: tensor<768x768xbf16>, %c: tensor<1024x768xf32>) -> tensor<1024x768xf32> {
  %0 = linalg.matmul ins(%a, %b : tensor<1024x768xbf16>, tensor<768x768xbf16>) outs(%c : tensor<1024x768xf32>) -> tensor<1024x768xf32>
  return %0 : tensor<1024x768xf32>
}

// -----

// A batch matmul gets tiles for its M x N, counting every batch's workgroups: 96 x 2 x 2 of 64 x 64.
// CHECK-LABEL: func.func @batch_matmul_f32
//       CHECK:   linalg.batch_matmul {braze.matmul_config = "simt workgroup=64,64 reduction=16 thread=4,4 threads=16,16"}
// MMFORCED-LABEL: func.func @batch_matmul_f32
//       MMFORCED:   linalg.batch_matmul {braze.matmul_config = "simt workgroup=64,32 reduction=16 thread=4,2 threads=16,16"}
func.func @batch_matmul_f32(%a: tensor<96x128x64xf32>, %b: tensor<96x64x128xf32>, %c: tensor<96x128x128xf32>) -> tensor<96x128x128xf32> {
  %0 = linalg.batch_matmul ins(%a, %b : tensor<96x128x64xf32>, tensor<96x64x128xf32>) outs(%c : tensor<96x128x128xf32>) -> tensor<96x128x128xf32>
  return %0 : tensor<96x128x128xf32>
}

// -----

// A matmul whose shape its tiles do not divide keeps IREE's configuration.
// CHECK-LABEL: func.func @matmul_odd
//   CHECK-NOT:   braze.matmul_config
func.func @matmul_odd(%a: tensor<100x64xf32>, %b: tensor<64x96xf32>, %c: tensor<100x96xf32>) -> tensor<100x96xf32> {
  %0 = linalg.matmul ins(%a, %b : tensor<100x64xf32>, tensor<64x96xf32>) outs(%c : tensor<100x96xf32>) -> tensor<100x96xf32>
  return %0 : tensor<100x96xf32>
}
