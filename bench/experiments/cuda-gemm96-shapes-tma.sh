#!/bin/bash
# Fourth H200 run of session 14 (issue 16): the 96-wide tile and split-K tiles with A and B read
# through TMA descriptors made on the device, beside the cp.async 64x96 and cuBLAS (prototype
# kernels, bench/experiments/gemm_shapes.py; its VARIANTS as of this run).
# Artifacts (here): python bench/experiments/gemm_shapes.py build /work/gpubuild/shapes;
#   tar cf - -C /work/gpubuild shapes | xz -T1 > .gpu/art.tar.xz
. bench/experiments/gpu_setup.sh
python3 bench/experiments/gemm_shapes.py run /tmp/art/shapes 2>&1 | tee $out/gemm-shapes-run.txt
timeout 200 ncu --clock-control none --csv --metrics gpu__time_duration.sum \
    python3 bench/experiments/gemm_shapes.py profile /tmp/art/shapes > /tmp/ncu.csv 2>&1
python3 bench/experiments/gemm_shapes.py table /tmp/art/shapes /tmp/ncu.csv 2>&1 | tee $out/gemm-shapes-ncu.txt
