#!/bin/bash
# First H200 run of the tenth session (issue 16): persistent GEMM kernels (flat stream-K,
# data-parallel persistent with cp.async or TMA) against the cost model's tiles and cuBLAS (ncu
# kernel times), and their numerics after 200 calls.
# Artifacts (here): bash bench/experiments/persistent_tiles.sh /work/gpubuild/s10
#   tar cf - -C /work/gpubuild/s10 ktiles | xz --lzma2=preset=1,dict=128MiB -T1 > .gpu/art.tar.xz
. bench/experiments/gpu_setup.sh
RUN_TIMEOUT=200 NCU_TIMEOUT=300 . bench/experiments/tiles_on_gpu.sh persistent-tiles
