// RUN: braze-opt %s -p 'cse,func.func(canonicalize)' | FileCheck %s
// RUN: braze-opt %s --pass-pipeline='builtin.module(cse,func.func(canonicalize))' | FileCheck %s
// RUN: braze-opt %s -p cse -p 'func.func(canonicalize)' | FileCheck %s
// RUN: braze-opt %s -p fusion-baseline-pipeline | FileCheck %s
// RUN: braze-opt %s | FileCheck %s --check-prefix=NOPASS
// RUN: braze-opt < %s | FileCheck %s --check-prefix=NOPASS

// -p, --pass-pipeline, repeated -p and a named braze pipeline all run upstream passes in
// order (cse merges the two adds); with no pipeline the IR comes back unchanged; fusion ops
// print in generic form.
// CHECK-LABEL: func.func @twice
//       CHECK:   %[[A:.+]] = arith.addf %arg0, %arg0
//   CHECK-NOT:   arith.addf
//       CHECK:   %[[M:.+]] = arith.mulf %[[A]], %[[A]]
//       CHECK:   "fusion.group"(%[[M]]) ({
//       CHECK:     "fusion.yield"
//       CHECK:   }) {kind = "elementwise", label = "g0"{{.*}}}
// NOPASS-LABEL: func.func @twice
//       NOPASS:   arith.addf
//       NOPASS:   arith.addf
func.func @twice(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = arith.addf %a, %a : tensor<4xf32>
  %1 = arith.addf %a, %a : tensor<4xf32>
  %2 = arith.mulf %0, %1 : tensor<4xf32>
  %g = "fusion.group"(%2) ({
  ^bb0(%x: tensor<4xf32>):
    %3 = math.exp %x : tensor<4xf32>
    "fusion.yield"(%3) {operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<4xf32>) -> ()
  }) {kind = "elementwise", label = "g0", operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<4xf32>) -> tensor<4xf32>
  return %g : tensor<4xf32>
}
