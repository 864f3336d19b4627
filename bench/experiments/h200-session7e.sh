#!/bin/bash
# Fifth H200 run of the seventh session: the differential suite (300 random graphs, the zoo and
# braze.testing.coverage's float64 / zero-element / depthwise and grouped convolution cases, fused and
# unfused, torch and numpy inputs) on CUDA (with IREE's aggressive fusion, the new default) and Vulkan.
# Artifacts built here:
#   python bench/differential.py build $B/diff-cuda --device cuda --target sm_90 --seeds 0:300
#   python bench/differential.py build $B/diff-vulkan --device vulkan --target ampere --seeds 0:300
#   (tarred as diff-cuda/ and diff-vulkan/ into .gpu/art.tar.xz; the Vulkan loader's debs in .gpu/gl)
# then on the GPU host: bash bench/experiments/h200-session7e.sh
. bench/experiments/gpu_setup.sh
for f in .gpu/gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
for d in cuda vulkan; do
  timeout 250 python3 bench/differential.py run /tmp/art/diff-$d > $out/diff-$d.txt 2>&1
  echo "rc=$?" >> $out/diff-$d.txt
  grep -v Warn $out/diff-$d.txt | tail -25
done
