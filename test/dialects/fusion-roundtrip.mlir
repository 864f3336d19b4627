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
    "fusion.yield"(%s, %x) : (tensor<4xf32>, tensor<4xf32>) -> ()
  }) {kind = "elementwise", label = "group0"} : (tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
  return %g#0, %g#1 : tensor<4xf32>, tensor<4xf32>
}

// A group with no operands and no results is valid.
// CHECK-LABEL: func.func @empty
//       CHECK:   "fusion.group"() ({
//       CHECK:     "fusion.yield"()
func.func @empty() {
  "fusion.group"() ({
    "fusion.yield"() : () -> ()
  }) {kind = "elementwise", label = "group1"} : () -> ()
  return
}
