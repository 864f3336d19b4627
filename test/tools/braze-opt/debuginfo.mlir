// RUN: braze-opt %s --mlir-print-debuginfo | FileCheck %s
// RUN: braze-opt %s | FileCheck %s --check-prefix=NOLOC

// --mlir-print-debuginfo prints each op's location, naming this file and line.
// CHECK: arith.addf {{.*}} loc(#[[LOC:loc[0-9]*]])
// CHECK: #[[LOC]] = loc("{{.*}}debuginfo.mlir":10:8)
// NOLOC-NOT: loc(
func.func @f(%a: f32) -> f32 {
  // The next line is the addf.
  %0 = arith.addf %a, %a : f32
  return %0 : f32
}
