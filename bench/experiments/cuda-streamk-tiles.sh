#!/bin/bash
# Seventh H200 run of the ninth session (issue 16): stream-K in the GEMM template against the cost
# model's tiles and cuBLAS (ncu kernel times), and their numerics after 200 calls.
# Artifacts (here): bash bench/experiments/streamk_tiles.sh /work/gpubuild/s9g
#   tar cf - -C /work/gpubuild/s9g ktiles | xz --lzma2=preset=1,dict=128MiB -T1 > .gpu/art.tar.xz
. bench/experiments/gpu_setup.sh
. bench/experiments/tiles_on_gpu.sh streamk-tiles
