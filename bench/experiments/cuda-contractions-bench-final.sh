#!/bin/bash
# Last H200 run of the sixth session: the contraction workloads in one run with everything of
# issues 16 and 17 (generated kernels at the measured tiles, the launcher's graph replay).
# Artifacts built here (tarred as bench/ into .gpu/art.tar.xz, IREE artifacts dropped):
#   braze bench build $B/bench10 --device cuda --target sm_90 --group-mib 400 --workloads \
#       gelu_mlp,gelu_mlp_bf16,transformer_encoder,transformer_encoder_bf16,bert_layer,bert_layer_bf16,attention,conv_bn_relu,resnet18
# then on the GPU host: DEADLINE=480 bash bench/experiments/cuda-contractions-bench-final.sh
start=$(date +%s)
. bench/experiments/gpu_setup.sh
timeout $(( ${DEADLINE:-480} - 30 )) python3 -m braze.tools.cli bench run /tmp/art/bench/group-1 --json $out/bench.json \
    --torch-compile-modes default > $out/bench.txt 2>&1
grep "^| " $out/bench.txt | grep -v "p10" | cut -d'|' -f2,4,5,8,10,13
left=$(( ${DEADLINE:-480} - ($(date +%s) - start) ))
[ $left -gt 150 ] && timeout $left python3 -m braze.tools.cli bench run /tmp/art/bench/group-1 --json $out/bench-modes.json \
    --workloads transformer_encoder_bf16,bert_layer_bf16 --torch-compile-modes reduce-overhead,max-autotune \
    > $out/bench-modes.txt 2>&1
grep "^| " $out/bench-modes.txt | grep -v "p10" | cut -d'|' -f2,4,5,8,10,13
