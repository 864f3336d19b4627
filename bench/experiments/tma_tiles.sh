#!/bin/bash
# TMA loads in the GEMM template (a tile's seventh entry 1), against the same tiles without and
# cuBLAS, at the bench's bf16 Linear shapes and 4096^2 (issue 16): built here into $1/ktiles with
# kernel_tiles.py; then on the GPU host: bash bench/experiments/cuda-tma-tiles.sh
set -e
B=${1:?folder}
k() { python bench/experiments/kernel_tiles.py build $B/ktiles --only $1 --tiles $2; }
k gemm_4096x4096x1024_bf16 128x256x64x8x3,128x256x64x8x3x1x1,128x256x64x8x4x1x1,256x128x64x8x3x1x1,128x128x64x8x4x1x1
k ffn_down_1024x768x3072_bf16 64x64x128x4x3,64x64x128x4x3x1x1,64x64x64x4x5x1x1,64x64x64x4x6x1x1,128x64x64x4x4x1x1,64x128x64x4x4x1x1,128x128x64x8x4x1x1,128x64x64x8x4x1x1
k ffn_up_1024x3072x768_gelu_bf16 64x64x64x4x4,64x64x64x4x4x1x1,128x64x64x4x4x1x1,128x128x64x8x4x1x1,64x128x64x4x4x1x1,128x256x64x8x3x1x1
k proj_1024x768x768_bf16 64x64x64x4x4,64x64x64x4x4x1x1,128x64x64x4x4x1x1,64x128x64x4x4x1x1
k mlp_down_256x1024x4096_bf16 64x64x64x4x4x4,64x64x64x4x4x4x1,64x128x64x4x4x4x1
k mlp_up_256x4096x1024_gelu_bf16 64x64x64x4x4,64x64x64x4x4x1x1,64x128x64x4x4x1x1,128x64x64x4x4x1x1
