// RUN: braze-opt %s --split-input-file --verify-diagnostics

// The kind must be one of the known kinds.
func.func @bad_kind(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'fusion.group' kind "scan" is not one of elementwise, reduction, contraction-epilogue}}
  %g = "fusion.group"(%a) ({
  ^bb0(%x: tensor<4xf32>):
    "fusion.yield"(%x) {operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<4xf32>) -> ()
  }) {kind = "scan", label = "group0", operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<4xf32>) -> tensor<4xf32>
  return %g : tensor<4xf32>
}

// -----

// Block arguments must match the operands.
func.func @bad_args(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'fusion.group' block arguments must match its operands}}
  %g = "fusion.group"(%a) ({
  ^bb0(%x: tensor<8xf32>):
    "fusion.yield"(%x) {operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<8xf32>) -> ()
  }) {kind = "elementwise", label = "group0", operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<4xf32>) -> tensor<8xf32>
  return %a : tensor<4xf32>
}

// -----

// The yielded values must match the results.
func.func @bad_yield(%a: tensor<4xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'fusion.yield' operands must match the group's results}}
  %g = "fusion.group"(%a) ({
  ^bb0(%x: tensor<4xf32>):
    "fusion.yield"(%x) {operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<4xf32>) -> ()
  }) {kind = "elementwise", label = "group0", operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<4xf32>) -> tensor<8xf32>
  return %g : tensor<8xf32>
}

// -----

// The region must end in fusion.yield.
func.func @no_yield(%a: tensor<4xf32>) {
  // expected-error @+1 {{'fusion.group' region must end in 'fusion.yield'}}
  "fusion.group"(%a) ({
  ^bb0(%x: tensor<4xf32>):
    %s = arith.addf %x, %x : tensor<4xf32>
  }) {kind = "elementwise", label = "group0", operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 0, 0, 0, 0, 0, 0, 0, 0>} : (tensor<4xf32>) -> ()
  return
}

// -----

// Ops with side effects may not be inside a group.
func.func @side_effect(%a: tensor<4xf32>) {
  // expected-error @+1 {{'fusion.group' may only hold side-effect-free ops, found 'func.call'}}
  "fusion.group"(%a) ({
  ^bb0(%x: tensor<4xf32>):
    func.call @f() : () -> ()
    "fusion.yield"() {operandSegmentSizes = array<i32: 0, 0, 0, 0, 0, 0, 0, 0>} : () -> ()
  }) {kind = "elementwise", label = "group0", operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 0, 0, 0, 0, 0, 0, 0, 0>} : (tensor<4xf32>) -> ()
  return
}
func.func private @f()

// -----

// fusion.yield only terminates a group.
func.func @stray_yield() {
  scf.execute_region {
    // expected-error @+1 {{'fusion.yield' must be inside a 'fusion.group'}}
    "fusion.yield"() {operandSegmentSizes = array<i32: 0, 0, 0, 0, 0, 0, 0, 0>} : () -> ()
  }
  return
}

// -----

// A group uses its first N operand slots: a gap in the slots is rejected.
func.func @slot_gap(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'fusion.group' must use its first 1 slots of operandSegmentSizes}}
  %g = "fusion.group"(%a) ({
  ^bb0(%x: tensor<4xf32>):
    "fusion.yield"(%x) {operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<4xf32>) -> ()
  }) {kind = "elementwise", label = "group0", operandSegmentSizes = array<i32: 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<4xf32>) -> tensor<4xf32>
  return %g : tensor<4xf32>
}

// -----

// A group written without its slot attributes gets a diagnostic, not a crash.
func.func @no_segments(%a: tensor<4xf32>, %m: tensor<4xi1>) -> tensor<4xf32> {
  // expected-error @+1 {{'fusion.group' needs the attribute operandSegmentSizes}}
  %g = "fusion.group"(%a, %m) ({
  ^bb0(%x: tensor<4xf32>, %y: tensor<4xi1>):
    "fusion.yield"(%x) {operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<4xf32>) -> ()
  }) {kind = "elementwise", label = "group0"} : (tensor<4xf32>, tensor<4xi1>) -> tensor<4xf32>
  return %g : tensor<4xf32>
}

// -----

// A group without its kind (or label) gets a diagnostic naming the attribute, not a crash.
func.func @no_kind(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'fusion.group' requires a string attribute 'kind'}}
  %g = "fusion.group"(%a) ({
  ^bb0(%x: tensor<4xf32>):
    "fusion.yield"(%x) {operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<4xf32>) -> ()
  }) {label = "group0", operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<4xf32>) -> tensor<4xf32>
  return %g : tensor<4xf32>
}

// -----

// A kind that is not a string is rejected the same way.
func.func @kind_not_a_string(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'fusion.group' requires a string attribute 'kind'}}
  %g = "fusion.group"(%a) ({
  ^bb0(%x: tensor<4xf32>):
    "fusion.yield"(%x) {operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<4xf32>) -> ()
  }) {kind = 3 : i32, label = "group0", operandSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0, 0, 0, 0, 0, 0>} : (tensor<4xf32>) -> tensor<4xf32>
  return %g : tensor<4xf32>
}
