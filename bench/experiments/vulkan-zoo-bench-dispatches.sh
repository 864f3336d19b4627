#!/bin/bash
# H200 run of the twelfth session (issue 19: Vulkan; one probe for issue 16).
# Artifacts (here), packed interleaved by workload so xz shares the weights of the Vulkan and CUDA builds:
#   python bench/gpu_check.py build /tmp/art/zoovk --devices vulkan
#   braze bench build /tmp/art/bvk --device vulkan --target ampere --group-mib 800   (then bench_subset.py -> bvks)
#   braze bench build /tmp/art/bcu --device cuda --target sm_90 --group-mib 800 --workloads <the same 13>  (-> bcus)
#   python bench/experiments/vulkan_dispatches.py build /tmp/art/vkd --workloads <the 13>
#   python bench/experiments/kernel_tiles.py build /tmp/art/kt16/ktiles --only ffn_down_1024x768x3072_bf16 --tiles ...
# GPU host: the Vulkan loader from .gpu/gl (apt-get download libvulkan1 libegl1 libglvnd0 libopengl0 libgl1 libglx0 libgles2).
. bench/experiments/gpu_setup.sh
for f in .gpu/gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
timeout 120 python3 bench/gpu_check.py run /tmp/art/zoovk > $out/zoo-vulkan.txt 2>&1
echo "zoo rc=$?" >> $out/zoo-vulkan.txt
grep -v Warn $out/zoo-vulkan.txt | tail -22
timeout 170 python3 -m braze.tools.cli bench run /tmp/art/bvks/group-1 --json $out/bench-vulkan.json \
    --torch-compile-modes none > $out/bench-vulkan.txt 2>&1
timeout 170 python3 -m braze.tools.cli bench run /tmp/art/bcus/group-1 --json $out/bench-cuda.json \
    --torch-compile-modes none > $out/bench-cuda.txt 2>&1
python3 bench/experiments/vulkan_vs_cuda.py $out/bench-vulkan.json $out/bench-cuda.json | tee $out/vulkan-vs-cuda.txt
timeout 120 python3 bench/experiments/vulkan_dispatches.py run /tmp/art/vkd --top 5 > $out/vulkan-dispatches.txt 2>&1
cat $out/vulkan-dispatches.txt | head -80
timeout 60 ncu --clock-control none --csv --metrics gpu__time_duration.sum \
    python3 bench/experiments/kernel_tiles.py profile /tmp/art/kt16/ktiles > /tmp/ncu-kt.csv 2>&1
python3 bench/experiments/kernel_tiles.py table /tmp/art/kt16/ktiles /tmp/ncu-kt.csv > $out/ffn-down-tiles.txt 2>&1
cat $out/ffn-down-tiles.txt
