#!/bin/bash
# Third H200 run of the tenth session (issue 16): data-parallel persistent kernels with TMA
# loads at bf16 and TF32 4096², the BERT shapes, and ragged shapes (numerics after 200 calls).
# Artifacts (here): bash bench/experiments/persistent_tiles3.sh /work/gpubuild/s10;
#   tar cf - -C /work/gpubuild/s10 ktiles3 | xz --lzma2=preset=1,dict=128MiB -T1 > .gpu/art.tar.xz
. bench/experiments/gpu_setup.sh
KTILES=ktiles3 RUN_TIMEOUT=200 NCU_TIMEOUT=300 . bench/experiments/tiles_on_gpu.sh persistent-tiles3
