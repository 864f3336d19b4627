#!/bin/bash
# Split-K (and the large GEMMs' last tiles) by measurement, issue 16: the candidate tiles per case,
# built here into $1/ktiles with kernel_tiles.py (tile = BMxBNxBKxWARPSxSTAGES[xSPLIT]).
# Then on the GPU host: bash bench/experiments/cuda-splitk-tiles.sh
set -e
B=${1:?folder}
k() { python bench/experiments/kernel_tiles.py build $B/ktiles --only $1 --tiles $2; }
k ffn_down_1024x768x3072_bf16 64x64x128x4x3,64x64x128x4x3x2,64x64x64x4x4x2,128x64x64x4x4x2,128x64x64x4x4x4,64x128x64x4x4x2,64x128x64x4x4x4,128x128x64x8x3x4,128x128x64x8x3x8,128x128x64x8x4x3,128x256x64x8x3x4,128x256x64x8x3x8
k mlp_down_256x1024x4096_bf16 64x32x128x4x3,64x64x64x4x4x2,64x64x64x4x4x4,64x64x128x4x3x4,128x64x64x4x4x4,128x64x64x4x4x8,64x128x64x4x4x4,64x128x64x4x4x8,128x128x64x8x3x8,128x128x64x8x3x16,128x256x64x8x3x16,128x128x64x8x4x8
k conv3x3_8x256x14_bf16 64x64x64x4x4,64x64x64x4x4x2,64x64x64x4x4x3,64x64x64x4x4x4,128x64x64x4x4x2,128x64x64x4x4x4,64x128x64x4x4x2,64x128x64x4x4x4,128x128x64x8x4x4,128x128x64x8x4x8,128x256x64x8x3x8
k gemm_4096x4096x1024_tf32 128x256x32x8x3,128x256x32x8x4,256x128x32x8x3,256x128x32x8x4,128x128x32x8x4,128x256x64x8x2,128x128x64x8x3
k gemm_4096x4096x1024_bf16 128x256x64x8x3,128x256x64x8x4,256x128x64x8x3,256x128x64x8x4,128x256x128x8x2,128x128x128x8x3
k ragged_77x131x1000_gelu_bf16 64x64x64x4x4,64x64x64x4x4x3,32x32x64x4x3x5
k ragged_77x131x1000_gelu_f32 64x32x32x4x4,64x32x32x4x4x3,64x64x32x4x4x4
# depthwise convolutions (the direct template's tiles; kernel_tiles.DEPTHWISE), and the same cases
# against IREE's own depthwise kernels and eager (bench/kernels_check.py)
DW=dw3x3_8x144x56_bn_relu,dw3x3s2_8x96x112_bf16,dw3x3_8x576x14,dw7x7_8x384x14_bf16
python bench/experiments/kernel_tiles.py build $B/ktiles --only $DW
python bench/kernels_check.py build $B/kcheck --only $DW
