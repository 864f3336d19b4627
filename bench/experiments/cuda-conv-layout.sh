#!/bin/bash
# Issue 38: convolutions in NHWC (fusion-channels-last) against braze's NCHW kernels, eager
# (cuDNN) beside them, per call and per kernel (ncu), on ResNet-18 and the ResNet-50-class network.
#
#   here:   bash bench/experiments/cuda-conv-layout.sh build        (all variants in .gpu-build/lay)
#           bash bench/experiments/cuda-conv-layout.sh pack NAME...  (-> .gpu/lay.tar.xz; 64 MiB a call:
#                   resnet50_bf16 takes 16.5 MB compressed a variant, resnet18_bf16 7.5)
#   there:  (device tool, carry .gpu, iree-base-runtime and braze installed into /tmp/site)
#           bash bench/experiments/cuda-conv-layout.sh run          (per call, then ncu per kernel)
set -o pipefail
cd "$(dirname "$0")/../.."
case $1 in
  build)
    rm -rf .gpu-build/lay && python bench/experiments/variants.py build .gpu-build/lay layout
    ;;
  pack)
    shift
    rm -rf .gpu-build/pack && mkdir -p .gpu-build/pack .gpu
    for name in "$@"; do
      grep "^$name " .gpu-build/lay/manifest.txt >> .gpu-build/pack/manifest.txt
      cp -rl .gpu-build/lay/"$name".* .gpu-build/pack/  # NAME.VARIANT/ folders (variants.py build)
    done
    (cd .gpu-build && tar chf - pack | xz -T2 -6 > ../.gpu/lay.tar.xz) && ls -l .gpu/lay.tar.xz
    ;;
  run)
    rm -rf /tmp/lay && mkdir -p /tmp/lay && xz -dc .gpu/lay.tar.xz | tar xf - -C /tmp/lay --strip-components=1
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
    python3 bench/experiments/variants.py run /tmp/lay
    mkdir -p /tmp/lay50 && grep "^resnet50_bf16 \|^resnet50 " /tmp/lay/manifest.txt > /tmp/lay50/manifest.txt
    for f in $(awk '{print $1"."$2}' /tmp/lay50/manifest.txt); do ln -sf /tmp/lay/$f /tmp/lay50/$f; done
    EAGER_KERNELS=1 ncu --clock-control none --metrics gpu__time_duration.sum --csv \
      python3 bench/experiments/variants.py kernels /tmp/lay50 > /tmp/lay50/k.csv 2>/tmp/lay50/ncu.err
    python3 bench/experiments/variants.py table /tmp/lay50/k.csv /tmp/lay50/kernels-order.txt | tee "${OUT:-/tmp}/layout-kernels.txt" | grep -E "^--|us of kernels"
    ;;
  *) echo "usage: $0 build | pack NAME... | run" >&2; exit 2 ;;
esac
