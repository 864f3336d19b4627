#!/bin/bash
# Issue 40: braze bench's text-generation rows on the GPU host (Qwen2-class models, random
# weights, bf16, 128 new tokens): braze's decoder beside transformers' eager and static-cache
# torch.compile generate(), the decode step against the bandwidth roofline, the prefill beside
# the forward under torch.compile.
#
#   here:   bash bench/experiments/cuda-generate-bench.sh build [WORKLOADS]   (one build a workload: the
#           1.5B class peaks at ~17 GB here) then pack  (-> .gpu/gen.tar.xz: the weights travel as zeros)
#   there:  (device tool, carry .gpu, iree-base-runtime and braze installed into /tmp/site)
#           bash bench/experiments/cuda-generate-bench.sh run [MODES] [WORKLOADS]
# MODES: torch.compile modes for the prefill (default: default,reduce-overhead; max-autotune
# tunes for minutes per workload there: give it a call of its own).
set -o pipefail
cd "$(dirname "$0")/../.."
ALL=generate_qwen2-0.5b_p128_b1,generate_qwen2-0.5b_p512_b1,generate_qwen2-0.5b_p128_b8,generate_qwen2-1.5b_p128_b1
case $1 in
  build)
    for w in $(echo "${2:-$ALL}" | tr , ' '); do  # a process each: the compile's memory goes back between them
      braze bench build --device cuda --target sm_90 .gpu-build/gen --workloads "$w" || exit 1
    done
    ;;
  pack)
    mkdir -p .gpu && (cd .gpu-build && tar cf - gen | xz -T2 -1 > ../.gpu/gen.tar.xz) && ls -l .gpu/gen.tar.xz
    ;;
  run)
    # only the named workloads' folders are written out (the zeroed weights are GBs on disk)
    members=gen/generate/manifest.json
    for w in $(echo "${3:-$ALL}" | tr , ' '); do members="$members gen/generate/$w.decoder"; done
    rm -rf /tmp/gen && xz -dc .gpu/gen.tar.xz | tar xf - -C /tmp $members || exit 1
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
    python3 -m braze bench run /tmp/gen --torch-compile-modes "${2:-default,reduce-overhead}" \
      ${3:+--workloads $3} --json "${OUT:-/tmp}/generate-cuda${3:+-$3}.json"  # a file per call: several calls keep theirs
    ;;
  *) echo "usage: $0 build [WORKLOADS] | pack | run [MODES] [WORKLOADS]" >&2; exit 2 ;;
esac
