#!/bin/bash
# Second H200 run of the tenth session (issue 16): persistent GEMM kernels (ktiles: flat stream-K
# computing its addresses every step, data-parallel persistent with cp.async or TMA; ktiles2:
# stream-K carrying its pointers) against the cost model's tiles and cuBLAS (ncu kernel times),
# their numerics after 200 calls, and ncu's warp-state and instruction sections for the plain
# and the stream-K 64x64x128 kernels of 1024x768x3072.
# Artifacts (here): bash bench/experiments/persistent_tiles.sh /work/gpubuild/s10 (less its 128x256
#   stream-K, which needs 272 KiB of shared memory) and persistent_tiles2.sh /work/gpubuild/s10;
#   tar cf - -C /work/gpubuild/s10 ktiles ktiles2 | xz --lzma2=preset=1,dict=128MiB -T1 > .gpu/art.tar.xz
. bench/experiments/gpu_setup.sh
RUN_TIMEOUT=200 NCU_TIMEOUT=300 . bench/experiments/tiles_on_gpu.sh persistent-tiles
KTILES=ktiles2 . bench/experiments/tiles_on_gpu.sh persistent-tiles2
timeout 200 ncu --clock-control none --section WarpStateStats --section InstructionStats --section SpeedOfLight \
    -k "regex:braze_gemm_(07f313476f962a3e|d71f284e0bd343d1)" --launch-skip 3 --launch-count 2 \
    python3 bench/experiments/kernel_tiles.py profile /tmp/art/ktiles2 > $out/streamk-sections.txt 2>&1
grep -E "braze_gemm|Duration|Executed Ipc|Issue Slots|Executed Instructions |Warp Cycles Per Issued|Stall|Compute \(SM\)|Memory Throughput" \
    $out/streamk-sections.txt | head -60
