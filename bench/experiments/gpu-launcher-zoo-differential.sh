#!/bin/bash
# The GPU checks of the fourth session, on the H200, from artifacts built here:
#   python bench/gpu_check.py build $B/zoo --devices cuda,vulkan
#   braze check braze.testing.zoo:mobilenet_bf16 --device cuda --target sm_90 --build $B/mnet
#   python bench/launch_check.py build $B/launch --workloads tiny
#   python bench/differential.py build $B/diff-cuda --device cuda --target sm_90 --seeds 0:300
#   python bench/differential.py build $B/diff-vulkan --device vulkan --target ampere --seeds 0:300
#   (cd $B && tar cJf .gpu/art.tar.xz zoo mnet launch diff-cuda diff-vulkan)
# then, on the GPU host: bash bench/experiments/gpu-launcher-zoo-differential.sh (results in $OUT).
set -o pipefail
python3 -m pip install -q --no-index --no-deps --target /tmp/site .gpu/*.whl && \
  python3 -m pip install -q --no-deps --no-build-isolation --target /tmp/site . || exit 1
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 PYTHONWARNINGS=ignore
for f in .gpu/gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
mkdir -p /tmp/art && tar xJf .gpu/art.tar.xz -C /tmp/art || exit 1
out=${OUT:-/tmp/out}; mkdir -p $out
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $out/gpu.txt
python3 bench/launch_check.py run /tmp/art/launch --json $out/launch.json 2>&1 | tee $out/launch.txt
python3 bench/experiments/launch_cost.py /tmp/art/launch/chain1024.braze 2>&1 | tee $out/launch-cost.txt
python3 bench/gpu_check.py run /tmp/art/zoo 2>&1 | tee $out/zoo.txt
python3 -m braze.tools.cli check --run /tmp/art/mnet 2>&1 | tee $out/mnet.txt
python3 bench/differential.py run /tmp/art/diff-cuda 2>&1 | tail -60 | tee $out/diff-cuda.txt
python3 bench/differential.py run /tmp/art/diff-vulkan 2>&1 | tail -60 | tee $out/diff-vulkan.txt
