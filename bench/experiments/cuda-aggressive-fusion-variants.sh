#!/bin/bash
# Third H200 run of the seventh session: IREE's aggressive dispatch fusion against braze's
# default on the LayerNorm-bearing workloads (bench/NOTES.md §22): per-call time and error
# against float64, per call against the sum of kernel times, and ncu's kernel times.
# Artifacts built here: python bench/experiments/variants.py build $B/aggr aggressive
#   (tarred as aggr/ into .gpu/art.tar.xz); then on the GPU host: bash bench/experiments/cuda-aggressive-fusion-variants.sh
. bench/experiments/gpu_setup.sh
timeout 200 python3 bench/experiments/variants.py run /tmp/art/aggr > $out/variants-run.txt 2>&1
cat $out/variants-run.txt | grep -v Warn
timeout 150 python3 bench/experiments/variants.py calls /tmp/art/aggr > $out/variants-calls.txt 2>&1
cat $out/variants-calls.txt | grep -v Warn
timeout 200 ncu --clock-control none --metrics gpu__time_duration.sum --csv \
    python3 bench/experiments/variants.py kernels /tmp/art/aggr > $out/k.csv 2> $out/ncu.err
python3 bench/experiments/variants.py table $out/k.csv /tmp/art/aggr/kernels-order.txt > $out/variants-kernels.txt 2>&1
cat $out/variants-kernels.txt
