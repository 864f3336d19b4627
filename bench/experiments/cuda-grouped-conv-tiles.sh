#!/bin/bash
# Fifth H200 run of the ninth session (issue 16): grouped convolutions (ResNeXt-50 32x4d's 3x3,
# 32 groups) as generated implicit GEMMs, against torch (cuDNN) and IREE's own.
# Artifacts (here): G=gconv3x3_8x128x56_g32,gconv3x3_8x512x14_g32_bf16
#   python bench/experiments/kernel_tiles.py build $B/s9e/ktiles --only $G
#   python bench/kernels_check.py build $B/s9e/kcheck --only $G
#   tar cf - -C $B/s9e ktiles kcheck | xz --lzma2=preset=1,dict=128MiB -T1 > .gpu/art.tar.xz
. bench/experiments/gpu_setup.sh
timeout 60 python3 bench/experiments/kernel_tiles.py run /tmp/art/ktiles > $out/gconv-tiles.txt 2>&1
grep -v Warn $out/gconv-tiles.txt | cut -c1-400
timeout 100 ncu --clock-control none --csv --metrics gpu__time_duration.sum \
    python3 bench/experiments/kernel_tiles.py profile /tmp/art/ktiles > /tmp/ncu.csv 2>&1
python3 bench/experiments/kernel_tiles.py table /tmp/art/ktiles /tmp/ncu.csv > $out/gconv-tiles-ncu.txt 2>&1
cat $out/gconv-tiles-ncu.txt
timeout 60 python3 bench/kernels_check.py run /tmp/art/kcheck > $out/gconv-check.txt 2>&1
grep -v Warn $out/gconv-check.txt | head -4
