#!/bin/bash
# Last H200 run of the seventh session: the launch check (numerics of every zoo model launched
# against iree.runtime and eager, ordering, capture, per call against the kernel sum) and the
# differential suite on CUDA, both built with IREE's aggressive fusion (the CUDA default, with
# its fallback) and the differential's TF32 allowance and per-variant known failures.
# Artifacts built here:
#   python bench/launch_check.py build $B/lcheck7 --workloads tiny,layers,layers_fp32
#   python bench/differential.py build $B/diff-cuda --device cuda --target sm_90 --seeds 0:300
#   (tarred as lcheck7/ and diff-cuda/ into .gpu/art.tar.xz); then on the GPU host:
#   bash bench/experiments/cuda-launch-check-differential.sh
. bench/experiments/gpu_setup.sh
timeout 300 python3 bench/launch_check.py run /tmp/art/lcheck7 --json $out/launch-check.json > $out/launch-check.txt 2>&1
echo "rc=$?" >> $out/launch-check.txt
grep -v Warn $out/launch-check.txt | tail -75
timeout 200 python3 bench/differential.py run /tmp/art/diff-cuda > $out/diff-cuda.txt 2>&1
echo "rc=$?" >> $out/diff-cuda.txt
grep -v Warn $out/diff-cuda.txt | tail -25
