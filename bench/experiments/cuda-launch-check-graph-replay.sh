#!/bin/bash
# Sixth H200 run of the sixth session: braze's launcher with the generated kernels (issue 17):
# numerics of every zoo model launched and through iree.runtime against eager, ordering and
# capture, per-call time against the sum of kernel times for the layers.
# Artifacts built here: python bench/launch_check.py build $B/lcheck6 --workloads tiny,layers,layers_fp32
#   (tarred as lcheck6/ into .gpu/art.tar.xz); then on the GPU host: bash bench/experiments/cuda-launch-check-graph-replay.sh
. bench/experiments/gpu_setup.sh
timeout 400 python3 bench/launch_check.py run /tmp/art/lcheck6 --json $out/launch-check.json > $out/launch-check.txt 2>&1
echo "rc=$?" >> $out/launch-check.txt
grep -v Warn $out/launch-check.txt | tail -70
