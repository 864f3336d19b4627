#!/bin/bash
# H200 run of the sixth session: braze's flash-attention kernels (issue 16).
# Artifacts built here:
#   python bench/kernels_check.py build $B/kattn --only attn_8x12x512x64_f32,attn_8x12x512x64_bf16,\
#       attn_8x12x128x64_f32_mask,attn_8x12x128x64_bf16,attn_4x16x1024x64_bf16_causal,attn_4x8x256x128_f16
#   braze bench build $B/bench7 --device cuda --target sm_90 --group-mib 60 \
#       --workloads attention,bert_layer,bert_layer_bf16,transformer_encoder,transformer_encoder_bf16
#   (kattn and bench7 tarred as kattn/ and bench/ into .gpu/art.tar.xz)
# then on the GPU host: bash bench/experiments/cuda-attention-kernels.sh
start=$(date +%s)
. bench/experiments/gpu_setup.sh
timeout 90 python3 bench/kernels_check.py run /tmp/art/kattn > $out/kernels-check.txt 2>&1
head -c 2500 $out/kernels-check.txt
timeout 90 ncu --clock-control none --csv --metrics gpu__time_duration.sum \
    python3 bench/kernels_check.py profile /tmp/art/kattn > /tmp/ncu.csv 2>&1
python3 bench/experiments/ncu_table.py /tmp/ncu.csv > $out/ncu.txt 2>&1; cat $out/ncu.txt | head -40
for g in 1 2 3; do
  left=$(( ${DEADLINE:-500} - ($(date +%s) - start) ))
  [ $left -gt 40 ] && timeout $left python3 -m braze.tools.cli bench run /tmp/art/bench/group-$g --json $out/bench-$g.json \
      --torch-compile-modes default > $out/bench-$g.txt 2>&1
  grep "^| " $out/bench-$g.txt | grep -v geomean | head -12
done
