#!/bin/bash
# Fourth H200 run of the seventh session: the whole bench suite with IREE's aggressive dispatch
# fusion on CUDA (the new default), torch.compile's CUDA-graph modes on the bf16 layers, and the
# launcher's per-call time against its kernel sum for the layers with braze alone in the timing
# rounds, with eager, and with eager and iree.runtime (what bench/launch_check.py's rounds hold).
# Artifacts built here:
#   braze bench build $B/bench12 --device cuda --target sm_90 --group-mib 400 --workloads \
#       elementwise_chain,elementwise_chain_bf16,tiny_chain,layernorm_gelu,layernorm_gelu_bf16,gelu_mlp,\
#       gelu_mlp_bf16,transformer_encoder,transformer_encoder_bf16,bert_layer,bert_layer_bf16,attention,conv_bn_relu,resnet18
#   (the nine contraction workloads' "iree" artifacts dropped from the manifest to fit a transfer),
#   tarred as bench/ into .gpu/art.tar.xz; then on the GPU host: DEADLINE=560 bash bench/experiments/cuda-bench-suite-aggressive-fusion.sh
start=$(date +%s)
. bench/experiments/gpu_setup.sh
timeout 330 python3 -m braze.tools.cli bench run /tmp/art/bench/group-1 --json $out/bench.json \
    --torch-compile-modes default > $out/bench.txt 2>&1
grep "^| " $out/bench.txt | grep -v "p10" | cut -d'|' -f2,4,5,8,10,13
grep -i "geomean" -A3 $out/bench.txt | tail -4
# the layers' braze artifacts as a variants.py folder (name.braze.braze + manifest.txt)
mkdir -p /tmp/calls && : > /tmp/calls/manifest.txt
for w in transformer_encoder_bf16 bert_layer_bf16 transformer_encoder bert_layer resnet18; do
  ln -sf /tmp/art/bench/group-1/$w-braze.braze /tmp/calls/$w.braze.braze; echo "$w braze" >> /tmp/calls/manifest.txt
done
for company in "" eager eager,iree; do
  timeout 60 python3 bench/experiments/variants.py calls /tmp/calls $company 2>&1 | grep -v Warn | tee -a $out/calls.txt
done
left=$(( ${DEADLINE:-560} - ($(date +%s) - start) ))
[ $left -gt 80 ] && timeout $(( left - 10 )) python3 -m braze.tools.cli bench run /tmp/art/bench/group-1 --json $out/bench-modes.json \
    --workloads transformer_encoder_bf16,bert_layer_bf16 --torch-compile-modes reduce-overhead,max-autotune \
    > $out/bench-modes.txt 2>&1
grep "^| " $out/bench-modes.txt | grep -v "p10" | cut -d'|' -f2,4,5,8,10,13
