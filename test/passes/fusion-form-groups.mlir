// RUN: braze-opt %s --split-input-file -p fusion-form-groups | FileCheck %s

#id = affine_map<(d0, d1) -> (d0, d1)>

// A single-use producer and its elementwise consumer form one group; scalar constants are cloned in.
// CHECK-LABEL: func.func @chain
//       CHECK:   %[[G:.+]] = "fusion.group"(%{{.+}}) ({
//       CHECK:     arith.constant 2.0
//       CHECK:     arith.mulf
//       CHECK:     linalg.exp
//       CHECK:     "fusion.yield"
//       CHECK:   }) {kind = "elementwise", label = "group0"
//       CHECK:   return %[[G]]
func.func @chain(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %c2 = arith.constant 2.0 : f32
  %e = tensor.empty() : tensor<4x8xf32>
  %0 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%x : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.mulf %in, %c2 : f32
    linalg.yield %r : f32
  } -> tensor<4x8xf32>
  %1 = linalg.exp ins(%0 : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
  return %1 : tensor<4x8xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
#bc = affine_map<(d0, d1) -> (d1)>

// A broadcast input map does not stop fusion: the bias stays an input of the group.
// CHECK-LABEL: func.func @broadcast
//       CHECK:   "fusion.group"(%{{.+}}, %{{.+}}) ({
//       CHECK:     arith.addf
//       CHECK:     linalg.tanh
//       CHECK:   }) {kind = "elementwise", label = "group0"
func.func @broadcast(%x: tensor<4x8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  %e = tensor.empty() : tensor<4x8xf32>
  %0 = linalg.generic {indexing_maps = [#id, #bc, #id], iterator_types = ["parallel", "parallel"]} ins(%x, %b : tensor<4x8xf32>, tensor<8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%in: f32, %in2: f32, %out: f32):
    %r = arith.addf %in, %in2 : f32
    linalg.yield %r : f32
  } -> tensor<4x8xf32>
  %1 = linalg.tanh ins(%0 : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
  return %1 : tensor<4x8xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
#tr = affine_map<(d0, d1) -> (d1, d0)>

// A consumer reading its producer through a permutation joins the producer's group.
// CHECK-LABEL: func.func @permuted
//       CHECK:   "fusion.group"
//       CHECK:     linalg.exp
//       CHECK:     linalg.generic {indexing_maps = [#{{.+}}, #{{.+}}]
//       CHECK:     math.sqrt
//       CHECK:   }) {kind = "elementwise", label = "group0"
func.func @permuted(%x: tensor<4x8xf32>) -> tensor<8x4xf32> {
  %e = tensor.empty() : tensor<4x8xf32>
  %et = tensor.empty() : tensor<8x4xf32>
  %0 = linalg.exp ins(%x : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
  %1 = linalg.generic {indexing_maps = [#tr, #id], iterator_types = ["parallel", "parallel"]} ins(%0 : tensor<4x8xf32>) outs(%et : tensor<8x4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = math.sqrt %in : f32
    linalg.yield %r : f32
  } -> tensor<8x4xf32>
  return %1 : tensor<8x4xf32>
}

// -----

#id = affine_map<(d0) -> (d0)>

// An f32 -> f16 -> f32 round trip stays in two kernels: inside one, IREE folds
// extf(truncf(x)) to x and the rounding eager does is lost. The widening op says why.
// CHECK-LABEL: func.func @cast
//   CHECK-NOT:   "fusion.group"
//       CHECK:   arith.truncf
//       CHECK:   fusion.unfused = {"0" = "widens a float narrowed just before (IREE folds extf(truncf(x)) to x inside a kernel)"}
//  CHECK-NEXT:   ^bb0
//  CHECK-NEXT:     arith.extf
//   CHECK-NOT:   "fusion.group"
//       CHECK:   return
func.func @cast(%x: tensor<16xf32>) -> tensor<16xf32> {
  %e16 = tensor.empty() : tensor<16xf16>
  %e = tensor.empty() : tensor<16xf32>
  %0 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%x : tensor<16xf32>) outs(%e16 : tensor<16xf16>) {
  ^bb0(%in: f32, %out: f16):
    %r = arith.truncf %in : f32 to f16
    linalg.yield %r : f16
  } -> tensor<16xf16>
  %1 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%0 : tensor<16xf16>) outs(%e : tensor<16xf32>) {
  ^bb0(%in: f16, %out: f32):
    %r = arith.extf %in : f16 to f32
    linalg.yield %r : f32
  } -> tensor<16xf32>
  return %1 : tensor<16xf32>
}

// -----

#id = affine_map<(d0) -> (d0)>

// A cheap multi-use producer with one input is recomputed for each consumer (the two
// consumers then share %x, so they end in one sibling group holding two copies of the mul).
// CHECK-LABEL: func.func @recompute
//   CHECK-NOT:   linalg.mul
//       CHECK:   "fusion.group"
//       CHECK:     linalg.mul
//       CHECK:     linalg.mul
//       CHECK:   label = "group0"
func.func @recompute(%x: tensor<16xf32>) -> (tensor<16xf32>, tensor<16xf32>) {
  %e = tensor.empty() : tensor<16xf32>
  %0 = linalg.mul ins(%x, %x : tensor<16xf32>, tensor<16xf32>) outs(%e : tensor<16xf32>) -> tensor<16xf32>
  %1 = linalg.exp ins(%0 : tensor<16xf32>) outs(%e : tensor<16xf32>) -> tensor<16xf32>
  %2 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%0 : tensor<16xf32>) outs(%e : tensor<16xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = math.sin %in : f32
    linalg.yield %r : f32
  } -> tensor<16xf32>
  return %1, %2 : tensor<16xf32>, tensor<16xf32>
}

// -----

#id = affine_map<(d0) -> (d0)>

// A multi-use producer with two inputs and three consumers is not worth recomputing.
// (Its three consumers share its result, so they form one sibling group.)
// CHECK-LABEL: func.func @multi_use_stop
//       CHECK:   %[[ADD:.+]] = linalg.add
//       CHECK:   "fusion.group"(%[[ADD]])
//       CHECK:   linalg.exp {fusion.unfused = {"0" = "multi-use producer, recompute too costly"}}
func.func @multi_use_stop(%x: tensor<16xf32>, %y: tensor<16xf32>) -> (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) {
  %e = tensor.empty() : tensor<16xf32>
  %0 = linalg.add ins(%x, %y : tensor<16xf32>, tensor<16xf32>) outs(%e : tensor<16xf32>) -> tensor<16xf32>
  %1 = linalg.exp ins(%0 : tensor<16xf32>) outs(%e : tensor<16xf32>) -> tensor<16xf32>
  %2 = linalg.tanh ins(%0 : tensor<16xf32>) outs(%e : tensor<16xf32>) -> tensor<16xf32>
  %3 = linalg.log ins(%0 : tensor<16xf32>) outs(%e : tensor<16xf32>) -> tensor<16xf32>
  return %1, %2, %3 : tensor<16xf32>, tensor<16xf32>, tensor<16xf32>
}

// -----

// Independent ops reading the same tensor share one multi-result group.
// CHECK-LABEL: func.func @siblings
//       CHECK:   %[[G:.+]]:2 = "fusion.group"(%{{.+}}) ({
//       CHECK:     linalg.exp
//       CHECK:     linalg.tanh
//       CHECK:   return %[[G]]#0, %[[G]]#1
func.func @siblings(%x: tensor<16xf32>) -> (tensor<16xf32>, tensor<16xf32>) {
  %e = tensor.empty() : tensor<16xf32>
  %1 = linalg.exp ins(%x : tensor<16xf32>) outs(%e : tensor<16xf32>) -> tensor<16xf32>
  %2 = linalg.tanh ins(%x : tensor<16xf32>) outs(%e : tensor<16xf32>) -> tensor<16xf32>
  return %1, %2 : tensor<16xf32>, tensor<16xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>

// A reduction is never a group member; the reason is recorded on it.
// CHECK-LABEL: func.func @reduction
//   CHECK-NOT:   "fusion.group"
//       CHECK:   fusion.unfused = {"0" = "non-elementwise: linalg.generic (reduction)"}
func.func @reduction(%x: tensor<4x8xf32>, %init: tensor<4xf32>) -> tensor<4xf32> {
  %e = tensor.empty() : tensor<4x8xf32>
  %0 = linalg.exp ins(%x : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
  %1 = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]} ins(%0 : tensor<4x8xf32>) outs(%init : tensor<4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.addf %in, %out : f32
    linalg.yield %r : f32
  } -> tensor<4xf32>
  return %1 : tensor<4xf32>
}

// -----

// A matmul is a contraction: the elementwise op after it starts no group with it.
// CHECK-LABEL: func.func @matmul
//   CHECK-NOT:   "fusion.group"
//       CHECK:   linalg.exp {fusion.unfused = {"0" = "non-elementwise: linalg.matmul (reduction)"}}
func.func @matmul(%a: tensor<4x8xf32>, %b: tensor<8x4xf32>, %c: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %0 = linalg.matmul ins(%a, %b : tensor<4x8xf32>, tensor<8x4xf32>) outs(%c : tensor<4x4xf32>) -> tensor<4x4xf32>
  %1 = linalg.exp ins(%0 : tensor<4x4xf32>) outs(%c : tensor<4x4xf32>) -> tensor<4x4xf32>
  return %1 : tensor<4x4xf32>
}

// -----

// A chain after a matmul is left ungrouped: IREE fuses it into the matmul's dispatch.
// CHECK-LABEL: func.func @matmul_epilogue
//   CHECK-NOT:   "fusion.group"
//       CHECK:   linalg.exp {fusion.unfused = {"0" = "non-elementwise: linalg.matmul (reduction)"}}
//       CHECK:   linalg.tanh {fusion.unfused = {"0" = "next to a reduction or contraction, left for IREE to fuse into its dispatch"}}
func.func @matmul_epilogue(%a: tensor<4x8xf32>, %b: tensor<8x4xf32>, %c: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %0 = linalg.matmul ins(%a, %b : tensor<4x8xf32>, tensor<8x4xf32>) outs(%c : tensor<4x4xf32>) -> tensor<4x4xf32>
  %1 = linalg.exp ins(%0 : tensor<4x4xf32>) outs(%c : tensor<4x4xf32>) -> tensor<4x4xf32>
  %2 = linalg.tanh ins(%1 : tensor<4x4xf32>) outs(%c : tensor<4x4xf32>) -> tensor<4x4xf32>
  return %2 : tensor<4x4xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>

// A bf16 round trip after a matmul is one group although it is next to the contraction (IREE
// folds extf(truncf(x)) once its epilogue fusion puts both in one dispatch); the subtraction
// after it stays for IREE to fuse.
// CHECK-LABEL: func.func @matmul_bf16_round_trip
//       CHECK:   linalg.matmul
//       CHECK:   %[[G:.+]] = "fusion.group"
//       CHECK:     arith.truncf %{{.+}} : f32 to bf16
//       CHECK:     arith.extf %{{.+}} : bf16 to f32
//       CHECK:     "fusion.yield"
//  CHECK-NEXT:   }) {kind = "elementwise"
//       CHECK:   linalg.generic {{.+}}fusion.unfused = {"0" = "next to a reduction or contraction, left for IREE to fuse into its dispatch"
//  CHECK-NEXT:   ^bb0
//  CHECK-NEXT:     arith.subf
func.func @matmul_bf16_round_trip(%a: tensor<4x8xf32>, %b: tensor<8x4xf32>, %c: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %0 = linalg.matmul ins(%a, %b : tensor<4x8xf32>, tensor<8x4xf32>) outs(%c : tensor<4x4xf32>) -> tensor<4x4xf32>
  %e = tensor.empty() : tensor<4x4xbf16>
  %1 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%0 : tensor<4x4xf32>) outs(%e : tensor<4x4xbf16>) {
  ^bb0(%in: f32, %out: bf16):
    %r = arith.truncf %in : f32 to bf16
    linalg.yield %r : bf16
  } -> tensor<4x4xbf16>
  %2 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%1 : tensor<4x4xbf16>) outs(%c : tensor<4x4xf32>) {
  ^bb0(%in: bf16, %out: f32):
    %r = arith.extf %in : bf16 to f32
    linalg.yield %r : f32
  } -> tensor<4x4xf32>
  %3 = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%2, %0 : tensor<4x4xf32>, tensor<4x4xf32>) outs(%c : tensor<4x4xf32>) {
  ^bb0(%in: f32, %in_0: f32, %out: f32):
    %r = arith.subf %in, %in_0 : f32
    linalg.yield %r : f32
  } -> tensor<4x4xf32>
  return %3 : tensor<4x4xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>

// A chain whose result a reduction reads is left ungrouped: IREE fuses it into the reduction.
// CHECK-LABEL: func.func @reduction_producer_chain
//   CHECK-NOT:   "fusion.group"
//       CHECK:   linalg.tanh {fusion.unfused = {"0" = "next to a reduction or contraction, left for IREE to fuse into its dispatch"}}
func.func @reduction_producer_chain(%x: tensor<4x8xf32>, %init: tensor<4xf32>) -> tensor<4xf32> {
  %e = tensor.empty() : tensor<4x8xf32>
  %0 = linalg.exp ins(%x : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
  %1 = linalg.tanh ins(%0 : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
  %2 = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]} ins(%1 : tensor<4x8xf32>) outs(%init : tensor<4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.addf %in, %out : f32
    linalg.yield %r : f32
  } -> tensor<4xf32>
  return %2 : tensor<4xf32>
}

// -----

// tensor.expand_shape between two elementwise ops is a boundary.
// CHECK-LABEL: func.func @reshape
//   CHECK-NOT:   "fusion.group"
//       CHECK:   tensor.expand_shape
//       CHECK:   fusion.unfused = {"0" = "non-elementwise: tensor.expand_shape"}
func.func @reshape(%x: tensor<8xf32>) -> tensor<2x4xf32> {
  %e = tensor.empty() : tensor<8xf32>
  %e2 = tensor.empty() : tensor<2x4xf32>
  %0 = linalg.exp ins(%x : tensor<8xf32>) outs(%e : tensor<8xf32>) -> tensor<8xf32>
  %1 = tensor.expand_shape %0 [[0, 1]] output_shape [2, 4] : tensor<8xf32> into tensor<2x4xf32>
  %2 = linalg.exp ins(%1 : tensor<2x4xf32>) outs(%e2 : tensor<2x4xf32>) -> tensor<2x4xf32>
  return %2 : tensor<2x4xf32>
}

// -----

#id = affine_map<(d0) -> (d0)>

// exp and add must not share a group: add also reads exp through two reshapes (a cycle).
// CHECK-LABEL: func.func @no_cycle
//   CHECK-NOT:   "fusion.group"
//       CHECK:   linalg.exp
//       CHECK:   tensor.expand_shape
//       CHECK:   tensor.collapse_shape
//       CHECK:   linalg.add {fusion.unfused = {"0" = "multi-use producer, recompute too costly", "1" = "non-elementwise: tensor.collapse_shape"}}
func.func @no_cycle(%x: tensor<8xf32>) -> tensor<8xf32> {
  %e = tensor.empty() : tensor<8xf32>
  %0 = linalg.exp ins(%x : tensor<8xf32>) outs(%e : tensor<8xf32>) -> tensor<8xf32>
  %1 = tensor.expand_shape %0 [[0, 1]] output_shape [2, 4] : tensor<8xf32> into tensor<2x4xf32>
  %2 = tensor.collapse_shape %1 [[0, 1]] : tensor<2x4xf32> into tensor<8xf32>
  %3 = linalg.add ins(%0, %2 : tensor<8xf32>, tensor<8xf32>) outs(%e : tensor<8xf32>) -> tensor<8xf32>
  return %3 : tensor<8xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
#bc = affine_map<(d0, d1) -> (d1)>

// A chain on a bias [8] that is read broadcast as [4, 8] is left ungrouped, for the back end
// to recompute inside the consumer's kernel.
// CHECK-LABEL: func.func @broadcast_feeder
//   CHECK-NOT:   "fusion.group"
//       CHECK:   linalg.tanh {fusion.unfused = {"0" = "broadcast producer chain, left to the back end"}}
//       CHECK:   linalg.generic
//  CHECK-SAME:   fusion.unfused = {"1" = "incompatible iteration space"}
func.func @broadcast_feeder(%x: tensor<4x8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  %e = tensor.empty() : tensor<4x8xf32>
  %eb = tensor.empty() : tensor<8xf32>
  %0 = linalg.exp ins(%b : tensor<8xf32>) outs(%eb : tensor<8xf32>) -> tensor<8xf32>
  %1 = linalg.tanh ins(%0 : tensor<8xf32>) outs(%eb : tensor<8xf32>) -> tensor<8xf32>
  %2 = linalg.generic {indexing_maps = [#id, #bc, #id], iterator_types = ["parallel", "parallel"]} ins(%x, %1 : tensor<4x8xf32>, tensor<8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%in: f32, %in2: f32, %out: f32):
    %r = arith.addf %in, %in2 : f32
    linalg.yield %r : f32
  } -> tensor<4x8xf32>
  return %2 : tensor<4x8xf32>
}

// -----

#id = affine_map<(d0) -> (d0)>

// Casts are elementwise otherwise: a widening extf fuses with the math after it.
// CHECK-LABEL: func.func @widen
//       CHECK:   "fusion.group"
//       CHECK:     arith.extf
//       CHECK:     math.exp
//       CHECK:   }) {kind = "elementwise", label = "group0"
//   CHECK-NOT:   "fusion.group"
func.func @widen(%x: tensor<16xf16>) -> tensor<16xf32> {
  %e = tensor.empty() : tensor<16xf32>
  %0 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%x : tensor<16xf16>) outs(%e : tensor<16xf32>) {
  ^bb0(%in: f16, %out: f32):
    %r = arith.extf %in : f16 to f32
    linalg.yield %r : f32
  } -> tensor<16xf32>
  %1 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%0 : tensor<16xf32>) outs(%e : tensor<16xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = math.exp %in : f32
    linalg.yield %r : f32
  } -> tensor<16xf32>
  return %1 : tensor<16xf32>
}
