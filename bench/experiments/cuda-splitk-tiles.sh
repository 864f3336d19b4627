#!/bin/bash
# H200 run of the ninth session: split-K tiles for the long-K GEMMs and the 256-channel bf16
# convolution, and the last tiles of the 4096^2 bf16/TF32 GEMMs, against cuBLAS/cuDNN (issue 16).
# Artifacts (here): bash bench/experiments/splitk_tiles.sh /work/gpubuild/s9
#   tar cJf .gpu/art.tar.xz -C /work/gpubuild/s9 ktiles
. bench/experiments/gpu_setup.sh
timeout 240 python3 bench/experiments/kernel_tiles.py run /tmp/art/ktiles > $out/splitk-tiles.txt 2>&1
echo "rc=$?" >> $out/splitk-tiles.txt
grep -v Warn $out/splitk-tiles.txt | cut -c1-600 | head -30
timeout 300 ncu --clock-control none --csv --metrics gpu__time_duration.sum \
    python3 bench/experiments/kernel_tiles.py profile /tmp/art/ktiles > /tmp/ncu.csv 2>&1
python3 bench/experiments/kernel_tiles.py table /tmp/art/ktiles /tmp/ncu.csv > $out/splitk-tiles-ncu.txt 2>&1
xz -c /tmp/ncu.csv > $out/ncu.csv.xz
cat $out/splitk-tiles-ncu.txt
