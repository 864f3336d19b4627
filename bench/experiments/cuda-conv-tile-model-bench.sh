#!/bin/bash
# Fifth H200 run of the sixth session: convolutions back on their own tile model, 16-bit GEMMs
# with 64x32 / 128-deep K tiles where measured faster (issue 16).
# Artifacts built here (tarred as bench/, kconv/ into .gpu/art.tar.xz, IREE artifacts dropped):
#   braze bench build $B/bench9 --device cuda --target sm_90 --group-mib 300 \
#       --workloads resnet18,conv_bn_relu,gelu_mlp,gelu_mlp_bf16,bert_layer_bf16
#   python bench/kernels_check.py build $B/kconv --only <the six conv cases of cuda-contractions-conv-tiles.sh>
# then on the GPU host: DEADLINE=420 bash bench/experiments/cuda-conv-tile-model-bench.sh
start=$(date +%s)
. bench/experiments/gpu_setup.sh
convs=conv3x3_8x64x56_bn_relu,conv7x7s2_stem_8x3x224,conv3x3s2_8x128x28,conv1x1s2_8x64x56,conv3x3_8x64x56_bn_relu_bf16,conv3x3_8x256x14_bf16
timeout 100 ncu --clock-control none --csv --metrics gpu__time_duration.sum \
    python3 bench/kernels_check.py profile /tmp/art/kconv > /tmp/ncu-conv.csv 2>&1
python3 bench/experiments/ncu_table.py /tmp/ncu-conv.csv $convs > $out/conv-ncu.txt 2>&1; cat $out/conv-ncu.txt | cut -c1-110
left=$(( ${DEADLINE:-420} - ($(date +%s) - start) ))
timeout $left python3 -m braze.tools.cli bench run /tmp/art/bench/group-1 --json $out/bench.json \
    --torch-compile-modes default > $out/bench.txt 2>&1
grep "^| " $out/bench.txt | grep -v "p10" | cut -d'|' -f2,4,5,8,10,13
left=$(( ${DEADLINE:-420} - ($(date +%s) - start) ))
[ $left -gt 120 ] && timeout $left python3 -m braze.tools.cli bench run /tmp/art/bench/group-1 --json $out/bench-max.json \
    --workloads conv_bn_relu,bert_layer_bf16,gelu_mlp_bf16 --torch-compile-modes max-autotune,reduce-overhead > $out/bench-max.txt 2>&1
grep "^| " $out/bench-max.txt | grep -v "p10" | cut -d'|' -f2,4,5,8,10,13
