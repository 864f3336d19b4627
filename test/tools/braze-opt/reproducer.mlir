// RUN: not braze-opt %s -p cse,one-shot-bufferize,canonicalize --mlir-pass-pipeline-crash-reproducer=%t.repro.mlir 2>&1 | FileCheck %s
// RUN: FileCheck %s --check-prefix=REPRO < %t.repro.mlir
// RUN: not braze-opt %t.repro.mlir -p one-shot-bufferize 2>&1 | FileCheck %s --check-prefix=REPLAY
// RUN: not braze-opt %s -p one-shot-bufferize 2>&1 | FileCheck %s --check-prefix=DEFAULT

// A failing pass: its diagnostic at the op's location, then the reproducer file, which
// holds the IR that went into the failing pass (after cse), and the command that replays it.
// CHECK: reproducer.mlir:24:8: error: op was not bufferized
// CHECK: braze-opt: pass 'one-shot-bufferize' failed; reproducer written to {{.*}}.repro.mlir
// CHECK-NEXT: braze-opt: reproduce with: braze-opt {{.*}}.repro.mlir -p one-shot-bufferize
// REPRO: // Replay: braze-opt {{.*}} -p one-shot-bufferize
// REPRO: func.func @f
// REPRO: arith.addf
// REPRO-NOT: arith.addf
// REPRO: arith.mulf
// REPRO: loc("{{.*}}reproducer.mlir":
// Replaying the reproducer fails the same way, at the original source location.
// REPLAY: reproducer.mlir:24:8: error: op was not bufferized
// Without the flag the reproducer goes to the temp directory.
// DEFAULT: reproducer written to {{.*}}braze-opt-reproducer-{{[0-9]+}}.mlir
func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
  // cse merges the two adds before one-shot-bufferize fails on the first one; function
  // boundaries are not bufferized without bufferize-function-boundaries.
  %0 = arith.addf %a, %a : tensor<4xf32>
  %1 = arith.addf %a, %a : tensor<4xf32>
  %2 = arith.mulf %0, %1 : tensor<4xf32>
  return %2 : tensor<4xf32>
}
