#!/bin/bash
# Fourth H200 run of the ninth session (issue 16): TMA loads in the GEMM template against cp.async
# loads and cuBLAS (ncu kernel times), and their numerics after 200 calls.
# Artifacts (here): bash bench/experiments/tma_tiles.sh /work/gpubuild/s9d
#   tar cf - -C /work/gpubuild/s9d ktiles | xz --lzma2=preset=1,dict=128MiB -T1 > .gpu/art.tar.xz
. bench/experiments/gpu_setup.sh
. bench/experiments/tiles_on_gpu.sh tma-tiles
