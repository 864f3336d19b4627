#!/bin/bash
# Sixth H200 run of session 14 (issue 16): 96-wide tiles for float32 (3xTF32) at the BERT layer's
# 1024x768 Linears, against the cost model's 64x32 and cuBLAS's float32, as braze artifacts.
# Artifacts (here): B=/work/gpubuild/s14f
#   python bench/experiments/kernel_tiles.py build $B/ktiles --only ffn_down_1024x768x3072_f32 \
#     --tiles 64x32x32x4x4,64x96x32x4x4,64x96x32x4x3,64x96x32x4x5,64x64x32x4x4,128x96x32x8x3
#   python bench/experiments/kernel_tiles.py build $B/ktiles --only proj_1024x768x768_f32 --tiles 64x32x32x4x4,64x96x32x4x4,64x96x32x4x3
#   python bench/experiments/kernel_tiles.py build $B/ktiles --only ragged_77x131x1000_gelu_f32 --tiles 64x32x32x4x4,64x96x32x4x4
#   tar cf - -C $B ktiles | xz -T1 > .gpu/art.tar.xz
. bench/experiments/gpu_setup.sh
RUN_TIMEOUT=120 NCU_TIMEOUT=150 . bench/experiments/tiles_on_gpu.sh gemm96-f32-tiles
