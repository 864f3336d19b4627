#!/bin/bash
# Fourth H200 run of the ninth session (issue 16): TMA loads in the GEMM template against cp.async
# loads and cuBLAS (ncu kernel times), and their numerics after 200 calls.
# Artifacts (here): bash bench/experiments/tma_tiles.sh /work/gpubuild/s9d
#   tar cf - -C /work/gpubuild/s9d ktiles | xz --lzma2=preset=1,dict=128MiB -T1 > .gpu/art.tar.xz
. bench/experiments/gpu_setup.sh
timeout 150 python3 bench/experiments/kernel_tiles.py run /tmp/art/ktiles > $out/tma-tiles.txt 2>&1
echo "rc=$?" >> $out/tma-tiles.txt
grep -v Warn $out/tma-tiles.txt | cut -c1-500
timeout 200 ncu --clock-control none --csv --metrics gpu__time_duration.sum \
    python3 bench/experiments/kernel_tiles.py profile /tmp/art/ktiles > /tmp/ncu.csv 2>&1
python3 bench/experiments/kernel_tiles.py table /tmp/art/ktiles /tmp/ncu.csv > $out/tma-tiles-ncu.txt 2>&1
cat $out/tma-tiles-ncu.txt
