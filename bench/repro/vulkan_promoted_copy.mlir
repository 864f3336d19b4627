func.func @main(%p: tensor<8x16x16xf32>, %v: tensor<8x16x64xf32>) -> tensor<16x8x64xf32> {
  %cst = arith.constant 0.000000e+00 : f32
  %5 = tensor.empty() : tensor<16x8x64xf32>
  %6 = tensor.empty() : tensor<8x16x64xf32>
  %7 = linalg.fill ins(%cst : f32) outs(%6 : tensor<8x16x64xf32>) -> tensor<8x16x64xf32>
  %8 = linalg.batch_matmul ins(%p, %v : tensor<8x16x16xf32>, tensor<8x16x64xf32>) outs(%7 : tensor<8x16x64xf32>) -> tensor<8x16x64xf32>
  %9 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d1, d0, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%8 : tensor<8x16x64xf32>) outs(%5 : tensor<16x8x64xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<16x8x64xf32>
  return %9 : tensor<16x8x64xf32>
}
