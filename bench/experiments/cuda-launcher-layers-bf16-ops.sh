#!/bin/bash
# Second H200 run of the fourth session: the launcher on multi-dispatch layers (bf16
# TransformerEncoderLayer and BERT layer), the ordering checks with fresh data per trial, the
# launch cost with cuda-bindings, and the bf16 ops of MobileNet one by one. Artifacts built here:
#   python bench/launch_check.py build $B/launch --workloads tiny,layers
#   python bench/repro/bf16_ops.py build $B/bf16ops
#   (cd $B && tar cJf .gpu/art.tar.xz launch bf16ops)
set -o pipefail
python3 -m pip install -q --no-index --no-deps --target /tmp/site .gpu/*.whl && \
  python3 -m pip install -q --no-deps --no-build-isolation --target /tmp/site . || exit 1
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 PYTHONWARNINGS=ignore
mkdir -p /tmp/art && tar xJf .gpu/art.tar.xz -C /tmp/art || exit 1
out=${OUT:-/tmp/out}; mkdir -p $out
python3 bench/repro/bf16_ops.py run /tmp/art/bf16ops 2>&1 | tee $out/bf16-ops.txt
python3 bench/experiments/launch_cost.py /tmp/art/launch/chain1024.braze 2>&1 | tee $out/launch-cost.txt
python3 bench/launch_check.py run /tmp/art/launch --json $out/launch.json 2>&1 | tee $out/launch.txt
