// RUN: braze-opt %s --allow-unregistered-dialect | FileCheck %s
// RUN: not braze-opt %s 2>&1 | FileCheck %s --check-prefix=REJECT

// Ops of unknown dialects parse only with --allow-unregistered-dialect.
// CHECK: "mystery.op"() : () -> ()
// REJECT: allow-unregistered-dialect.mlir:8:15: error: operation being parsed with an unregistered dialect
func.func @f() {
  "mystery.op"() : () -> ()
  return
}
