#!/bin/bash
# Third H200 run of the sixth session: GEMM tiles for the bench's Linear shapes, bf16, float32
# (3xTF32) and TF32 against cuBLAS (issue 16, deliverable 4).
# Artifacts built here: python bench/experiments/kernel_tiles.py build $B/ktiles --only <LINEAR_CASES>
#   (tarred as ktiles/ into .gpu/art.tar.xz); then on the GPU host: bash bench/experiments/cuda-gemm-tiles.sh
. bench/experiments/gpu_setup.sh
timeout 200 python3 bench/experiments/kernel_tiles.py run /tmp/art/ktiles > $out/gemm-tiles.txt 2>&1
grep -v Warn $out/gemm-tiles.txt | cut -c1-400 | head -30
timeout 200 ncu --clock-control none --csv --metrics gpu__time_duration.sum \
    python3 bench/experiments/kernel_tiles.py profile /tmp/art/ktiles > /tmp/ncu.csv 2>&1
python3 bench/experiments/kernel_tiles.py table /tmp/art/ktiles /tmp/ncu.csv > $out/gemm-tiles-ncu.txt 2>&1
xz -c /tmp/ncu.csv > $out/ncu.csv.xz
cat $out/gemm-tiles-ncu.txt
