// RUN: braze-opt %s --split-input-file -p 'fusion-channels-last{min-channels=1}' | FileCheck %s
// RUN: braze-opt %s --split-input-file -p 'fusion-channels-last{types=bf16 min-channels=1}' | FileCheck %s --check-prefix=BF16
// RUN: braze-opt %s --split-input-file -p 'fusion-channels-last{min-convs=3 min-channels=1}' | FileCheck %s --check-prefix=BF16
// RUN: braze-opt %s --split-input-file -p 'fusion-channels-last' | FileCheck %s --check-prefix=BF16
// RUN: braze-opt %s --split-input-file -p 'fusion-channels-last{pools=false fold=false min-channels=1}' | FileCheck %s --check-prefix=KEEP

// A stem (padded conv, a per-channel scale, ReLU), a -inf pad and max pool, a 1x1 conv whose
// result adds the pool's output, then the average pool's reduction: every conv and the pool
// run NHWC, the elementwise generics over NHWC loops (the [C, 1, 1] scale read at (d3, 0, 0)),
// the reduction reads the NHWC sum through a permuted map, and the one layout copy left is
// the model's input (the weights' transposes are of constants).
// CHECK-DAG:   #[[ID:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
// CHECK-DAG:   #[[CH:.+]] = affine_map<(d0, d1, d2, d3) -> (d3, 0, 0)>
// CHECK-DAG:   #[[READ:.+]] = affine_map<(d0, d1, d2, d3) -> (d0, d2, d3, d1)>
// CHECK-LABEL: func.func @net
//       CHECK:   %[[X:.+]] = linalg.transpose ins(%arg0 : tensor<2x3x8x8xf32>) outs(%{{.+}} : tensor<2x8x8x3xf32>) permutation = [0, 2, 3, 1]
//       CHECK:   %[[P:.+]] = tensor.pad %[[X]] low[0, 1, 1, 0] high[0, 1, 1, 0]
//       CHECK:   %[[W:.+]] = linalg.transpose ins(%arg1 : tensor<4x3x3x3xf32>) outs(%{{.+}} : tensor<4x3x3x3xf32>) permutation = [0, 2, 3, 1]
//       CHECK:   %[[C:.+]] = linalg.conv_2d_nhwc_fhwc {{.+}} ins(%[[P]], %[[W]] : tensor<2x10x10x3xf32>, tensor<4x3x3x3xf32>) outs(%{{.+}} : tensor<2x8x8x4xf32>)
//       CHECK:   %[[S:.+]] = linalg.generic {indexing_maps = [#[[ID]], #[[CH]], #[[ID]]]{{.+}} ins(%[[C]], %arg2 : tensor<2x8x8x4xf32>, tensor<4x1x1xf32>) outs(%{{.+}} : tensor<2x8x8x4xf32>)
//       CHECK:   %[[R:.+]] = linalg.generic {{.+}} ins(%[[S]] : tensor<2x8x8x4xf32>) outs(%{{.+}} : tensor<2x8x8x4xf32>)
//       CHECK:   %[[MP:.+]] = tensor.pad %[[R]] low[0, 1, 1, 0] high[0, 1, 1, 0]
//       CHECK:   %[[POOL:.+]] = linalg.pooling_nhwc_max {{.+}} ins(%[[MP]], %{{.+}} : tensor<2x10x10x4xf32>, tensor<3x3xf32>) outs(%{{.+}} : tensor<2x4x4x4xf32>)
//       CHECK:   %[[C2:.+]] = linalg.conv_2d_nhwc_fhwc {{.+}} ins(%[[POOL]], %{{.+}} : tensor<2x4x4x4xf32>, tensor<4x1x1x4xf32>)
//       CHECK:   %[[ADD:.+]] = linalg.generic {{.+}} ins(%[[C2]], %[[POOL]] : tensor<2x4x4x4xf32>, tensor<2x4x4x4xf32>) outs(%{{.+}} : tensor<2x4x4x4xf32>)
//       CHECK:   %[[SUM:.+]] = linalg.generic {indexing_maps = [#[[READ]], {{.+}}], iterator_types = ["parallel", "parallel", "reduction", "reduction"]} ins(%[[ADD]] : tensor<2x4x4x4xf32>) outs(%{{.+}} : tensor<2x4x1x1xf32>)
//   CHECK-NOT:   linalg.transpose
//   CHECK-NOT:   nchw
//       CHECK:   return %[[SUM]]
// pools=false fold=false: the max pool stays NCHW between transposes, the reduction reads NCHW.
// KEEP-LABEL: func.func @net
//       KEEP:   linalg.conv_2d_nhwc_fhwc
//       KEEP:   linalg.transpose {{.+}} permutation = [0, 3, 1, 2]
//       KEEP:   linalg.pooling_nchw_max
//       KEEP:   linalg.transpose {{.+}} permutation = [0, 2, 3, 1]
//       KEEP:   linalg.conv_2d_nhwc_fhwc
//       KEEP:   linalg.transpose {{.+}} permutation = [0, 3, 1, 2]
//       KEEP:   iterator_types = ["parallel", "parallel", "reduction", "reduction"]} ins(%{{.+}} : tensor<2x4x4x4xf32>) outs(%{{.+}} : tensor<2x4x1x1xf32>)
// BF16 (and min-convs=3: a function of two convolutions is left as it is; and the default
// min-channels=16: convolutions of 3 and 4 input channels stay NCHW):
// BF16-LABEL: func.func @net
//   BF16-NOT:   linalg.transpose
//       BF16:   linalg.conv_2d_nchw_fchw
//       BF16:   linalg.pooling_nchw_max
//       BF16:   linalg.conv_2d_nchw_fchw
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#ch = affine_map<(d0, d1, d2, d3) -> (d1, 0, 0)>
#sum = affine_map<(d0, d1, d2, d3) -> (d0, d1, 0, 0)>
func.func @net(%x: tensor<2x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %scale: tensor<4x1x1xf32>, %w2: tensor<4x4x1x1xf32>) -> tensor<2x4x1x1xf32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %p = tensor.pad %x low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : f32
  } : tensor<2x3x8x8xf32> to tensor<2x3x10x10xf32>
  %e = tensor.empty() : tensor<2x4x8x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<2x4x8x8xf32>) -> tensor<2x4x8x8xf32>
  %c = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%p, %w : tensor<2x3x10x10xf32>, tensor<4x3x3x3xf32>) outs(%f : tensor<2x4x8x8xf32>) -> tensor<2x4x8x8xf32>
  %s = linalg.generic {indexing_maps = [#id, #ch, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%c, %scale : tensor<2x4x8x8xf32>, tensor<4x1x1xf32>) outs(%e : tensor<2x4x8x8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    linalg.yield %m : f32
  } -> tensor<2x4x8x8xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%s : tensor<2x4x8x8xf32>) outs(%e : tensor<2x4x8x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.maximumf %a, %zero : f32
    linalg.yield %m : f32
  } -> tensor<2x4x8x8xf32>
  %mp = tensor.pad %r low[0, 0, 1, 1] high[0, 0, 1, 1] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %ninf : f32
  } : tensor<2x4x8x8xf32> to tensor<2x4x10x10xf32>
  %pe = tensor.empty() : tensor<2x4x4x4xf32>
  %pf = linalg.fill ins(%ninf : f32) outs(%pe : tensor<2x4x4x4xf32>) -> tensor<2x4x4x4xf32>
  %win = tensor.empty() : tensor<3x3xf32>
  %pool = linalg.pooling_nchw_max {dilations = dense<1> : vector<2xi64>, strides = dense<2> : vector<2xi64>} ins(%mp, %win : tensor<2x4x10x10xf32>, tensor<3x3xf32>) outs(%pf : tensor<2x4x4x4xf32>) -> tensor<2x4x4x4xf32>
  %f2 = linalg.fill ins(%zero : f32) outs(%pe : tensor<2x4x4x4xf32>) -> tensor<2x4x4x4xf32>
  %c2 = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%pool, %w2 : tensor<2x4x4x4xf32>, tensor<4x4x1x1xf32>) outs(%f2 : tensor<2x4x4x4xf32>) -> tensor<2x4x4x4xf32>
  %add = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%c2, %pool : tensor<2x4x4x4xf32>, tensor<2x4x4x4xf32>) outs(%pe : tensor<2x4x4x4xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.addf %a, %b : f32
    linalg.yield %m : f32
  } -> tensor<2x4x4x4xf32>
  %se = tensor.empty() : tensor<2x4x1x1xf32>
  %sf = linalg.fill ins(%zero : f32) outs(%se : tensor<2x4x1x1xf32>) -> tensor<2x4x1x1xf32>
  %sum = linalg.generic {indexing_maps = [#id, #sum], iterator_types = ["parallel", "parallel", "reduction", "reduction"]} ins(%add : tensor<2x4x4x4xf32>) outs(%sf : tensor<2x4x1x1xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.addf %a, %o : f32
    linalg.yield %m : f32
  } -> tensor<2x4x1x1xf32>
  return %sum : tensor<2x4x1x1xf32>
}
