// RUN: braze-opt %s --split-input-file -p fusion-fold-concat | FileCheck %s

#id = affine_map<(d0, d1, d2) -> (d0, d1, d2)>

// rotate_half, cat(-x2, x1) along the last dimension: one generic over [.., 2, 8] reading x's
// second half (block 1) negated and its first (block 0), selected by the block index; the
// slices, the negation and the concat are gone.
// CHECK-DAG: #[[B1:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, 1, d3)>
// CHECK-DAG: #[[B0:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, 0, d3)>
// CHECK-LABEL: func.func @rotate_half
//   CHECK-NOT:   tensor.extract_slice
//       CHECK:   %[[X:.+]] = tensor.expand_shape %arg0 {{\[}}[0], [1], [2, 3]] output_shape [2, 4, 2, 8] : tensor<2x4x16xf32> into tensor<2x4x2x8xf32>
//       CHECK:   %[[G:.+]] = linalg.generic {indexing_maps = [#[[B1]], #[[B0]], #{{.+}}], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%[[X]], %[[X]] :
//       CHECK:   ^bb0(%[[HI:.+]]: f32, %[[LO:.+]]: f32, %{{.+}}: f32):
//       CHECK:     %[[N:.+]] = arith.negf %[[HI]] : f32
//       CHECK:     %[[I:.+]] = linalg.index 2 : index
//       CHECK:     %[[E:.+]] = arith.cmpi eq, %[[I]], %c0 : index
//       CHECK:     %[[S:.+]] = arith.select %[[E]], %[[N]], %[[LO]] : f32
//       CHECK:     linalg.yield %[[S]] : f32
//       CHECK:   %[[R:.+]] = tensor.collapse_shape %[[G]] {{\[}}[0], [1], [2, 3]] : tensor<2x4x2x8xf32> into tensor<2x4x16xf32>
//   CHECK-NOT:   tensor.concat
//       CHECK:   return %[[R]]
func.func @rotate_half(%x: tensor<2x4x16xf32>) -> tensor<2x4x16xf32> {
  %lo = tensor.extract_slice %x[0, 0, 0] [2, 4, 8] [1, 1, 1] : tensor<2x4x16xf32> to tensor<2x4x8xf32>
  %hi = tensor.extract_slice %x[0, 0, 8] [2, 4, 8] [1, 1, 1] : tensor<2x4x16xf32> to tensor<2x4x8xf32>
  %e = tensor.empty() : tensor<2x4x8xf32>
  %n = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel"]} ins(%hi : tensor<2x4x8xf32>) outs(%e : tensor<2x4x8xf32>) {
  ^bb0(%a: f32, %b: f32):
    %m = arith.negf %a : f32
    linalg.yield %m : f32
  } -> tensor<2x4x8xf32>
  %c = tensor.concat dim(2) %n, %lo : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x16xf32>
  return %c : tensor<2x4x16xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>

// Along dimension 0, three pieces of two tensors: a bare slice, a slice times a vector broadcast
// along the rows (its map does not read the concat dimension: it is kept, renamed), and a sum of
// slices of both tensors; the select chain picks block 0, 1, else 2.
// CHECK-DAG: #[[A2:.+]] = affine_map<(d0, d1, d2) -> (2, d1, d2)>
// CHECK-DAG: #[[A0:.+]] = affine_map<(d0, d1, d2) -> (0, d1, d2)>
// CHECK-DAG: #[[W:.+]] = affine_map<(d0, d1, d2) -> (d2)>
// CHECK-DAG: #[[A1:.+]] = affine_map<(d0, d1, d2) -> (1, d1, d2)>
// CHECK-DAG: #[[B3:.+]] = affine_map<(d0, d1, d2) -> (3, d1, d2)>
// CHECK-LABEL: func.func @three_pieces
//       CHECK:   %[[X:.+]] = tensor.expand_shape %arg0 {{\[}}[0, 1], [2]] output_shape [4, 4, 5] : tensor<16x5xf32> into tensor<4x4x5xf32>
//       CHECK:   %[[Y:.+]] = tensor.expand_shape %arg1 {{\[}}[0, 1], [2]] output_shape [4, 4, 5] : tensor<16x5xf32> into tensor<4x4x5xf32>
//       CHECK:   linalg.generic {indexing_maps = [#[[A2]], #[[A0]], #[[W]], #[[A1]], #[[B3]], #{{.+}}], {{.+}} ins(%[[X]], %[[X]], %arg2, %[[X]], %[[Y]] :
//       CHECK:     arith.mulf
//       CHECK:     arith.addf
//       CHECK:     %[[I:.+]] = linalg.index 0 : index
//       CHECK:     arith.cmpi eq, %[[I]], %c1
//       CHECK:     arith.cmpi eq, %[[I]], %c0
//       CHECK:   tensor.collapse_shape {{.+}} {{\[}}[0, 1], [2]] : tensor<3x4x5xf32> into tensor<12x5xf32>
func.func @three_pieces(%x: tensor<16x5xf32>, %y: tensor<16x5xf32>, %w: tensor<5xf32>) -> tensor<12x5xf32> {
  %a = tensor.extract_slice %x[8, 0] [4, 5] [1, 1] : tensor<16x5xf32> to tensor<4x5xf32>
  %b = tensor.extract_slice %x[0, 0] [4, 5] [1, 1] : tensor<16x5xf32> to tensor<4x5xf32>
  %c = tensor.extract_slice %x[4, 0] [4, 5] [1, 1] : tensor<16x5xf32> to tensor<4x5xf32>
  %d = tensor.extract_slice %y[12, 0] [4, 5] [1, 1] : tensor<16x5xf32> to tensor<4x5xf32>
  %e = tensor.empty() : tensor<4x5xf32>
  %bw = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]} ins(%b, %w : tensor<4x5xf32>, tensor<5xf32>) outs(%e : tensor<4x5xf32>) {
  ^bb0(%p: f32, %q: f32, %o: f32):
    %m = arith.mulf %p, %q : f32
    linalg.yield %m : f32
  } -> tensor<4x5xf32>
  %cd = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%c, %d : tensor<4x5xf32>, tensor<4x5xf32>) outs(%e : tensor<4x5xf32>) {
  ^bb0(%p: f32, %q: f32, %o: f32):
    %s = arith.addf %p, %q : f32
    linalg.yield %s : f32
  } -> tensor<4x5xf32>
  %r = tensor.concat dim(0) %a, %bw, %cd : (tensor<4x5xf32>, tensor<4x5xf32>, tensor<4x5xf32>) -> tensor<12x5xf32>
  return %r : tensor<12x5xf32>
}

// -----

// Left alone: pieces of different sizes; a slice at an offset that is no multiple of the
// piece's size; a slice that is not whole along another dimension.
// CHECK-LABEL: func.func @unequal
//       CHECK:   tensor.concat
// CHECK-LABEL: func.func @misaligned
//       CHECK:   tensor.concat
// CHECK-LABEL: func.func @partial_rows
//       CHECK:   tensor.concat
func.func @unequal(%x: tensor<2x16xf32>) -> tensor<2x16xf32> {
  %a = tensor.extract_slice %x[0, 4] [2, 12] [1, 1] : tensor<2x16xf32> to tensor<2x12xf32>
  %b = tensor.extract_slice %x[0, 0] [2, 4] [1, 1] : tensor<2x16xf32> to tensor<2x4xf32>
  %c = tensor.concat dim(1) %a, %b : (tensor<2x12xf32>, tensor<2x4xf32>) -> tensor<2x16xf32>
  return %c : tensor<2x16xf32>
}
func.func @misaligned(%x: tensor<2x16xf32>) -> tensor<2x16xf32> {
  %a = tensor.extract_slice %x[0, 4] [2, 8] [1, 1] : tensor<2x16xf32> to tensor<2x8xf32>
  %b = tensor.extract_slice %x[0, 0] [2, 8] [1, 1] : tensor<2x16xf32> to tensor<2x8xf32>
  %c = tensor.concat dim(1) %a, %b : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x16xf32>
  return %c : tensor<2x16xf32>
}
func.func @partial_rows(%x: tensor<4x16xf32>) -> tensor<2x16xf32> {
  %a = tensor.extract_slice %x[0, 8] [2, 8] [1, 1] : tensor<4x16xf32> to tensor<2x8xf32>
  %b = tensor.extract_slice %x[0, 0] [2, 8] [1, 1] : tensor<4x16xf32> to tensor<2x8xf32>
  %c = tensor.concat dim(1) %a, %b : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x16xf32>
  return %c : tensor<2x16xf32>
}
