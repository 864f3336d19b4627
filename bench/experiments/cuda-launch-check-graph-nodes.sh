#!/bin/bash
# First H200 run of the seventh session: the launcher's plan as one CUDA graph built node by node
# (python/braze/runtime/cuda/graph.py; pointers rewritten per call instead of copies in and out) through
# the launch check: numerics of every zoo model against iree.runtime, ordering (two streams on one
# executable graph), capture, per-call time against the sum of kernel times.
# Artifacts (unchanged since the sixth session: the change is in the runtime):
#   python bench/launch_check.py build $B/lcheck6 --workloads tiny,layers,layers_fp32
#   (tarred as lcheck6/ into .gpu/art.tar.xz); then on the GPU host: bash bench/experiments/cuda-launch-check-graph-nodes.sh
. bench/experiments/gpu_setup.sh
timeout 420 python3 bench/launch_check.py run /tmp/art/lcheck6 --json $out/launch-check.json > $out/launch-check.txt 2>&1
echo "rc=$?" >> $out/launch-check.txt
grep -v Warn $out/launch-check.txt | tail -75
