#!/bin/bash
# Second H200 run of the fifth session: convolutions as generated implicit GEMMs (issue 16).
# Artifacts built here:
#   python bench/kernels_check.py build $B/kcheck --only conv3x3_8x64x56_bn_relu,conv7x7s2_stem_8x3x224,\
#       conv3x3s2_8x128x28,conv1x1s2_8x64x56,conv3x3_8x64x56_bn_relu_bf16,conv3x3_8x256x14_bf16
#   braze bench build $B/bench6 --device cuda --target sm_90 --workloads conv_bn_relu,resnet18 --group-mib 60
#   (kcheck and bench6/group-1 tarred into .gpu/art.tar.xz)
# then on the GPU host: bash bench/experiments/cuda-conv-implicit-gemm.sh
start=$(date +%s)
. bench/experiments/gpu_setup.sh
timeout 60 python3 bench/kernels_check.py run /tmp/art/kcheck > $out/kernels-check.txt 2>&1
head -c 3000 $out/kernels-check.txt
left=$(( ${DEADLINE:-120} - ($(date +%s) - start) ))
[ $left -gt 30 ] && timeout $left python3 -m braze.tools.cli bench run /tmp/art/bench/group-1 --json $out/bench.json \
    --torch-compile-modes default > $out/bench.txt 2>&1
grep "^| " $out/bench.txt | head -20
