#!/bin/bash
# Data-parallel persistent kernels with TMA loads (issue 16, session 10, third run): the 4096²
# bf16 winner again beside its cp.async tile, TF32 4096² as persistent (TMA now takes float32
# rows of 16-byte multiples), the GELU and long-K BERT shapes, and ragged shapes for the numerics
# of every persistent form on the GPU. Built here into $1/ktiles3; run by cuda-persistent-tma-tiles.sh.
set -e
B=${1:?folder}
k() { python bench/experiments/kernel_tiles.py build $B/ktiles3 --only $1 --tiles $2; }
k gemm_4096x4096x1024_bf16 128x256x64x8x3,128x256x64x8x3x1x1x132x1,128x256x64x8x4x1x1x132x1,128x128x64x8x3x1x1x132x1,128x256x64x8x3x1x1x264x1
k gemm_4096x4096x1024_tf32 128x256x32x8x4,128x128x32x8x4x1x1x132x1,128x256x32x8x2x1x1x132x1,128x128x32x8x3x1x0x132x1,128x128x32x8x4x1x0x132x1
k ffn_up_1024x3072x768_gelu_bf16 64x64x64x4x4,128x128x64x8x3x1x1x132x1,128x64x64x4x4x1x1x132x1,64x64x64x4x4x1x1x132x1
k ffn_down_1024x768x3072_bf16 64x64x128x4x3,64x64x128x4x3x1x1x132x1,128x64x64x4x4x1x1x132x1
k ragged_77x131x1000_gelu_bf16 64x64x64x4x4,32x32x64x4x3x1x0x5x1,32x32x64x4x3x1x1x5x1,32x32x64x4x3x1x1x7
k ragged_77x131x1000_gelu_f32 64x32x32x4x4,64x32x32x4x4x1x0x5x1,64x32x32x4x4x1x1x5x1,64x32x32x4x4x1x1x9
