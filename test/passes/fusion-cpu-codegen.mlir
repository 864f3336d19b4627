// RUN: braze-opt %s --split-input-file -p fusion-cpu-codegen | FileCheck %s
// RUN: braze-opt %s --split-input-file -p 'fusion-cpu-codegen{data-tiling=off}' | FileCheck %s --check-prefix=OFF
// RUN: braze-opt %s --split-input-file -p 'fusion-cpu-codegen{data-tiling=on}' | FileCheck %s --check-prefix=ON
// RUN: braze-opt %s --split-input-file -p 'fusion-cpu-codegen{reassociate=off}' | FileCheck %s --check-prefix=NOREASSOC
// RUN: braze-opt %s --split-input-file -p 'fusion-cpu-codegen{reassociate=on data-tiling=off}' | FileCheck %s --check-prefix=REASSOC
// RUN: braze-opt %s --split-input-file -p 'fusion-cpu-codegen{channels-last=off}' | FileCheck %s --check-prefix=CHANNELS
// RUN: braze-opt %s --split-input-file -p 'fusion-cpu-codegen{mmt4d-tiles=iree}' | FileCheck %s --check-prefix=TILES-IREE
// RUN: braze-opt %s --split-input-file -p 'fusion-cpu-codegen{mmt4d-tiles=loops}' | FileCheck %s --check-prefix=TILES-LOOPS
// TILES-IREE-NOT: braze.mmt4d_tiles
// TILES-LOOPS: braze.mmt4d_tiles = "loops"

// A Linear's matmul reads its weight, a constant seen through a transpose: data tiling is on,
// and the attribute names the contraction that asked for it. The ops are unchanged.
// A matmul reduces floats: IREE may reassociate them (a tree per vector, not a scalar chain).
// CHECK: module attributes {braze.data_tiling = "linalg.matmul (tensor<4x8xf32>, tensor<8x2xf32>) reads a constant operand", braze.mmt4d_tiles = "auto", braze.reassociate_reductions = "a linalg.matmul of tensor<4x8xf32>"}
// CHECK: linalg.transpose
// CHECK: linalg.matmul
// OFF-NOT: braze.data_tiling
// REASSOC: module attributes {braze.reassociate_reductions = "forced (reassociate=on)"}
// ON: module attributes {braze.data_tiling = "forced (data-tiling=on)"
func.func @linear(%x: tensor<4x8xf32>) -> tensor<4x2xf32> {
  %w = arith.constant dense<[[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0], [8.0, 7.0, 6.0, 5.0, 4.0, 3.0, 2.0, 1.0]]> : tensor<2x8xf32>
  %e = tensor.empty() : tensor<8x2xf32>
  %wt = linalg.transpose ins(%w : tensor<2x8xf32>) outs(%e : tensor<8x2xf32>) permutation = [1, 0]
  %zero = arith.constant 0.0 : f32
  %o = tensor.empty() : tensor<4x2xf32>
  %init = linalg.fill ins(%zero : f32) outs(%o : tensor<4x2xf32>) -> tensor<4x2xf32>
  %y = linalg.matmul ins(%x, %wt : tensor<4x8xf32>, tensor<8x2xf32>) outs(%init : tensor<4x2xf32>) -> tensor<4x2xf32>
  return %y : tensor<4x2xf32>
}

// -----

// Attention's products are of activations only: packing would be paid on both sides every
// call, so auto leaves IREE's default (no data tiling attribute).
// CHECK: module attributes {braze.reassociate_reductions = "a linalg.batch_matmul of tensor<2x4x8xf32>"} {
// CHECK-NEXT: func.func @scores
// CHECK: linalg.batch_matmul
// ON: braze.data_tiling = "forced (data-tiling=on)"
func.func @scores(%q: tensor<2x4x8xf32>, %k: tensor<2x8x4xf32>) -> tensor<2x4x4xf32> {
  %zero = arith.constant 0.0 : f32
  %o = tensor.empty() : tensor<2x4x4xf32>
  %init = linalg.fill ins(%zero : f32) outs(%o : tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %s = linalg.batch_matmul ins(%q, %k : tensor<2x4x8xf32>, tensor<2x8x4xf32>) outs(%init : tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  return %s : tensor<2x4x4xf32>
}

// -----

// A matmul written as a linalg.generic (a multiply-add reduction) counts as a contraction too.
// CHECK: module attributes {braze.data_tiling = "linalg.generic (tensor<4x8xf32>, tensor<8x2xf32>) reads a constant operand", braze.mmt4d_tiles = "auto", braze.reassociate_reductions = "a arith.addf reduction of tensor<4x8xf32>"}
#a = affine_map<(m, n, k) -> (m, k)>
#b = affine_map<(m, n, k) -> (k, n)>
#c = affine_map<(m, n, k) -> (m, n)>
func.func @generic_matmul(%x: tensor<4x8xf32>) -> tensor<4x2xf32> {
  %w = arith.constant dense<0.5> : tensor<8x2xf32>
  %zero = arith.constant 0.0 : f32
  %o = tensor.empty() : tensor<4x2xf32>
  %init = linalg.fill ins(%zero : f32) outs(%o : tensor<4x2xf32>) -> tensor<4x2xf32>
  %y = linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : tensor<4x8xf32>, tensor<8x2xf32>) outs(%init : tensor<4x2xf32>) {
  ^bb0(%l: f32, %r: f32, %acc: f32):
    %p = arith.mulf %l, %r : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<4x2xf32>
  return %y : tensor<4x2xf32>
}

// -----

// Softmax's row maximum (torch-mlir's max with its index): IREE may reassociate float
// reductions in this module; reassociate=off: not.
// CHECK: module attributes {braze.reassociate_reductions = "a arith.maximumf reduction of tensor<4x8xf32>"}
// NOREASSOC-NOT: braze.reassociate_reductions
#x = affine_map<(i, j) -> (i, j)>
#r = affine_map<(i, j) -> (i)>
func.func @row_max(%x: tensor<4x8xf32>) -> (tensor<4xf32>, tensor<4xi64>) {
  %low = arith.constant 0xFF800000 : f32
  %c0 = arith.constant 0 : i64
  %e = tensor.empty() : tensor<4xf32>
  %m0 = linalg.fill ins(%low : f32) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  %ei = tensor.empty() : tensor<4xi64>
  %i0 = linalg.fill ins(%c0 : i64) outs(%ei : tensor<4xi64>) -> tensor<4xi64>
  %m:2 = linalg.generic {indexing_maps = [#x, #r, #r], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<4x8xf32>) outs(%m0, %i0 : tensor<4xf32>, tensor<4xi64>) {
  ^bb0(%in: f32, %acc: f32, %idx: i64):
    %j = linalg.index 1 : index
    %ji = arith.index_cast %j : index to i64
    %mx = arith.maximumf %in, %acc : f32
    %gt = arith.cmpf ogt, %in, %acc : f32
    %ni = arith.select %gt, %ji, %idx : i64
    linalg.yield %mx, %ni : f32, i64
  } -> (tensor<4xf32>, tensor<4xi64>)
  return %m#0, %m#1 : tensor<4xf32>, tensor<4xi64>
}

// -----

// A row sum (LayerNorm's mean): a float reduction, reassociated (bench/NOTES.md §39).
// CHECK: module attributes {braze.reassociate_reductions = "a arith.addf reduction of tensor<4x8xf32>"}
// NOREASSOC-NOT: braze.reassociate_reductions
#x = affine_map<(i, j) -> (i, j)>
#r = affine_map<(i, j) -> (i)>
func.func @row_sum(%x: tensor<4x8xf32>) -> tensor<4xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4xf32>
  %s0 = linalg.fill ins(%zero : f32) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  %s = linalg.generic {indexing_maps = [#x, #r], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<4x8xf32>) outs(%s0 : tensor<4xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %a = arith.addf %in, %acc : f32
    linalg.yield %a : f32
  } -> tensor<4xf32>
  return %s : tensor<4xf32>
}

// -----

// An integer sum and a float elementwise op: nothing for the flag to free (exact in any order).
// CHECK: module {
// CHECK-NEXT: func.func @int_sum
#x = affine_map<(i, j) -> (i, j)>
#r = affine_map<(i, j) -> (i)>
#p = affine_map<(i) -> (i)>
func.func @int_sum(%x: tensor<4x8xi32>, %y: tensor<4xf32>) -> (tensor<4xi32>, tensor<4xf32>) {
  %zero = arith.constant 0 : i32
  %e = tensor.empty() : tensor<4xi32>
  %s0 = linalg.fill ins(%zero : i32) outs(%e : tensor<4xi32>) -> tensor<4xi32>
  %s = linalg.generic {indexing_maps = [#x, #r], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<4x8xi32>) outs(%s0 : tensor<4xi32>) {
  ^bb0(%in: i32, %acc: i32):
    %a = arith.addi %in, %acc : i32
    linalg.yield %a : i32
  } -> tensor<4xi32>
  %ef = tensor.empty() : tensor<4xf32>
  %d = linalg.generic {indexing_maps = [#p, #p], iterator_types = ["parallel"]}
      ins(%y : tensor<4xf32>) outs(%ef : tensor<4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %a = arith.addf %in, %in : f32
    linalg.yield %a : f32
  } -> tensor<4xf32>
  return %s, %d : tensor<4xi32>, tensor<4xf32>
}

// -----

// A convolution left in NCHW (IREE's direct one): IREE computes it channels-last (its
// preprocessing pass; bench/NOTES.md §39), the attribute names it; a dynamic one is left alone.
// CHECK: module attributes {braze.channels_last = "linalg.conv_2d_nchw_fchw (tensor<1x4x8x8xf32>, tensor<8x4x3x3xf32>)"
// CHANNELS-NOT: braze.channels_last
// CHECK-LABEL: func.func @conv
func.func @conv(%x: tensor<1x4x8x8xf32>, %w: tensor<8x4x3x3xf32>) -> tensor<1x8x6x6xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x8x6x6xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<1x8x6x6xf32>) -> tensor<1x8x6x6xf32>
  %y = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%x, %w : tensor<1x4x8x8xf32>, tensor<8x4x3x3xf32>) outs(%init : tensor<1x8x6x6xf32>) -> tensor<1x8x6x6xf32>
  return %y : tensor<1x8x6x6xf32>
}

// -----

// CHECK-NOT: braze.channels_last
// CHECK-LABEL: func.func @dynamic_conv
func.func @dynamic_conv(%x: tensor<?x4x8x8xf32>, %w: tensor<8x4x3x3xf32>, %init: tensor<?x8x6x6xf32>) -> tensor<?x8x6x6xf32> {
  %y = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%x, %w : tensor<?x4x8x8xf32>, tensor<8x4x3x3xf32>) outs(%init : tensor<?x8x6x6xf32>) -> tensor<?x8x6x6xf32>
  return %y : tensor<?x8x6x6xf32>
}
