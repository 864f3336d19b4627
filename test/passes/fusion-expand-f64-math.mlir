// RUN: braze-opt %s -p fusion-expand-f64-math | FileCheck %s
// RUN: braze-opt %s -p 'fusion-baseline-pipeline{f64-math=expand}' | FileCheck %s --check-prefix=BASE
// RUN: braze-opt %s -p fusion-baseline-pipeline | FileCheck %s --check-prefix=KEEP

// float64 sin and atan2 in a linalg body become float64 arithmetic: no math.sin or math.atan2 is
// left for IREE's CPU runtime (which has no `sin`), the reduction by pi/2 (a floor of x * 2/pi
// + 0.5, three products with the parts of pi/2) and the quadrant's selects are there. The f32
// sin keeps its math op (IREE approximates f32 itself).
// CHECK-LABEL: func.func @trig
// CHECK-NOT: math.sin %{{.+}} : f64
// CHECK-NOT: math.atan2
// CHECK: ^bb0(%[[X:.+]]: f64, %[[Y:.+]]: f64, %[[F:.+]]: f32, %{{.+}}: f64, %{{.+}}: f32):
// CHECK: %[[TWO_OVER_PI:.+]] = arith.constant 0.63661977236758138 : f64
// CHECK: %[[SCALED:.+]] = arith.mulf %[[X]], %[[TWO_OVER_PI]] : f64
// CHECK: %[[K:.+]] = math.floor %{{.+}} : f64
// CHECK: arith.constant 1.5707963{{[0-9]+}} : f64
// CHECK: arith.mulf %[[K]], %{{.+}} : f64
// CHECK: arith.cmpf oge, %{{.+}} : f64
// CHECK: arith.select
// atan2: NaN in either operand gives NaN (cmpf uno)
// CHECK: arith.cmpf uno, %[[Y]], %[[Y]] : f64
// CHECK: math.sin %[[F]] : f32
// CHECK: linalg.yield
// BASE-LABEL: func.func @trig
// BASE-NOT: math.sin %{{.+}} : f64
// BASE: math.sin %{{.+}} : f32
// KEEP-LABEL: func.func @trig
// KEEP: math.sin %{{.+}} : f64
// KEEP: math.atan2 %{{.+}} : f64
#map = affine_map<(d0) -> (d0)>
func.func @trig(%x: tensor<8xf64>, %y: tensor<8xf64>, %f: tensor<8xf32>) -> (tensor<8xf64>, tensor<8xf32>) {
  %e = tensor.empty() : tensor<8xf64>
  %ef = tensor.empty() : tensor<8xf32>
  %r:2 = linalg.generic {indexing_maps = [#map, #map, #map, #map, #map], iterator_types = ["parallel"]}
      ins(%x, %y, %f : tensor<8xf64>, tensor<8xf64>, tensor<8xf32>) outs(%e, %ef : tensor<8xf64>, tensor<8xf32>) {
  ^bb0(%a: f64, %b: f64, %c: f32, %o: f64, %of: f32):
    %s = math.sin %a : f64
    %t = math.atan2 %s, %b : f64
    %g = math.sin %c : f32
    linalg.yield %t, %g : f64, f32
  } -> (tensor<8xf64>, tensor<8xf32>)
  return %r#0, %r#1 : tensor<8xf64>, tensor<8xf32>
}
