// RUN: braze-opt --list-passes | FileCheck %s

// --list-passes names braze's pipelines with what they expand to, and says upstream
// passes are accepted too.
// CHECK: braze passes
// CHECK: braze pipelines:
// CHECK: fusion-baseline-pipeline - {{.+}}
// CHECK-NEXT: = canonicalize,cse
// CHECK: fusion-default-pipeline - {{.+}}
// CHECK: Upstream MLIR passes are accepted too
