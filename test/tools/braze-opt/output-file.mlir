// RUN: rm -f %t.out.mlir
// RUN: braze-opt %s -p cse -o %t.out.mlir | FileCheck %s --check-prefix=STDOUT --allow-empty
// RUN: FileCheck %s < %t.out.mlir
// RUN: braze-opt %s -o - | FileCheck %s
// RUN: not braze-opt %s -p one-shot-bufferize -o %t.out.mlir 2>/dev/null
// RUN: FileCheck %s < %t.out.mlir
// RUN: cp %s %t.input.mlir
// RUN: not braze-opt %t.input.mlir -p one-shot-bufferize -o %t.input.mlir 2>/dev/null
// RUN: diff %s %t.input.mlir

// -o FILE writes the result to FILE and nothing to stdout; -o - means stdout.
// STDOUT-NOT: func.func
// CHECK: func.func @f
// A failing run leaves the output file as it was (here: the earlier result), even when -o
// names the input file itself.
func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = arith.addf %a, %a : tensor<4xf32>
  return %0 : tensor<4xf32>
}
