// RUN: not braze-opt %s --split-input-file --verify-diagnostics 2>&1 | FileCheck %s

// An expected error that is not produced fails, pointing at the directive.
// CHECK: verify-diagnostics-mismatch.mlir:5:4: error: expected error "this never happens" was not produced
// expected-error @+1 {{this never happens}}
func.func @valid() { return }

// -----

// A produced error that no directive expects fails, at the error's own location.
// CHECK: verify-diagnostics-mismatch.mlir:13:8: error: unexpected error: custom op 'foo' is unknown
func.func @unexpected() {
  %0 = foo
}

// -----

// An error on another line than the directive says does not count.
// CHECK: verify-diagnostics-mismatch.mlir:23:8: error: unexpected error: custom op 'bar' is unknown
// CHECK: verify-diagnostics-mismatch.mlir:22:6: error: expected error "custom op 'bar' is unknown" was not produced
func.func @wrong_line() {
  // expected-error @+2 {{custom op 'bar' is unknown}}
  %0 = bar
}
