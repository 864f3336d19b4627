#!/bin/bash
# H200 run: dynamic shapes on CUDA after the launcher learned symbolic plans and the generated GEMM
# kernels learned M per call (issue 18, bench/NOTES.md §29). A BERT layer (768, seq 128) built once
# with a dynamic batch (1..64) and static per measured size, bf16 and float32, timed side by side
# with eager; then each build's kernels at batch 1 and 64 (torch.profiler).
# Artifacts (here):
#   python bench/experiments/dynamic_gpu.py build /tmp/art/dynbf16 --dtype bfloat16 --sizes 1,2,3,5,8,13,24,32,48,64
#   python bench/experiments/dynamic_gpu.py build /tmp/art/dynf32 --dtype float32 --sizes 1,2,3,5,8,13,24,32,48,64
#   tar cf - -C /tmp/art dynbf16 dynf32 | xz --lzma2=preset=1,dict=128MiB -T1 > .gpu/art.tar.xz
. bench/experiments/gpu_setup.sh
for d in dynbf16 dynf32; do
  timeout ${RUN_TIMEOUT:-200} python3 bench/experiments/dynamic_gpu.py run /tmp/art/$d > $out/$d-run.txt 2>&1
  echo "rc=$?" >> $out/$d-run.txt
  grep -v Warn $out/$d-run.txt | tail -14
done
for n in 1 64; do
  timeout 120 python3 bench/experiments/dynamic_gpu.py profile /tmp/art/dynbf16 $n > $out/dynbf16-profile-$n.txt 2>&1
  grep -v Warn $out/dynbf16-profile-$n.txt | tail -24
done
