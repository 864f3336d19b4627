// RUN: braze-opt %s -p fusion-form-groups --print-decisions 2>&1 >/dev/null | FileCheck %s --check-prefix=ALL
// RUN: braze-opt %s -p fusion-form-groups --decision-limit=1 --print-decisions 2>%t.err | FileCheck %s --check-prefix=ONE
// RUN: FileCheck %s --input-file=%t.err --check-prefix=ONE-LOG

// Each rewrite a pass decides to make is numbered in pipeline order; --decision-limit=N keeps
// only the first N (as LLVM's -opt-bisect-limit), which is how braze check finds the decision
// that breaks a model.
// ALL: braze-opt: decision 1: fusion-form-groups: group of 2 ops (linalg.exp, linalg.tanh) at {{.*}}decisions.mlir:17
// ALL-NEXT: braze-opt: decision 2: fusion-form-groups: group of 2 ops (linalg.exp, linalg.tanh) at {{.*}}decisions.mlir:22
// ONE-LABEL: func.func @first
//       ONE:   "fusion.group"
// ONE-LABEL: func.func @second
//   ONE-NOT:   "fusion.group"
// ONE-LOG: braze-opt: decision 1: fusion-form-groups
// ONE-LOG-NEXT: braze-opt: decision 2 (skipped): fusion-form-groups
func.func @first(%a: tensor<4xf32>, %e: tensor<4xf32>) -> tensor<4xf32> {
  %0 = linalg.exp ins(%a : tensor<4xf32>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  %1 = linalg.tanh ins(%0 : tensor<4xf32>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  return %1 : tensor<4xf32>
}
func.func @second(%a: tensor<4xf32>, %e: tensor<4xf32>) -> tensor<4xf32> {
  %0 = linalg.exp ins(%a : tensor<4xf32>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  %1 = linalg.tanh ins(%0 : tensor<4xf32>) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  return %1 : tensor<4xf32>
}
