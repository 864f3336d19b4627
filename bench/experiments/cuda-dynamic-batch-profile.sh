#!/bin/bash
# H200 diagnostic: where a dynamic CUDA build's time goes (kernels and copies per call, torch's
# profiler), batch 1 and 64, beside the static builds. Artifacts: as cuda-dynamic-batch.sh.
. bench/experiments/gpu_setup.sh
for n in 1 64; do timeout 200 python3 bench/experiments/dynamic_gpu.py profile /tmp/art/dyn8 $n; done > $out/dynamic-profile.txt 2>&1
echo "rc=$?" >> $out/dynamic-profile.txt
grep -v Warn $out/dynamic-profile.txt | tail -60
