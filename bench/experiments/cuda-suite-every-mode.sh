#!/bin/bash
# The README's CUDA table: braze's bench suite (14 workloads at the bench's sizes) against eager
# and every torch.compile mode (default, reduce-overhead, max-autotune), each group of workloads
# in one process, so every row's ratios come from one run. max-autotune tunes for about a minute
# per workload there: a call of at most 600 s takes a few groups.
#
#   here:   bash bench/experiments/cuda-suite-every-mode.sh build
#           bash bench/experiments/cuda-suite-every-mode.sh pack GROUP...      (-> .gpu/art.tar.xz)
#   there:  (device tool, carry .gpu, iree-base-runtime installed into /tmp/site)
#           bash bench/experiments/cuda-suite-every-mode.sh run GROUP...       (results in $OUT)
# GROUP: group-N as built (group-1 ResNet-18; group-2 the seven small workloads; group-3 BERT;
# group-4 TransformerEncoderLayer; group-5 GELU MLP and BERT in bf16; group-6 the TE layer in bf16).
set -o pipefail
cd "$(dirname "$0")/../.."
case $1 in
  build)
    braze bench build --device cuda --target sm_90 --skip-iree .gpu-build/suite
    ;;
  pack)
    shift
    mkdir -p .gpu && (cd .gpu-build && tar cf - $(printf 'suite/%s ' "$@") | xz -T2 -6 > ../.gpu/art.tar.xz) && ls -l .gpu/art.tar.xz
    ;;
  run)
    shift
    mkdir -p /tmp/art && xz -dc .gpu/art.tar.xz | tar xf - -C /tmp/art
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
    for g in "$@"; do
      timeout ${GROUP_TIMEOUT:-400} python3 -m braze bench run /tmp/art/suite/$g \
        --torch-compile-modes default,reduce-overhead,max-autotune --json "${OUT:-/tmp}/suite-$g.json" 2>&1 \
        | tee "${OUT:-/tmp}/suite-$g.txt" | grep -v "^Kernels\|^Memory"
    done
    ;;
  *) echo "usage: $0 build | pack GROUP... | run GROUP..." >&2; exit 2 ;;
esac
