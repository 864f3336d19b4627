#!/bin/bash
# Sixth H200 run of the ninth session (issue 16): the grouped convolutions again, at the cost
# model's tiles after the float32 narrow-tile fix, the bf16 one with its BatchNorm/ReLU in the
# kernel (the integer-spelled bf16 rounding taken as one truncf): per call and ncu kernel times.
# Artifacts (here): python bench/kernels_check.py build $B/s9f/kcheck --only gconv3x3_8x128x56_g32,gconv3x3_8x512x14_g32_bf16
#   tar cf - -C $B/s9f kcheck | xz --lzma2=preset=1,dict=128MiB -T1 > .gpu/art.tar.xz
. bench/experiments/gpu_setup.sh
timeout 60 python3 bench/kernels_check.py run /tmp/art/kcheck > $out/gconv-check.txt 2>&1
grep -v Warn $out/gconv-check.txt | head -4
timeout 120 ncu --clock-control none --csv --metrics gpu__time_duration.sum \
    python3 bench/kernels_check.py profile /tmp/art/kcheck > /tmp/ncu.csv 2>&1
python3 bench/experiments/ncu_table.py /tmp/ncu.csv > $out/gconv-ncu.txt 2>&1 || cp /tmp/ncu.csv $out/
head -40 $out/gconv-ncu.txt
