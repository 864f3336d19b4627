#!/bin/bash
# H200 run: dynamic shapes on CUDA (issue 18). A bf16 BERT layer (768, seq 128) built once with a
# dynamic batch (1..64) and static for batch 1, 8 and 64, timed side by side with eager.
# Artifacts (here): python bench/experiments/dynamic_gpu.py build /work/gpubuild/dyn8 --dtype bfloat16 --sizes 1,8,64
#   tar cJf .gpu/art.tar.xz -C /work/gpubuild dyn8
. bench/experiments/gpu_setup.sh
timeout 400 python3 bench/experiments/dynamic_gpu.py run /tmp/art/dyn8 > $out/dynamic-gpu.txt 2>&1
echo "rc=$?" >> $out/dynamic-gpu.txt
grep -v Warn $out/dynamic-gpu.txt | tail -20
