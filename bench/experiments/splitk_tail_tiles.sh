#!/bin/bash
# Split K for the tail only (issue 16, session 10): the first W tiles whole, one program each,
# the others split S ways, so 1024x768x3072's 192 tiles of 64x64 run as 132 whole + 60 in
# halves (252 programs, 2 a SM) instead of 2 tiles on 60 SMs and 1 on 72. Built here into
# $1/ktiles4; run by cuda-splitk-tail-tiles.sh.
set -e
B=${1:?folder}
k() { python bench/experiments/kernel_tiles.py build $B/ktiles4 --only $1 --tiles $2; }
k ffn_down_1024x768x3072_bf16 64x64x128x4x3,64x64x128x4x3x2x0x132,64x64x128x4x3x2x1x132,64x64x64x4x4x2x0x132,64x64x128x4x3x3x0x132,64x64x128x4x3x2x0x72,64x64x128x4x3x4x0x132,64x64x128x4x3x2x0x144
k ragged_77x131x1000_gelu_bf16 64x64x64x4x4,32x32x64x4x3x2x0x10,32x32x64x4x3x3x1x10
k ragged_77x131x1000_gelu_f32 64x32x32x4x4,64x32x32x4x4x2x0x5
