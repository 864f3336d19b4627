// RUN: braze-opt %s --split-input-file -p 'fusion-generate-kernels{target=sm_90 mode=on}' | FileCheck %s
// RUN: braze-opt %s --split-input-file -p 'fusion-generate-kernels{target=sm_90 mode=on rows=off}' | FileCheck %s --check-prefix=OFF

// Row programs (passes/gpu/match_rows.py): a reduction of the last dimension with the
// elementwise work around it becomes one call of a row kernel.

// A bf16 LayerNorm as torch-mlir writes it (a mean in f32, the variance in f64, weight and bias
// read per column): one call reading x, weight and bias; the spec keeps the f64 ops.
// CHECK-LABEL: func.func @layer_norm
//       CHECK:   %[[R:.+]] = call @braze_kernel0(%arg0, %arg1, %arg2) : (tensor<6x40xbf16>, tensor<40xbf16>, tensor<40xbf16>) -> tensor<6x40xbf16>
//   CHECK-NOT:   linalg.generic
//       CHECK:   return %[[R]]
//       CHECK: func.func private @braze_kernel0({{.+}}attributes {braze.kernel = "{\22cols\22:40,\22inputs\22:[{\22access\22:\22full\22,\22dtype\22:\22bf16\22},{\22access\22:\22row\22,\22dtype\22:\22bf16\22},{\22access\22:\22row\22,\22dtype\22:\22bf16\22}],\22kind\22:\22rows\22{{.+}}[\22%2\22,\22sum\22,[\22%1\22],\22f64\22,0.0]{{.+}}\22out\22:\22bf16\22,\22result\22:\22%20\22,\22rows\22:6
// OFF-LABEL: func.func @layer_norm
//   OFF-NOT:   call
#map = affine_map<(d0, d1) -> (d0, d1)>
#map1 = affine_map<(d0, d1) -> (d0, 0)>
#map2 = affine_map<(d0, d1) -> (d1)>
func.func @layer_norm(%arg0: tensor<6x40xbf16>, %arg1: tensor<40xbf16>, %arg2: tensor<40xbf16>) -> tensor<6x40xbf16> {
  %cst = arith.constant 0.000000e+00 : f64
  %cst_0 = arith.constant 0.000000e+00 : f32
  %cst_1 = arith.constant 1.000000e-05 : f64
  %cst_2 = arith.constant 4.000000e+01 : f64
  %cst_3 = arith.constant 4.000000e+01 : f32
  %0 = tensor.empty() : tensor<6x40xf32>
  %1 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%arg0 : tensor<6x40xbf16>) outs(%0 : tensor<6x40xf32>) {
  ^bb0(%in: bf16, %out: f32):
    %25 = arith.extf %in : bf16 to f32
    linalg.yield %25 : f32
  } -> tensor<6x40xf32>
  %2 = tensor.empty() : tensor<6x40xf64>
  %3 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%1 : tensor<6x40xf32>) outs(%2 : tensor<6x40xf64>) {
  ^bb0(%in: f32, %out: f64):
    %25 = arith.extf %in : f32 to f64
    linalg.yield %25 : f64
  } -> tensor<6x40xf64>
  %4 = tensor.empty() : tensor<6x1xf64>
  %5 = linalg.fill ins(%cst : f64) outs(%4 : tensor<6x1xf64>) -> tensor<6x1xf64>
  %6 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "reduction"]} ins(%3 : tensor<6x40xf64>) outs(%5 : tensor<6x1xf64>) {
  ^bb0(%in: f64, %out: f64):
    %25 = arith.addf %in, %out : f64
    linalg.yield %25 : f64
  } -> tensor<6x1xf64>
  %7 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%6 : tensor<6x1xf64>) outs(%4 : tensor<6x1xf64>) {
  ^bb0(%in: f64, %out: f64):
    %25 = arith.divf %in, %cst_2 : f64
    linalg.yield %25 : f64
  } -> tensor<6x1xf64>
  %8 = linalg.generic {indexing_maps = [#map, #map1, #map], iterator_types = ["parallel", "parallel"]} ins(%3, %7 : tensor<6x40xf64>, tensor<6x1xf64>) outs(%2 : tensor<6x40xf64>) {
  ^bb0(%in: f64, %in_4: f64, %out: f64):
    %25 = arith.subf %in, %in_4 : f64
    linalg.yield %25 : f64
  } -> tensor<6x40xf64>
  %9 = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel"]} ins(%8, %8 : tensor<6x40xf64>, tensor<6x40xf64>) outs(%2 : tensor<6x40xf64>) {
  ^bb0(%in: f64, %in_4: f64, %out: f64):
    %25 = arith.mulf %in, %in_4 : f64
    linalg.yield %25 : f64
  } -> tensor<6x40xf64>
  %10 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "reduction"]} ins(%9 : tensor<6x40xf64>) outs(%5 : tensor<6x1xf64>) {
  ^bb0(%in: f64, %out: f64):
    %25 = arith.addf %in, %out : f64
    linalg.yield %25 : f64
  } -> tensor<6x1xf64>
  %11 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%10 : tensor<6x1xf64>) outs(%4 : tensor<6x1xf64>) {
  ^bb0(%in: f64, %out: f64):
    %25 = arith.divf %in, %cst_2 : f64
    linalg.yield %25 : f64
  } -> tensor<6x1xf64>
  %12 = tensor.empty() : tensor<6x1xf32>
  %13 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%11 : tensor<6x1xf64>) outs(%12 : tensor<6x1xf32>) {
  ^bb0(%in: f64, %out: f32):
    %25 = arith.truncf %in : f64 to f32
    linalg.yield %25 : f32
  } -> tensor<6x1xf32>
  %14 = linalg.fill ins(%cst_0 : f32) outs(%12 : tensor<6x1xf32>) -> tensor<6x1xf32>
  %15 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "reduction"]} ins(%1 : tensor<6x40xf32>) outs(%14 : tensor<6x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %25 = arith.addf %in, %out : f32
    linalg.yield %25 : f32
  } -> tensor<6x1xf32>
  %16 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%15 : tensor<6x1xf32>) outs(%12 : tensor<6x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %25 = arith.divf %in, %cst_3 : f32
    linalg.yield %25 : f32
  } -> tensor<6x1xf32>
  %17 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%13 : tensor<6x1xf32>) outs(%12 : tensor<6x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %25 = arith.truncf %cst_1 : f64 to f32
    %26 = arith.addf %in, %25 : f32
    linalg.yield %26 : f32
  } -> tensor<6x1xf32>
  %18 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%17 : tensor<6x1xf32>) outs(%12 : tensor<6x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %25 = math.rsqrt %in : f32
    linalg.yield %25 : f32
  } -> tensor<6x1xf32>
  %19 = linalg.generic {indexing_maps = [#map, #map1, #map], iterator_types = ["parallel", "parallel"]} ins(%1, %16 : tensor<6x40xf32>, tensor<6x1xf32>) outs(%0 : tensor<6x40xf32>) {
  ^bb0(%in: f32, %in_4: f32, %out: f32):
    %25 = arith.subf %in, %in_4 : f32
    linalg.yield %25 : f32
  } -> tensor<6x40xf32>
  %20 = linalg.generic {indexing_maps = [#map, #map1, #map], iterator_types = ["parallel", "parallel"]} ins(%19, %18 : tensor<6x40xf32>, tensor<6x1xf32>) outs(%0 : tensor<6x40xf32>) {
  ^bb0(%in: f32, %in_4: f32, %out: f32):
    %25 = arith.mulf %in, %in_4 : f32
    linalg.yield %25 : f32
  } -> tensor<6x40xf32>
  %21 = linalg.generic {indexing_maps = [#map, #map2, #map], iterator_types = ["parallel", "parallel"]} ins(%20, %arg1 : tensor<6x40xf32>, tensor<40xbf16>) outs(%0 : tensor<6x40xf32>) {
  ^bb0(%in: f32, %in_4: bf16, %out: f32):
    %25 = arith.extf %in_4 : bf16 to f32
    %26 = arith.mulf %in, %25 : f32
    linalg.yield %26 : f32
  } -> tensor<6x40xf32>
  %22 = linalg.generic {indexing_maps = [#map, #map2, #map], iterator_types = ["parallel", "parallel"]} ins(%21, %arg2 : tensor<6x40xf32>, tensor<40xbf16>) outs(%0 : tensor<6x40xf32>) {
  ^bb0(%in: f32, %in_4: bf16, %out: f32):
    %25 = arith.extf %in_4 : bf16 to f32
    %26 = arith.addf %in, %25 : f32
    linalg.yield %26 : f32
  } -> tensor<6x40xf32>
  %23 = tensor.empty() : tensor<6x40xbf16>
  %24 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%22 : tensor<6x40xf32>) outs(%23 : tensor<6x40xbf16>) {
  ^bb0(%in: f32, %out: bf16):
    %25 = arith.truncf %in : f32 to bf16
    linalg.yield %25 : bf16
  } -> tensor<6x40xbf16>
  return %24 : tensor<6x40xbf16>
}

// -----

// Softmax: torch-mlir's max also yields the argmax (nothing reads it) and reaches the
// subtraction through an expand_shape of the per-row maximum; one kernel, max then sum.
// CHECK-LABEL: func.func @softmax
//       CHECK:   %[[R:.+]] = call @braze_kernel0(%arg0) : (tensor<4x10xf32>) -> tensor<4x10xf32>
//   CHECK-NOT:   linalg.generic
//       CHECK:   return %[[R]]
//       CHECK: func.func private @braze_kernel0({{.+}}[\22%1\22,\22max\22,[\22%0\22],\22f32\22,-Infinity]{{.+}}[\22%4\22,\22sum\22,[\22%3\22],\22f32\22,0.0]
#map = affine_map<(d0, d1) -> (d0, d1)>
#map1 = affine_map<(d0, d1) -> (d0)>
#map2 = affine_map<(d0, d1) -> (d0, 0)>
func.func @softmax(%arg0: tensor<4x10xf32>) -> tensor<4x10xf32> {
  %c0_i64 = arith.constant 0 : i64
  %cst = arith.constant 0xFF800000 : f32
  %cst_0 = arith.constant 0.000000e+00 : f32
  %cst_1 = arith.constant 5.000000e-01 : f32
  %0 = tensor.empty() : tensor<4x10xf32>
  %1 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%arg0 : tensor<4x10xf32>) outs(%0 : tensor<4x10xf32>) {
  ^bb0(%in: f32, %out: f32):
    %13 = arith.mulf %in, %cst_1 : f32
    linalg.yield %13 : f32
  } -> tensor<4x10xf32>
  %2 = tensor.empty() : tensor<4xi64>
  %3 = linalg.fill ins(%c0_i64 : i64) outs(%2 : tensor<4xi64>) -> tensor<4xi64>
  %4 = tensor.empty() : tensor<4xf32>
  %5 = linalg.fill ins(%cst : f32) outs(%4 : tensor<4xf32>) -> tensor<4xf32>
  %6:2 = linalg.generic {indexing_maps = [#map, #map1, #map1], iterator_types = ["parallel", "reduction"]} ins(%1 : tensor<4x10xf32>) outs(%5, %3 : tensor<4xf32>, tensor<4xi64>) {
  ^bb0(%in: f32, %out: f32, %out_2: i64):
    %13 = linalg.index 1 : index
    %14 = arith.index_cast %13 : index to i64
    %15 = arith.maximumf %in, %out : f32
    %16 = arith.cmpf ogt, %in, %out : f32
    %17 = arith.select %16, %14, %out_2 : i64
    linalg.yield %15, %17 : f32, i64
  } -> (tensor<4xf32>, tensor<4xi64>)
  %expanded = tensor.expand_shape %6#0 [[0, 1]] output_shape [4, 1] : tensor<4xf32> into tensor<4x1xf32>
  %7 = linalg.generic {indexing_maps = [#map, #map2, #map], iterator_types = ["parallel", "parallel"]} ins(%1, %expanded : tensor<4x10xf32>, tensor<4x1xf32>) outs(%0 : tensor<4x10xf32>) {
  ^bb0(%in: f32, %in_2: f32, %out: f32):
    %13 = arith.subf %in, %in_2 : f32
    linalg.yield %13 : f32
  } -> tensor<4x10xf32>
  %8 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%7 : tensor<4x10xf32>) outs(%0 : tensor<4x10xf32>) {
  ^bb0(%in: f32, %out: f32):
    %13 = math.exp %in : f32
    linalg.yield %13 : f32
  } -> tensor<4x10xf32>
  %9 = tensor.empty() : tensor<4x1xf32>
  %10 = linalg.fill ins(%cst_0 : f32) outs(%9 : tensor<4x1xf32>) -> tensor<4x1xf32>
  %11 = linalg.generic {indexing_maps = [#map, #map2], iterator_types = ["parallel", "reduction"]} ins(%8 : tensor<4x10xf32>) outs(%10 : tensor<4x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %13 = arith.addf %in, %out : f32
    linalg.yield %13 : f32
  } -> tensor<4x1xf32>
  %12 = linalg.generic {indexing_maps = [#map, #map2, #map], iterator_types = ["parallel", "parallel"]} ins(%8, %11 : tensor<4x10xf32>, tensor<4x1xf32>) outs(%0 : tensor<4x10xf32>) {
  ^bb0(%in: f32, %in_2: f32, %out: f32):
    %13 = arith.divf %in, %in_2 : f32
    linalg.yield %13 : f32
  } -> tensor<4x10xf32>
  return %12 : tensor<4x10xf32>
}

// -----

// The mean the function also returns stays IREE's reduction, with the reason; the variance and
// the normalisation after it become a kernel that reads the mean as one value a row ('col').
// CHECK-LABEL: func.func @mean_read_twice
//       CHECK:   linalg.generic {{.+}}braze.kernel_skipped = "the row program leaves 2 values for other ops to read (a row kernel writes one)"
//       CHECK:   call @braze_kernel0(%arg0, %{{.+}}) : (tensor<4x10xf32>, tensor<4x1xf32>) -> tensor<4x10xf32>
//       CHECK: func.func private @braze_kernel0({{.+}}{\22access\22:\22col\22,\22dtype\22:\22f32\22}{{.+}}\22fpowi\22,[\22%0\22],\22f32\22,2]
#map = affine_map<(d0, d1) -> (d0, d1)>
#map1 = affine_map<(d0, d1) -> (d0, 0)>
func.func @mean_read_twice(%arg0: tensor<4x10xf32>) -> (tensor<4x10xf32>, tensor<4x1xf32>) {
  %c2_i64 = arith.constant 2 : i64
  %cst = arith.constant 0.000000e+00 : f32
  %cst_0 = arith.constant 1.000000e-05 : f64
  %cst_1 = arith.constant 1.000000e+01 : f32
  %0 = tensor.empty() : tensor<4x1xf32>
  %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<4x1xf32>) -> tensor<4x1xf32>
  %2 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "reduction"]} ins(%arg0 : tensor<4x10xf32>) outs(%1 : tensor<4x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %12 = arith.addf %in, %out : f32
    linalg.yield %12 : f32
  } -> tensor<4x1xf32>
  %3 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%2 : tensor<4x1xf32>) outs(%0 : tensor<4x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %12 = arith.divf %in, %cst_1 : f32
    linalg.yield %12 : f32
  } -> tensor<4x1xf32>
  %4 = tensor.empty() : tensor<4x10xf32>
  %5 = linalg.generic {indexing_maps = [#map, #map1, #map], iterator_types = ["parallel", "parallel"]} ins(%arg0, %3 : tensor<4x10xf32>, tensor<4x1xf32>) outs(%4 : tensor<4x10xf32>) {
  ^bb0(%in: f32, %in_2: f32, %out: f32):
    %12 = arith.subf %in, %in_2 : f32
    linalg.yield %12 : f32
  } -> tensor<4x10xf32>
  %6 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%5 : tensor<4x10xf32>) outs(%4 : tensor<4x10xf32>) {
  ^bb0(%in: f32, %out: f32):
    %12 = math.fpowi %in, %c2_i64 : f32, i64
    linalg.yield %12 : f32
  } -> tensor<4x10xf32>
  %7 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "reduction"]} ins(%6 : tensor<4x10xf32>) outs(%1 : tensor<4x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %12 = arith.addf %in, %out : f32
    linalg.yield %12 : f32
  } -> tensor<4x1xf32>
  %8 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%7 : tensor<4x1xf32>) outs(%0 : tensor<4x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %12 = arith.divf %in, %cst_1 : f32
    linalg.yield %12 : f32
  } -> tensor<4x1xf32>
  %9 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%8 : tensor<4x1xf32>) outs(%0 : tensor<4x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %12 = arith.truncf %cst_0 : f64 to f32
    %13 = arith.addf %in, %12 : f32
    linalg.yield %13 : f32
  } -> tensor<4x1xf32>
  %10 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%9 : tensor<4x1xf32>) outs(%0 : tensor<4x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %12 = math.rsqrt %in : f32
    linalg.yield %12 : f32
  } -> tensor<4x1xf32>
  %11 = linalg.generic {indexing_maps = [#map, #map1, #map], iterator_types = ["parallel", "parallel"]} ins(%5, %10 : tensor<4x10xf32>, tensor<4x1xf32>) outs(%4 : tensor<4x10xf32>) {
  ^bb0(%in: f32, %in_2: f32, %out: f32):
    %12 = arith.mulf %in, %in_2 : f32
    linalg.yield %12 : f32
  } -> tensor<4x10xf32>
  return %11, %3 : tensor<4x10xf32>, tensor<4x1xf32>
}
