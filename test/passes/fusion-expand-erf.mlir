// RUN: braze-opt %s --split-input-file -p fusion-expand-erf | FileCheck %s
// RUN: braze-opt %s --split-input-file -p 'fusion-expand-erf{rational=false}' | FileCheck %s --check-prefix=MULF

// GELU as torch-mlir imports it: erf(x / sqrt 2). The division becomes a multiplication by
// 1/sqrt(2) (as eager computes it), and erf one clamped rational function: the input clamped
// to [-3.92, 3.92], a numerator of degree 6 and a denominator of degree 5 in x^2 as fma
// chains, one division, the result clamped to [-1, 1]. No math.erf is left for IREE.
// CHECK-LABEL: func.func @gelu
// CHECK-NOT: math.erf
// CHECK: ^bb0(%[[IN:.+]]: f32, %{{.+}}: f32):
// CHECK: %[[HALF:.+]] = arith.constant 0.707106769 : f32
// CHECK: %[[X:.+]] = arith.mulf %[[IN]], %[[HALF]] : f32
// CHECK: %[[LO:.+]] = arith.constant -3.920000e+00 : f32
// CHECK: %[[HI:.+]] = arith.constant 3.920000e+00 : f32
// CHECK: %[[BELOW:.+]] = arith.cmpf olt, %[[X]], %[[LO]] : f32
// CHECK: %[[X1:.+]] = arith.select %[[BELOW]], %[[LO]], %[[X]] : f32
// CHECK: %[[ABOVE:.+]] = arith.cmpf ogt, %[[X1]], %[[HI]] : f32
// CHECK: %[[XC:.+]] = arith.select %[[ABOVE]], %[[HI]], %[[X1]] : f32
// CHECK: %[[S:.+]] = arith.mulf %[[XC]], %[[XC]] : f32
// CHECK-COUNT-5: math.fma %{{.+}}, %[[S]], %{{.+}} : f32
// CHECK: %[[P:.+]] = math.fma %{{.+}}, %[[S]], %{{.+}} : f32
// The denominator's constant term is 1.
// CHECK-COUNT-4: math.fma %{{.+}}, %[[S]], %{{.+}} : f32
// CHECK: %[[ONE:.+]] = arith.constant 1.000000e+00 : f32
// CHECK: %[[Q:.+]] = math.fma %{{.+}}, %[[S]], %[[ONE]] : f32
// CHECK: %[[XP:.+]] = arith.mulf %[[XC]], %[[P]] : f32
// CHECK: %[[E:.+]] = arith.divf %[[XP]], %[[Q]] : f32
// CHECK: %[[E0:.+]] = arith.cmpf olt, %[[E]]
// CHECK: %[[E1:.+]] = arith.select %[[E0]], %{{.+}}, %[[E]] : f32
// CHECK: %[[E2:.+]] = arith.cmpf ogt, %[[E1]]
// CHECK: %[[R:.+]] = arith.select %[[E2]], %{{.+}}, %[[E1]] : f32
// CHECK: arith.addf %[[R]], %{{.+}} : f32
// CHECK-NOT: arith.divf
// CHECK: linalg.yield
// With rational=false only the division becomes a multiplication; IREE keeps its erf.
// MULF-LABEL: func.func @gelu
// MULF: %[[HALF:.+]] = arith.constant 0.707106769 : f32
// MULF: %[[X:.+]] = arith.mulf %{{.+}}, %[[HALF]] : f32
// MULF-NEXT: math.erf %[[X]] : f32
// MULF-NOT: math.fma
// MULF-LABEL: func.func @shared_quotient
// MULF: arith.divf
// MULF: math.erf
#map = affine_map<(d0) -> (d0)>
func.func @gelu(%x: tensor<8xf32>) -> tensor<8xf32> {
  %one = arith.constant 1.000000e+00 : f32
  %half = arith.constant 5.000000e-01 : f32
  %sqrt2 = arith.constant 1.41421354 : f32
  %e = tensor.empty() : tensor<8xf32>
  %y = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]} ins(%x : tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %q = arith.divf %in, %sqrt2 : f32
    %r = math.erf %q : f32
    %a = arith.addf %r, %one : f32
    %m = arith.mulf %a, %half : f32
    %g = arith.mulf %in, %m : f32
    linalg.yield %g : f32
  } -> tensor<8xf32>
  return %y : tensor<8xf32>
}

// -----

// A quotient by sqrt 2 that something besides erf reads stays a division (the multiplication
// would round differently for that user); a division by any other constant stays too.
// CHECK-LABEL: func.func @shared_quotient
// CHECK: %[[Q:.+]] = arith.divf %{{.+}}, %{{.+}} : f32
// CHECK-NOT: math.erf
// CHECK: arith.addf %{{.+}}, %[[Q]] : f32
// CHECK-LABEL: func.func @other_divisor
// CHECK: arith.divf %{{.+}}, %{{.+}} : f32
// CHECK-NOT: math.erf
#map = affine_map<(d0) -> (d0)>
func.func @shared_quotient(%x: tensor<8xf32>) -> tensor<8xf32> {
  %sqrt2 = arith.constant 1.41421354 : f32
  %e = tensor.empty() : tensor<8xf32>
  %y = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]} ins(%x : tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %q = arith.divf %in, %sqrt2 : f32
    %r = math.erf %q : f32
    %s = arith.addf %r, %q : f32
    linalg.yield %s : f32
  } -> tensor<8xf32>
  return %y : tensor<8xf32>
}
func.func @other_divisor(%x: tensor<8xf32>) -> tensor<8xf32> {
  %three = arith.constant 3.0 : f32
  %e = tensor.empty() : tensor<8xf32>
  %y = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]} ins(%x : tensor<8xf32>) outs(%e : tensor<8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %q = arith.divf %in, %three : f32
    %r = math.erf %q : f32
    linalg.yield %r : f32
  } -> tensor<8xf32>
  return %y : tensor<8xf32>
}

// -----

// bf16 (and f16) erf is computed in f32 and rounded once, as IREE would; f64 erf and erf on
// whole tensors are left to IREE.
// CHECK-LABEL: func.func @bf16
// CHECK: %[[W:.+]] = arith.extf %{{.+}} : bf16 to f32
// CHECK: arith.cmpf olt, %[[W]]
// CHECK: arith.divf
// CHECK: arith.truncf %{{.+}} : f32 to bf16
// CHECK-NOT: math.erf
// CHECK-LABEL: func.func @f64
// CHECK: math.erf %{{.+}} : f64
// CHECK-LABEL: func.func @tensor
// CHECK: math.erf %{{.+}} : tensor<8xf32>
#map = affine_map<(d0) -> (d0)>
func.func @bf16(%x: tensor<8xbf16>) -> tensor<8xbf16> {
  %e = tensor.empty() : tensor<8xbf16>
  %y = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]} ins(%x : tensor<8xbf16>) outs(%e : tensor<8xbf16>) {
  ^bb0(%in: bf16, %out: bf16):
    %r = math.erf %in : bf16
    linalg.yield %r : bf16
  } -> tensor<8xbf16>
  return %y : tensor<8xbf16>
}
func.func @f64(%x: tensor<8xf64>) -> tensor<8xf64> {
  %e = tensor.empty() : tensor<8xf64>
  %y = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]} ins(%x : tensor<8xf64>) outs(%e : tensor<8xf64>) {
  ^bb0(%in: f64, %out: f64):
    %r = math.erf %in : f64
    linalg.yield %r : f64
  } -> tensor<8xf64>
  return %y : tensor<8xf64>
}
func.func @tensor(%x: tensor<8xf32>) -> tensor<8xf32> {
  %r = math.erf %x : tensor<8xf32>
  return %r : tensor<8xf32>
}
