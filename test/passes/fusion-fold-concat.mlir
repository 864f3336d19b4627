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
#col = affine_map<(d0, d1) -> (d0)>

// Along dimension 1, three pieces of two tensors: a bare slice, a slice times a vector broadcast
// along the columns (its map does not read the concat dimension: it is kept, renamed), and a sum
// of slices of both tensors; the select chain picks block 0, 1, else 2.
// CHECK-DAG: #[[A2:.+]] = affine_map<(d0, d1, d2) -> (d0, 2, d2)>
// CHECK-DAG: #[[A0:.+]] = affine_map<(d0, d1, d2) -> (d0, 0, d2)>
// CHECK-DAG: #[[W:.+]] = affine_map<(d0, d1, d2) -> (d0)>
// CHECK-DAG: #[[A1:.+]] = affine_map<(d0, d1, d2) -> (d0, 1, d2)>
// CHECK-DAG: #[[B3:.+]] = affine_map<(d0, d1, d2) -> (d0, 3, d2)>
// CHECK-LABEL: func.func @three_pieces
//       CHECK:   %[[X:.+]] = tensor.expand_shape %arg0 {{\[}}[0], [1, 2]] output_shape [5, 4, 4] : tensor<5x16xf32> into tensor<5x4x4xf32>
//       CHECK:   %[[Y:.+]] = tensor.expand_shape %arg1 {{\[}}[0], [1, 2]] output_shape [5, 4, 4] : tensor<5x16xf32> into tensor<5x4x4xf32>
//       CHECK:   linalg.generic {indexing_maps = [#[[A2]], #[[A0]], #[[W]], #[[A1]], #[[B3]], #{{.+}}], {{.+}} ins(%[[X]], %[[X]], %arg2, %[[X]], %[[Y]] :
//       CHECK:     arith.mulf
//       CHECK:     arith.addf
//       CHECK:     %[[I:.+]] = linalg.index 1 : index
//       CHECK:     arith.cmpi eq, %[[I]], %c1
//       CHECK:     arith.cmpi eq, %[[I]], %c0
//       CHECK:   tensor.collapse_shape {{.+}} {{\[}}[0], [1, 2]] : tensor<5x3x4xf32> into tensor<5x12xf32>
func.func @three_pieces(%x: tensor<5x16xf32>, %y: tensor<5x16xf32>, %w: tensor<5xf32>) -> tensor<5x12xf32> {
  %a = tensor.extract_slice %x[0, 8] [5, 4] [1, 1] : tensor<5x16xf32> to tensor<5x4xf32>
  %b = tensor.extract_slice %x[0, 0] [5, 4] [1, 1] : tensor<5x16xf32> to tensor<5x4xf32>
  %c = tensor.extract_slice %x[0, 4] [5, 4] [1, 1] : tensor<5x16xf32> to tensor<5x4xf32>
  %d = tensor.extract_slice %y[0, 12] [5, 4] [1, 1] : tensor<5x16xf32> to tensor<5x4xf32>
  %e = tensor.empty() : tensor<5x4xf32>
  %bw = linalg.generic {indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel"]} ins(%b, %w : tensor<5x4xf32>, tensor<5xf32>) outs(%e : tensor<5x4xf32>) {
  ^bb0(%p: f32, %q: f32, %o: f32):
    %m = arith.mulf %p, %q : f32
    linalg.yield %m : f32
  } -> tensor<5x4xf32>
  %cd = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]} ins(%c, %d : tensor<5x4xf32>, tensor<5x4xf32>) outs(%e : tensor<5x4xf32>) {
  ^bb0(%p: f32, %q: f32, %o: f32):
    %s = arith.addf %p, %q : f32
    linalg.yield %s : f32
  } -> tensor<5x4xf32>
  %r = tensor.concat dim(1) %a, %bw, %cd : (tensor<5x4xf32>, tensor<5x4xf32>, tensor<5x4xf32>) -> tensor<5x12xf32>
  return %r : tensor<5x12xf32>
}

// -----

// Computed tensors (here arguments) read whole: their maps drop the block dimension.
// CHECK-DAG: #[[WHOLE:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d2, d3)>
// CHECK-LABEL: func.func @whole
//       CHECK:   linalg.generic {indexing_maps = [#[[WHOLE]], #[[WHOLE]], #{{.+}}], {{.+}} ins(%arg0, %arg1 : tensor<3x5x7xf32>, tensor<3x5x7xf32>)
//       CHECK:     linalg.index 1 : index
//       CHECK:   tensor.collapse_shape {{.+}} {{\[}}[0], [1, 2], [3]] : tensor<3x2x5x7xf32> into tensor<3x10x7xf32>
func.func @whole(%x: tensor<3x5x7xf32>, %y: tensor<3x5x7xf32>) -> tensor<3x10x7xf32> {
  %c = tensor.concat dim(1) %x, %y : (tensor<3x5x7xf32>, tensor<3x5x7xf32>) -> tensor<3x10x7xf32>
  return %c : tensor<3x10x7xf32>
}

// -----

// Left alone: pieces of different sizes; pieces that are whole blocks of the result (the concat
// dimension outermost but for ones); more than four pieces. A slice at an offset that is no
// multiple of the piece's size, or not whole along another dimension, is read whole as computed.
// CHECK-LABEL: func.func @unequal
//       CHECK:   tensor.concat
// CHECK-LABEL: func.func @misaligned
//       CHECK:   %[[M:.+]] = tensor.extract_slice %arg0[0, 4] [2, 8] [1, 1]
//       CHECK:   %[[X:.+]] = tensor.expand_shape %arg0
//       CHECK:   linalg.generic {{.+}} ins(%[[M]], %[[X]] : tensor<2x8xf32>, tensor<2x2x8xf32>)
// CHECK-LABEL: func.func @partial_rows
//       CHECK:   %[[A:.+]] = tensor.extract_slice %arg0[0, 8] [2, 8] [1, 1]
//       CHECK:   %[[B:.+]] = tensor.extract_slice %arg0[0, 0] [2, 8] [1, 1]
//       CHECK:   linalg.generic {{.+}} ins(%[[A]], %[[B]] : tensor<2x8xf32>, tensor<2x8xf32>)
//   CHECK-NOT:   tensor.concat
// CHECK-LABEL: func.func @outermost
//       CHECK:   tensor.concat
// CHECK-LABEL: func.func @five
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
func.func @outermost(%x: tensor<1x16x4xf32>) -> tensor<1x16x4xf32> {
  %a = tensor.extract_slice %x[0, 8, 0] [1, 8, 4] [1, 1, 1] : tensor<1x16x4xf32> to tensor<1x8x4xf32>
  %b = tensor.extract_slice %x[0, 0, 0] [1, 8, 4] [1, 1, 1] : tensor<1x16x4xf32> to tensor<1x8x4xf32>
  %c = tensor.concat dim(1) %a, %b : (tensor<1x8x4xf32>, tensor<1x8x4xf32>) -> tensor<1x16x4xf32>
  return %c : tensor<1x16x4xf32>
}
func.func @five(%x: tensor<2x3xf32>) -> tensor<2x15xf32> {
  %c = tensor.concat dim(1) %x, %x, %x, %x, %x : (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x15xf32>
  return %c : tensor<2x15xf32>
}
