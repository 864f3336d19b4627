#!/bin/bash
# Fourth H200 run of the tenth session (issue 16): split K for the tail tiles only, against the
# cost model's 64x64x128 and cuBLAS at bf16 1024x768x3072 (ncu kernel times), and its numerics
# after 200 calls on ragged shapes.
# Artifacts (here): bash bench/experiments/splitk_tail_tiles.sh /work/gpubuild/s10;
#   tar cf - -C /work/gpubuild/s10 ktiles4 | xz --lzma2=preset=1,dict=128MiB -T1 > .gpu/art.tar.xz
. bench/experiments/gpu_setup.sh
KTILES=ktiles4 . bench/experiments/tiles_on_gpu.sh splitk-tail-tiles
