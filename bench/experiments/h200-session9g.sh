#!/bin/bash
# Seventh H200 run of the ninth session (issue 16): stream-K in the GEMM template against the cost
# model's tiles and cuBLAS (ncu kernel times), and their numerics after 200 calls.
# Artifacts (here): bash bench/experiments/streamk_tiles.sh /work/gpubuild/s9g
#   tar cf - -C /work/gpubuild/s9g ktiles | xz --lzma2=preset=1,dict=128MiB -T1 > .gpu/art.tar.xz
. bench/experiments/gpu_setup.sh
timeout 150 python3 bench/experiments/kernel_tiles.py run /tmp/art/ktiles > $out/streamk-tiles.txt 2>&1
echo "rc=$?" >> $out/streamk-tiles.txt
grep -v Warn $out/streamk-tiles.txt | cut -c1-500
timeout 200 ncu --clock-control none --csv --metrics gpu__time_duration.sum \
    python3 bench/experiments/kernel_tiles.py profile /tmp/art/ktiles > /tmp/ncu.csv 2>&1
python3 bench/experiments/kernel_tiles.py table /tmp/art/ktiles /tmp/ncu.csv > $out/streamk-tiles-ncu.txt 2>&1
cat $out/streamk-tiles-ncu.txt
