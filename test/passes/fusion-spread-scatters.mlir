// torch-mlir registers tm_tensor in the importer's context, not braze-opt's: the scatter is read
// as an unregistered op (generic form), which is all the pass needs (its name and operands).
// RUN: braze-opt %s --allow-unregistered-dialect --split-input-file -p fusion-spread-scatters | FileCheck %s

// A cache write cache.index_copy_(2, pos, v) with v an argument: the updates are read from a
// buffer (through a reshape), so they get an elementwise producer x + 0.0 that IREE fuses into
// the scatter's dispatch.
// CHECK-LABEL: func.func @from_argument
//       CHECK:   %[[U:.+]] = tensor.expand_shape %arg2
//       CHECK:   %[[Z:.+]] = arith.constant 0.000000e+00 : bf16
//       CHECK:   %[[P:.+]] = linalg.generic {{.+}} iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%[[U]] : tensor<128x1x1x1x1xbf16>)
//       CHECK:     arith.addf %{{.+}}, %[[Z]] : bf16
//       CHECK:   "tm_tensor.scatter"(%[[P]], %arg1, %arg0)
func.func @from_argument(%cache: tensor<1x2x64x64xbf16>, %idx: tensor<128x4xi64>, %v: tensor<128xbf16>) -> tensor<1x2x64x64xbf16> {
  %u = tensor.expand_shape %v [[0, 1, 2, 3, 4]] output_shape [128, 1, 1, 1, 1] : tensor<128xbf16> into tensor<128x1x1x1x1xbf16>
  %s = "tm_tensor.scatter"(%u, %idx, %cache) <{dimension_map = array<i64: 0, 1, 2, 3>, operandSegmentSizes = array<i32: 2, 1>, unique_indices = true}> ({
  ^bb0(%a: bf16, %b: bf16):
    "tm_tensor.yield"(%a) : (bf16) -> ()
  }) : (tensor<128x1x1x1x1xbf16>, tensor<128x4xi64>, tensor<1x2x64x64xbf16>) -> tensor<1x2x64x64xbf16>
  return %s : tensor<1x2x64x64xbf16>
}

// -----

#id = affine_map<(d0) -> (d0)>

// Updates an elementwise generic makes (RoPE on the keys) are fused by IREE already: left alone.
// CHECK-LABEL: func.func @from_elementwise
//       CHECK:   %[[G:.+]] = linalg.generic
//   CHECK-NOT:   arith.constant
//       CHECK:   %[[U:.+]] = tensor.expand_shape %[[G]]
//   CHECK-NOT:   linalg.generic
//       CHECK:   "tm_tensor.scatter"(%[[U]], %arg1, %arg0)
func.func @from_elementwise(%cache: tensor<1x2x64x64xf32>, %idx: tensor<128x4xi64>, %v: tensor<128xf32>) -> tensor<1x2x64x64xf32> {
  %e = tensor.empty() : tensor<128xf32>
  %g = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%v : tensor<128xf32>) outs(%e : tensor<128xf32>) {
  ^bb0(%in: f32, %out: f32):
    %n = arith.negf %in : f32
    linalg.yield %n : f32
  } -> tensor<128xf32>
  %u = tensor.expand_shape %g [[0, 1, 2, 3, 4]] output_shape [128, 1, 1, 1, 1] : tensor<128xf32> into tensor<128x1x1x1x1xf32>
  %s = "tm_tensor.scatter"(%u, %idx, %cache) <{dimension_map = array<i64: 0, 1, 2, 3>, operandSegmentSizes = array<i32: 2, 1>, unique_indices = true}> ({
  ^bb0(%a: f32, %b: f32):
    "tm_tensor.yield"(%a) : (f32) -> ()
  }) : (tensor<128x1x1x1x1xf32>, tensor<128x4xi64>, tensor<1x2x64x64xf32>) -> tensor<1x2x64x64xf32>
  return %s : tensor<1x2x64x64xf32>
}

// -----

#red = affine_map<(d0, d1) -> (d0, d1)>
#out = affine_map<(d0, d1) -> (d0)>

// Updates a reduction makes are read from a buffer too (IREE fuses no reduction into a scatter).
// CHECK-LABEL: func.func @from_reduction
//       CHECK:   %[[R:.+]] = linalg.generic {{.+}} iterator_types = ["parallel", "reduction"]
//       CHECK:   %[[P:.+]] = linalg.generic {{.+}} ins(%[[R]] : tensor<8xf32>)
//       CHECK:   "tm_tensor.scatter"(%[[P]], %arg1, %arg0)
func.func @from_reduction(%t: tensor<64xf32>, %idx: tensor<8x1xi64>, %v: tensor<8x16xf32>) -> tensor<64xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<8xf32>) -> tensor<8xf32>
  %r = linalg.generic {indexing_maps = [#red, #out], iterator_types = ["parallel", "reduction"]} ins(%v : tensor<8x16xf32>) outs(%f : tensor<8xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %s = arith.addf %in, %acc : f32
    linalg.yield %s : f32
  } -> tensor<8xf32>
  %s = "tm_tensor.scatter"(%r, %idx, %t) <{dimension_map = array<i64: 0>, operandSegmentSizes = array<i32: 2, 1>, unique_indices = true}> ({
  ^bb0(%a: f32, %b: f32):
    "tm_tensor.yield"(%a) : (f32) -> ()
  }) : (tensor<8xf32>, tensor<8x1xi64>, tensor<64xf32>) -> tensor<64xf32>
  return %s : tensor<64xf32>
}

// -----

// Integer updates are left alone (x + 0 is folded away).
// CHECK-LABEL: func.func @integers
//   CHECK-NOT:   linalg.generic
//       CHECK:   "tm_tensor.scatter"(%arg2, %arg1, %arg0)
func.func @integers(%t: tensor<64xi64>, %idx: tensor<8x1xi64>, %v: tensor<8xi64>) -> tensor<64xi64> {
  %s = "tm_tensor.scatter"(%v, %idx, %t) <{dimension_map = array<i64: 0>, operandSegmentSizes = array<i32: 2, 1>, unique_indices = true}> ({
  ^bb0(%a: i64, %b: i64):
    "tm_tensor.yield"(%a) : (i64) -> ()
  }) : (tensor<8xi64>, tensor<8x1xi64>, tensor<64xi64>) -> tensor<64xi64>
  return %s : tensor<64xi64>
}
