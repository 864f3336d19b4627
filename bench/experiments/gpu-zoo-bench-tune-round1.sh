#!/usr/bin/env bash
# Reproduce every H200 figure braze reports, in two halves.
#   bench/experiments/gpu-zoo-bench-tune-round1.sh build OUT   here (compiler installed): artifacts + experiments, packed into OUT/h200.tar.xz
#   bench/experiments/gpu-zoo-bench-tune-round1.sh run OUT     on the GPU host (iree-base-runtime, numpy, torch, braze; Vulkan loader for vulkan)
# The archive stays under 64 MiB: bench weights are quantized to 16 values per tensor (see bench/NOTES.md).
set -euo pipefail
mode=$1; out=$2
here=$(cd "$(dirname "$0")/../.." && pwd)
if [ "$mode" = build ]; then
  work=$(mktemp -d)
  python bench/gpu_check.py build "$work/zoo"
  braze bench build --device cuda --target sm_90 "$work/bench"
  python -m braze.tools.tune build "$work/tune" --target sm_90
  PATH="$(dirname "$(command -v python)"):$PATH" python "$here/bench/repro/vulkan_mha.py" build "$work/mha"
  python "$here/bench/experiments/gemm_configs.py" build "$work/gemm"
  python "$here/bench/experiments/call_overhead.py" build "$work/chain1k.braze"
  python "$here/bench/experiments/kernel_times.py" build "$work/kernels"
  python "$here/bench/experiments/runtime_flags.py" build "$work/flags"
  mkdir -p "$out"
  tar cf - -C "$work" . | xz -T2 --lzma2=preset=6,dict=192MiB > "$out/h200.tar.xz"
  rm -rf "$work"
  ls -la "$out/h200.tar.xz"
elif [ "$mode" = run ]; then
  work=$(mktemp -d)
  tar xJf "$out/h200.tar.xz" -C "$work"
  python bench/gpu_check.py run "$work/zoo" | tee "$out/gpu-check.txt" || true
  for g in "$work"/bench/group-*; do python -m braze.tools.bench run "$g" --json "$out/$(basename "$g").json"; done
  python -m braze.tools.tune run "$work/tune" | tee "$out/tune.txt"; cp "$work/tune/winners.json" "$out/"
  python "$here/bench/repro/vulkan_mha.py" run "$work/mha" | tee "$out/vulkan-mha.txt" || true
  python "$here/bench/experiments/gemm_configs.py" run "$work/gemm" | tee "$out/gemm.txt"
  python "$here/bench/experiments/call_overhead.py" run "$work/chain1k.braze" | tee "$out/call-overhead.txt"
  ncu --clock-control none --metrics gpu__time_duration.sum --csv \
    python "$here/bench/experiments/kernel_times.py" run "$work/kernels" > "$out/kernels.csv"
  python "$here/bench/experiments/kernel_times.py" table "$out/kernels.csv" | tee "$out/kernels.txt"
  python "$here/bench/experiments/runtime_flags.py" run "$work/flags" | tee "$out/runtime-flags.txt"
  echo "merge here: braze bench merge $out/group-*.json -o bench/results/cuda-DATE.json"
else
  echo "usage: $0 build|run OUT" >&2; exit 2
fi
