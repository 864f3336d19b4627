// RUN: not braze-opt %s --split-input-file -p cse 2>/dev/null | FileCheck %s
// RUN: not braze-opt %s --split-input-file -p cse -o /dev/null 2>&1 | FileCheck %s --check-prefix=DIAG
// RUN: not braze-opt %s 2>&1 | FileCheck %s --check-prefix=WHOLE

// Each chunk is parsed and transformed on its own; the outputs of the chunks that
// succeed are joined by the marker.
// CHECK-LABEL: func.func @first
//       CHECK: // -----
//  CHECK-NEXT: module {
//  CHECK-NEXT:   func.func @third
func.func @first() { return }

// -----

// A chunk that fails to parse is reported at its line in the original file (line 20),
// and the chunks after it still run.
// DIAG: split-input-file.mlir:20:8: error: custom op 'oops' is unknown
// DIAG-NEXT: {{^}}  %0 = oops{{$}}
func.func @second() {
  %0 = oops
}

// -----

// Without --split-input-file the markers are plain comments and the whole file is one
// module, which fails at the same original line.
// WHOLE: split-input-file.mlir:20:8: error: custom op 'oops' is unknown
func.func @third() { return }
