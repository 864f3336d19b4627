#!/usr/bin/env bash
# Reproduce the second round of H200 figures (bench/NOTES.md §4, §8-§11), in two halves, like gpu-zoo-bench-tune-round1.sh
# (a separate archive: both rounds together do not fit one 64 MiB transfer).
#   bench/experiments/cuda-matmul-tune-call-costs-round2.sh build OUT   here (compiler installed; iree-compile on PATH)
#   bench/experiments/cuda-matmul-tune-call-costs-round2.sh run OUT     on the GPU host (iree-base-runtime, numpy, torch, braze, ncu)
# The bench table itself: `braze bench build --device cuda --target sm_90 DIR` / `braze bench run DIR/group-N`.
set -euo pipefail
mode=$1; out=$2
here=$(cd "$(dirname "$0")/../.." && pwd)
if [ "$mode" = build ]; then
  work=$(mktemp -d)
  python -m braze.tools.tune build "$work/tune-mm" --target sm_90 --workloads "" \
    --matmuls bert_layer,bert_layer_bf16,transformer_encoder,transformer_encoder_bf16,gelu_mlp,gelu_mlp_bf16,attention
  python "$here/bench/experiments/transient_storage.py" build "$work/transients"
  python "$here/bench/experiments/layer_kernels.py" build "$work/layers"
  PATH="$(dirname "$(command -v python)"):$PATH" python "$here/bench/experiments/command_buffers.py" build "$work/cmdbuf"
  python "$here/bench/experiments/call_overhead.py" build "$work/chain1k.braze"
  python "$here/bench/experiments/runtime_flags.py" build "$work/flags"
  mkdir -p "$out"
  tar cf - -C "$work" . | xz -T2 --lzma2=preset=6,dict=192MiB > "$out/h200-round2.tar.xz"
  rm -rf "$work"
  ls -la "$out/h200-round2.tar.xz"
elif [ "$mode" = run ]; then
  work=$(mktemp -d)
  tar xJf "$out/h200-round2.tar.xz" -C "$work"
  ncu --clock-control none --metrics gpu__time_duration.sum --csv \
    python -m braze.tools.tune run "$work/tune-mm" --reps 5 --markers > "$out/tune-mm.csv"
  python -m braze.tools.tune kernels "$work/tune-mm" "$out/tune-mm.csv" | tee "$out/tune-matmul.txt"
  cp "$work/tune-mm/winners.json" "$out/tune-matmul-winners.json"
  python "$here/bench/experiments/transient_storage.py" run "$work/transients" | tee "$out/transient-storage.txt"
  for n in transformer_encoder bert_layer transformer_encoder_bf16 bert_layer_bf16; do
    ncu --clock-control none --metrics gpu__time_duration.sum --csv \
      python "$here/bench/experiments/layer_kernels.py" run "$work/layers/$n.braze" "$n" > "$out/k-$n.csv"
    python "$here/bench/experiments/layer_kernels.py" table "$out/k-$n.csv" | tee "$out/kernels-$n.txt"
  done
  python "$here/bench/experiments/command_buffers.py" run "$work/cmdbuf" | tee "$out/command-buffers.txt"
  BRAZE_IREE_RUNTIME_FLAGS=--cuda_use_streams=true \
    python "$here/bench/experiments/command_buffers.py" run "$work/cmdbuf" | tee "$out/command-buffers-streams.txt"
  python "$here/bench/experiments/call_overhead.py" run "$work/chain1k.braze" | tee "$out/call-overhead.txt"
  python "$here/bench/experiments/runtime_flags.py" run "$work/flags" | tee "$out/runtime-flags.txt"
else
  echo "usage: $0 build|run OUT" >&2; exit 2
fi
