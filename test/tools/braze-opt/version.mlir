// RUN: braze-opt --version | FileCheck %s

// --version names braze's and torch-mlir's versions.
// CHECK: braze-opt (braze {{[0-9]+\.[0-9]+}}
// CHECK: torch-mlir
