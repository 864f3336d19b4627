#!/bin/bash
# First H200 run of session 14 (issue 16): tiles the GEMM template cannot make yet (96 = 64 + 32
# columns as two dots; split K in two with a one-partial fixup), at bf16 1024x768x3072 and two
# other bench shapes, beside cuBLAS: errors, CUDA-graph times per launch, ncu kernel times.
# Artifacts (here): python bench/experiments/gemm_shapes.py build /work/gpubuild/shapes;
#   tar cf - -C /work/gpubuild shapes | xz -T1 > .gpu/art.tar.xz
. bench/experiments/gpu_setup.sh
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv
python3 bench/experiments/gemm_shapes.py run /tmp/art/shapes 2>&1 | tee $out/gemm-shapes-run.txt
timeout 300 ncu --clock-control none --csv --metrics gpu__time_duration.sum \
    python3 bench/experiments/gemm_shapes.py profile /tmp/art/shapes > /tmp/ncu.csv 2>&1
python3 bench/experiments/gemm_shapes.py table /tmp/art/shapes /tmp/ncu.csv 2>&1 | tee $out/gemm-shapes-ncu.txt
