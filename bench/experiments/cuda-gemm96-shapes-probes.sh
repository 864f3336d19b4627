#!/bin/bash
# Second H200 run of session 14 (issue 16): the first run's best tile (64 x (64 + 32), BK 64, 5
# stages) with loads without masks and deeper pipelines; lone programs against full waves
# (latency or bandwidth?); ncu's throughput sections for it and cuBLAS's kernel.
# Artifacts (here): python bench/experiments/gemm_shapes.py build /work/gpubuild/shapes;
#   tar cf - -C /work/gpubuild shapes | xz -T1 > .gpu/art.tar.xz
. bench/experiments/gpu_setup.sh
python3 bench/experiments/gemm_shapes.py run /tmp/art/shapes 2>&1 | tee $out/gemm-shapes-run.txt
timeout 200 ncu --clock-control none --csv --metrics gpu__time_duration.sum \
    python3 bench/experiments/gemm_shapes.py profile /tmp/art/shapes > /tmp/ncu.csv 2>&1
python3 bench/experiments/gemm_shapes.py table /tmp/art/shapes /tmp/ncu.csv 2>&1 | tee $out/gemm-shapes-ncu.txt
timeout 200 ncu --clock-control none --section SpeedOfLight --section MemoryWorkloadAnalysis \
    --section Occupancy --section WarpStateStats --launch-count 3 \
    -k 'regex:g_ffn_64x64p32x64w4s5k1f0e|g_ffn_128x64p32x64w8s4k2f1e|nvjet|xmma|cutlass' \
    python3 bench/experiments/gemm_shapes.py profile /tmp/art/shapes > $out/gemm-shapes-sections.txt 2>&1
grep -E "^  [a-z_]|Duration|Throughput|Hit Rate|Bandwidth|Busy|Achieved Occupancy|Cycles Per Issued|Registers" \
    $out/gemm-shapes-sections.txt | head -80
