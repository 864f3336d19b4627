// RUN: rm -f %t.out.mlir
// RUN: braze-opt %s -p cse -o %t.out.mlir | FileCheck %s --check-prefix=STDOUT --allow-empty
// RUN: FileCheck %s < %t.out.mlir
// RUN: braze-opt %s -o - | FileCheck %s

// -o FILE writes the result to FILE and nothing to stdout; -o - means stdout.
// STDOUT-NOT: func.func
// CHECK: func.func @f
func.func @f() { return }
