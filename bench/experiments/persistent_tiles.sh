#!/bin/bash
# Persistent GEMM kernels (issue 16, session 10): stream-K as one flat, pipelined loop over the
# tiles x K steps (the fixup after the loop), and data-parallel persistent kernels (whole tiles,
# tile and K loops flattened by Triton) with cp.async or TMA loads (descriptors made once a
# program), against the cost model's tiles and cuBLAS, at the bf16 shapes below or near 90% of
# cuBLAS and TF32 4096². Built here into $1/ktiles with kernel_tiles.py; then on the GPU host:
# bash bench/experiments/cuda-persistent-tiles.sh
set -e
B=${1:?folder}
k() { python bench/experiments/kernel_tiles.py build $B/ktiles --only $1 --tiles $2; }
k ffn_down_1024x768x3072_bf16 64x64x128x4x3,64x64x128x4x3x1x0x132,64x64x64x4x4x1x0x132,64x64x128x4x3x1x0x264,128x64x64x4x4x1x0x132,128x128x64x8x3x1x0x132,64x64x128x4x3x1x1x132,128x128x64x8x3x1x1x132,128x64x64x4x4x1x1x132
k gemm_4096x4096x1024_bf16 128x256x64x8x3,128x256x64x8x3x1x0x132x1,128x256x64x8x3x1x1x132x1,128x256x64x8x4x1x1x132x1,128x128x64x8x4x1x1x132x1,128x128x64x8x4x1x0x132x1,128x256x64x8x3x1x0x132
k mlp_down_256x1024x4096_bf16 64x64x64x4x4x4,64x64x128x4x3x1x0x132,64x128x64x4x4x1x0x132,128x128x64x8x3x1x0x132,64x128x64x4x4x1x1x132
k ffn_up_1024x3072x768_gelu_bf16 64x64x64x4x4,128x128x64x8x4x1x1x132x1,128x256x64x8x3x1x1x132x1,128x128x64x8x3x1x0x132,128x128x64x8x3x1x1x132
k gemm_4096x4096x1024_tf32 128x256x32x8x4,128x256x32x8x4x1x0x132x1,128x128x32x8x3x1x0x132x1
k ragged_77x131x1000_gelu_bf16 64x64x64x4x4,32x32x64x4x3x1x0x7,32x32x64x4x3x1x1x7,32x32x64x4x3x1x0x5x1,32x32x64x4x3x1x1x5x1
k ragged_77x131x1000_gelu_f32 64x32x32x4x4,64x32x32x4x4x1x0x9,64x32x32x4x4x1x0x5x1
