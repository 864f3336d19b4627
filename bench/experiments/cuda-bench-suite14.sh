#!/bin/bash
# Second H200 run of the seventh session: the whole bench suite (14 workloads) in one run with
# the launcher's CUDA graph (issue 17's geomean goal), then torch.compile's reduce-overhead and
# max-autotune on the bf16 layers (its third goal).
# Artifacts built here (braze artifacts only for the nine contraction workloads, to fit a transfer):
#   braze bench build $B/bench10 --device cuda --target sm_90 --group-mib 400 --workloads \
#       gelu_mlp,gelu_mlp_bf16,transformer_encoder,transformer_encoder_bf16,bert_layer,bert_layer_bf16,attention,conv_bn_relu,resnet18
#   braze bench build $B/bench11 --device cuda --target sm_90 --group-mib 400 --workloads \
#       elementwise_chain,elementwise_chain_bf16,tiny_chain,layernorm_gelu,layernorm_gelu_bf16
#   one group of both (manifests' workload lists joined; bench10's "iree" artifacts dropped),
#   tarred as bench/ into .gpu/art.tar.xz; then on the GPU host: DEADLINE=560 bash bench/experiments/cuda-bench-suite14.sh
start=$(date +%s)
. bench/experiments/gpu_setup.sh
timeout $(( ${DEADLINE:-560} - 170 )) python3 -m braze.tools.cli bench run /tmp/art/bench/group-1 --json $out/bench.json \
    --torch-compile-modes default > $out/bench.txt 2>&1
grep "^| " $out/bench.txt | grep -v "p10" | cut -d'|' -f2,4,5,8,10,13
grep -i "geomean" -A12 $out/bench.txt | head -30
left=$(( ${DEADLINE:-560} - ($(date +%s) - start) ))
[ $left -gt 100 ] && timeout $(( left - 10 )) python3 -m braze.tools.cli bench run /tmp/art/bench/group-1 --json $out/bench-modes.json \
    --workloads transformer_encoder_bf16,bert_layer_bf16 --torch-compile-modes reduce-overhead,max-autotune \
    > $out/bench-modes.txt 2>&1
grep "^| " $out/bench-modes.txt | grep -v "p10" | cut -d'|' -f2,4,5,8,10,13
