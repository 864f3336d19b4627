#!/bin/bash
# Third H200 run of the twelfth session (issue 19): the fixed cost of a Vulkan call. A 4-element
# ReLU and two bench workloads (plain ABI, as vulkan_dispatches.py builds them) under
# iree-benchmark-module with IREE's Vulkan runtime flags varied one at a time.
# Artifacts (here): /tmp/art/vkt/tiny.vmfb (braze.compile(ReLU, randn(4), device="vulkan",
#   target="ampere", transient_storage=False).vmfb), layernorm_gelu.vmfb and gelu_mlp.vmfb from /tmp/art/vkd.
. bench/experiments/gpu_setup.sh
for f in .gpu/gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
B=/tmp/site/iree/_runtime_libs/iree-benchmark-module
declare -A IN=([tiny]="--input=4xf32=0.5" [layernorm_gelu]="--input=8x512x1024xf32=0.5 --input=8x512x1024xf32=0.5" [gelu_mlp]="--input=256x1024xf32=0.5")
for m in tiny layernorm_gelu gelu_mlp; do
  for flags in "" "--vulkan_tracing=false" "--vulkan_dedicated_compute_queue=false" "--vulkan_dispatch_abi=descriptor" \
               "--vulkan_buffer_device_addresses=false" "--vulkan_cached_bda_replay_instances=0"; do
    t=$(timeout 60 $B --module=/tmp/art/vkt/$m.vmfb --device=vulkan --function=main ${IN[$m]} $flags \
        --benchmark_min_time=0.5s 2>&1 | grep "real_time" | awk '{print $2, $3}')
    echo "$m ${flags:-(defaults)}: $t per call" | tee -a $out/vulkan-call-flags.txt
  done
done
