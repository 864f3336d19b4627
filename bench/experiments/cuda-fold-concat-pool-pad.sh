#!/bin/bash
# §54 (issues 37, 38): fusion-fold-concat (rotate_half as one generic) and the NCHW max pool's pad
# fused into its dispatch, each against braze without it, side by side with eager, on the
# production-size GQA decoder layer (bf16, 2k prefill), ResNet-18 and ResNet-50 bf16 at batch 8;
# then one call of each GQA variant under ncu (kernel by kernel).
#
#   here:   bash bench/experiments/cuda-fold-concat-pool-pad.sh build   (.gpu-build/var, weights zeroed)
#           bash bench/experiments/cuda-fold-concat-pool-pad.sh pack    (-> .gpu/var.tar.xz)
#   there:  (device tool, carry .gpu, iree-base-runtime and braze installed into /tmp/site)
#           bash bench/experiments/cuda-fold-concat-pool-pad.sh run
set -o pipefail
cd "$(dirname "$0")/../.."
case $1 in
  build)
    rm -rf .gpu-build/var && python bench/experiments/variants.py build .gpu-build/var fold-concat pool-pad
    ;;
  pack)
    mkdir -p .gpu && (cd .gpu-build && tar cf - var | xz -T2 -6 > ../.gpu/var.tar.xz) && ls -l .gpu/var.tar.xz
    ;;
  run)
    rm -rf /tmp/var && xz -dc .gpu/var.tar.xz | tar xf - -C /tmp || exit 1
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
    python3 bench/experiments/variants.py run /tmp/var | tee "${OUT:-/tmp}/fold-concat-pool-pad.txt"
    mkdir -p /tmp/gqa && grep "^gqa_decoder" /tmp/var/manifest.txt > /tmp/gqa/manifest.txt
    for f in $(awk '{print $1"."$2}' /tmp/gqa/manifest.txt); do ln -sf /tmp/var/$f /tmp/gqa/$f; done
    ncu --clock-control none --metrics gpu__time_duration.sum --csv \
      python3 bench/experiments/variants.py kernels /tmp/gqa > /tmp/gqa/k.csv 2>/tmp/gqa/ncu.err
    python3 bench/experiments/variants.py table /tmp/gqa/k.csv /tmp/gqa/kernels-order.txt \
      | tee "${OUT:-/tmp}/fold-concat-kernels.txt" | grep -E "^--|us of kernels"
    ;;
  *) echo "usage: $0 build | pack | run" >&2; exit 2 ;;
esac
