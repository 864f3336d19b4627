#!/bin/bash
# Issue 37: the production-size transformer layers (gqa_decoder at a 2k prefill, vit_layer at
# batch 64, causal_lm_block at 32x512; bf16 at 1x and 8x the batch, float32 at 1x) against
# eager and torch.compile, braze's artifacts built here and run on the GPU host.
#
#   here:   bash bench/experiments/cuda-transformers-production.sh build
#           bash bench/experiments/cuda-transformers-production.sh pack GROUP...  (-> .gpu/art.tar.xz)
#   there:  (device tool, carry .gpu, iree-base-runtime installed into /tmp/site)
#           bash bench/experiments/cuda-transformers-production.sh run [MODES]
# MODES: torch.compile modes (default: default,reduce-overhead; max-autotune tunes for
# minutes per workload there: give it a call of its own with few groups).
set -o pipefail
cd "$(dirname "$0")/../.."
case $1 in
  build)
    braze bench build --device cuda --target sm_90 --skip-iree .gpu-build/tf --workloads \
      gqa_decoder_bf16,vit_layer_bf16,causal_lm_block_bf16,gqa_decoder,vit_layer,causal_lm_block,gqa_decoder_bf16@8x,vit_layer_bf16@8x,causal_lm_block_bf16@8x
    ;;
  pack)
    shift
    mkdir -p .gpu && (cd .gpu-build && tar cf - $(printf 'tf/%s ' "$@") | xz -T2 -1 > ../.gpu/art.tar.xz) && ls -l .gpu/art.tar.xz
    ;;
  run)
    rm -rf /tmp/art && mkdir -p /tmp/art && xz -dc .gpu/art.tar.xz | tar xf - -C /tmp/art
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
    python3 -m braze bench run /tmp/art/tf --torch-compile-modes "${2:-default,reduce-overhead}" \
      --out-dir "${OUT:-/tmp}"
    ;;
  *) echo "usage: $0 build | pack GROUP... | run [MODES]" >&2; exit 2 ;;
esac
