// RUN: braze-opt %s -p cse,canonicalize --mlir-timing 2>&1 >/dev/null | FileCheck %s
// RUN: braze-opt %s -p cse 2>&1 >/dev/null | FileCheck %s --check-prefix=NOTIMING --allow-empty

// --mlir-timing prints MLIR's execution time report, one row per pass, on stderr.
// CHECK: Execution time report
// CHECK: Total Execution Time
// CHECK: CSE
// CHECK: Canonicalizer
// NOTIMING-NOT: Execution time report
func.func @f() { return }
