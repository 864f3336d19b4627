// RUN: braze-opt %s -p cse,canonicalize --mlir-print-ir-after=cse 2>&1 >/dev/null | FileCheck %s --check-prefix=AFTER
// RUN: braze-opt %s -p cse,canonicalize --mlir-print-ir-before=canonicalize 2>&1 >/dev/null | FileCheck %s --check-prefix=BEFORE
// RUN: braze-opt %s -p cse,canonicalize --mlir-print-ir-after-all 2>&1 >/dev/null | FileCheck %s --check-prefix=AFTERALL
// RUN: braze-opt %s -p cse,canonicalize --mlir-print-ir-before-all 2>&1 >/dev/null | FileCheck %s --check-prefix=BEFOREALL
// RUN: braze-opt %s -p cse,canonicalize --mlir-print-ir-after=cse 2>/dev/null | FileCheck %s --check-prefix=STDOUT

// --mlir-print-ir-after=PASS prints to stderr after that pass only (cse has merged the adds).
// AFTER: // -----// IR Dump After {{.*}}: cse //----- //
// AFTER: arith.addf
// AFTER-NOT: arith.addf
// AFTER-NOT: IR Dump
// --mlir-print-ir-before=PASS prints before that pass only.
// BEFORE-NOT: IR Dump Before {{.*}}: cse
// BEFORE: // -----// IR Dump Before {{.*}}: canonicalize
// BEFORE-NOT: IR Dump
// The -all variants print around every pass, in order.
// AFTERALL-NOT: IR Dump Before
// AFTERALL: IR Dump After {{.*}}: cse
// AFTERALL: IR Dump After {{.*}}: canonicalize
// BEFOREALL-NOT: IR Dump After
// BEFOREALL: IR Dump Before {{.*}}: cse
// BEFOREALL: arith.addf
// BEFOREALL: arith.addf
// BEFOREALL: IR Dump Before {{.*}}: canonicalize
// The dumps go to stderr: stdout holds only the result.
// STDOUT-NOT: IR Dump
// STDOUT: func.func @f
func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = arith.addf %a, %a : tensor<4xf32>
  %1 = arith.addf %a, %a : tensor<4xf32>
  %2 = arith.mulf %0, %1 : tensor<4xf32>
  return %2 : tensor<4xf32>
}
