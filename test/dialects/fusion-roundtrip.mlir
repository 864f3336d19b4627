// RUN: braze-opt %s | braze-opt | FileCheck %s

// A group prints in generic form and parses back to the same op.
// CHECK-LABEL: func.func @group
//       CHECK:   %[[G:.+]]:2 = "fusion.group"(%{{.+}}, %{{.+}}) ({
//       CHECK:   ^bb0(%[[A:.+]]: tensor<4xf32>, %[[B:.+]]: tensor<4xf32>):
//       CHECK:     %[[S:.+]] = arith.addf %[[A]], %[[B]] : tensor<4xf32>
//       CHECK:     "fusion.yield"(%[[S]], %[[A]]) {{.*}}: (tensor<4xf32>, tensor<4xf32>) -> ()
//       CHECK:   }) {kind = "elementwise", label = "group0"{{.*}}} : (tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
//       CHECK:   return %[[G]]#0, %[[G]]#1
func.func @group(%a: tensor<4xf32>, %b: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %g:2 = "fusion.group"(%a, %b) ({
  ^bb0(%x: tensor<4xf32>, %y: tensor<4xf32>):
    %s = arith.addf %x, %y : tensor<4xf32>
    "fusion.yield"(%s, %x) {operandSegmentSizes = array<i32: 1, 1, 0, 0, 0, 0, 0, 0>} : (tensor<4xf32>, tensor<4xf32>) -> ()
  }) {kind = "elementwise", label = "group0", operandSegmentSizes = array<i32: 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 1, 0, 0, 0, 0, 0, 0>} : (tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
  return %g#0, %g#1 : tensor<4xf32>, tensor<4xf32>
}

// A group with no operands and no results is valid.
// CHECK-LABEL: func.func @empty
//       CHECK:   "fusion.group"() ({
//       CHECK:     "fusion.yield"()
func.func @empty() {
  "fusion.group"() ({
    "fusion.yield"() {operandSegmentSizes = array<i32: 0, 0, 0, 0, 0, 0, 0, 0>} : () -> ()
  }) {kind = "elementwise", label = "group1", operandSegmentSizes = array<i32: 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 0, 0, 0, 0, 0, 0, 0, 0>} : () -> ()
  return
}

// Inputs and results of different shapes and dtypes share one group (each is its own slot).
// CHECK-LABEL: func.func @mixed_types
//       CHECK:   %{{.+}}:2 = "fusion.group"(%{{.+}}, %{{.+}}) ({
//       CHECK:   }) {{.*}}operandSegmentSizes = array<i32: 1, 1, 0{{.*}}resultSegmentSizes = array<i32: 1, 1, 0{{.*}} : (tensor<4x8xf32>, tensor<8xi1>) -> (tensor<4x8xf32>, tensor<8xi1>)
func.func @mixed_types(%a: tensor<4x8xf32>, %m: tensor<8xi1>) -> (tensor<4x8xf32>, tensor<8xi1>) {
  %g:2 = "fusion.group"(%a, %m) ({
  ^bb0(%x: tensor<4x8xf32>, %y: tensor<8xi1>):
    "fusion.yield"(%x, %y) {operandSegmentSizes = array<i32: 1, 1, 0, 0, 0, 0, 0, 0>} : (tensor<4x8xf32>, tensor<8xi1>) -> ()
  }) {kind = "elementwise", label = "group0", operandSegmentSizes = array<i32: 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 1, 0, 0, 0, 0, 0, 0>} : (tensor<4x8xf32>, tensor<8xi1>) -> (tensor<4x8xf32>, tensor<8xi1>)
  return %g#0, %g#1 : tensor<4x8xf32>, tensor<8xi1>
}
