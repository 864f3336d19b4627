// RUN: braze-opt --emit-irdl | FileCheck %s
// RUN: braze-opt --emit-irdl -o %t.irdl.mlir && FileCheck %s < %t.irdl.mlir

// --emit-irdl prints the fusion dialect's IRDL definition (to -o FILE when given).
// CHECK: irdl.dialect @fusion
// CHECK: irdl.operation @group
// CHECK: irdl.operation @yield
