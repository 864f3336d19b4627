#!/bin/bash
# Second H200 run of the sixth session: flash-attention tiles (issue 16).
# Artifacts built here: python bench/experiments/kernel_tiles.py build $B/atiles
#   (tarred as atiles/ into .gpu/art.tar.xz); then on the GPU host: bash bench/experiments/cuda-attention-tiles.sh
. bench/experiments/gpu_setup.sh
timeout 150 python3 bench/experiments/kernel_tiles.py run /tmp/art/atiles > $out/attention-tiles.txt 2>&1
cat $out/attention-tiles.txt | grep -v Warn | head -30
timeout 150 ncu --clock-control none --csv --metrics gpu__time_duration.sum \
    python3 bench/experiments/kernel_tiles.py profile /tmp/art/atiles > /tmp/ncu.csv 2>&1
python3 bench/experiments/kernel_tiles.py table /tmp/art/atiles /tmp/ncu.csv > $out/attention-tiles-ncu.txt 2>&1
xz -c /tmp/ncu.csv > $out/ncu.csv.xz
cat $out/attention-tiles-ncu.txt
