#!/bin/bash
# H200 run of the fifth session: braze's generated GEMM kernels (issue 16).
# Artifacts built here (CPU-only machine, Triton 3.6.0):
#   python bench/kernels_check.py build $B/kcheck
#   braze bench build $B/bench5 --device cuda --target sm_90 \
#       --workloads gelu_mlp_bf16,transformer_encoder_bf16,bert_layer_bf16,gelu_mlp,transformer_encoder,bert_layer
#   (the groups holding braze's artifacts, with kcheck, tarred into .gpu/art.tar.xz)
# then on the GPU host: bash bench/experiments/cuda-gemm-kernels.sh   (DEADLINE: seconds for the whole run)
start=$(date +%s)
. bench/experiments/gpu_setup.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $out/gpu.txt
timeout 100 python3 bench/kernels_check.py run /tmp/art/kcheck 2>&1 | tee $out/kernels-check.txt
for g in ${BENCH_GROUPS:-group-5 group-4 group-6 group-7 group-1 group-2}; do
  left=$(( ${DEADLINE:-290} - ($(date +%s) - start) ))
  [ $left -lt 40 ] && { echo "skipped $g: ${left}s left" | tee -a $out/skipped.txt; continue; }
  timeout $left python3 -m braze.tools.cli bench run /tmp/art/bench/$g --json $out/bench-$g.json \
    --torch-compile-modes ${MODES:-default} 2>&1 | tee $out/bench-$g.txt
done
