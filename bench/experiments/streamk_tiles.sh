#!/bin/bash
# Stream-K (a tile's eighth entry: P persistent programs share the tiles' K steps), against the
# cost model's tiles and cuBLAS at the bf16 shapes below 90% of cuBLAS (issue 16): built here into
# $1/ktiles with kernel_tiles.py; then on the GPU host: bash bench/experiments/cuda-streamk-tiles.sh
set -e
B=${1:?folder}
k() { python bench/experiments/kernel_tiles.py build $B/ktiles --only $1 --tiles $2; }
k ffn_down_1024x768x3072_bf16 64x64x128x4x3,64x64x128x4x3x1x0x132,64x64x128x4x3x1x0x264,128x64x64x4x4x1x0x132,128x128x64x8x3x1x0x132,128x64x64x8x4x1x0x132,64x128x64x4x4x1x0x132,128x128x64x8x4x1x0x132
k gemm_4096x4096x1024_bf16 128x256x64x8x3,128x256x64x8x3x1x0x132,128x128x64x8x4x1x0x264
k mlp_down_256x1024x4096_bf16 64x64x64x4x4x4,64x64x64x4x4x1x0x132,64x128x64x4x4x1x0x132,128x128x64x8x3x1x0x132
k ragged_77x131x1000_gelu_bf16 64x64x64x4x4,32x32x64x4x3x1x0x7
k ragged_77x131x1000_gelu_f32 64x32x32x4x4,64x32x32x4x4x1x0x9
