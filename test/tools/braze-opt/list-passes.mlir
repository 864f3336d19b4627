// RUN: braze-opt --list-passes | FileCheck %s

// --list-passes names braze's passes with their typed options, its pipelines with what they
// expand to, and says upstream passes are accepted too.
// CHECK: braze passes
// CHECK: fusion-configure-kernels - {{.+}}
// CHECK: target=<str> (default: '') {{.+}}
// CHECK: fusion-form-groups - {{.+}}
// CHECK: recompute-multi-use=<bool> (default: true) {{.+}}
// CHECK: max-recompute-flops=<int> (default: 16) {{.+}}
// CHECK: fusion-lower-to-linalg - {{.+}}
// CHECK: fusion-report - {{.+}}
// CHECK: braze pipelines:
// CHECK: fusion-baseline-pipeline - {{.+}}
// CHECK-NEXT: = canonicalize,cse
// CHECK: fusion-default-pipeline - {{.+}}
// CHECK: Upstream MLIR passes are accepted too
