#!/bin/bash
# Stream-K with its cp.async pointers carried from step to step (computed afresh only at a new
# tile), against persistent_tiles.sh's stream-K that computes them every step; built here into
# $1/ktiles2, run by cuda-persistent-tiles-sections.sh.
set -e
B=${1:?folder}
k() { python bench/experiments/kernel_tiles.py build $B/ktiles2 --only $1 --tiles $2; }
k ffn_down_1024x768x3072_bf16 64x64x128x4x3,64x64x128x4x3x1x0x132,128x64x64x4x4x1x0x132,64x64x64x4x4x1x0x132
k mlp_down_256x1024x4096_bf16 64x64x64x4x4x4,64x64x128x4x3x1x0x132,64x128x64x4x4x1x0x132
k ragged_77x131x1000_gelu_bf16 64x64x64x4x4,32x32x64x4x3x1x0x7
k ragged_77x131x1000_gelu_f32 64x32x32x4x4,64x32x32x4x4x1x0x9
