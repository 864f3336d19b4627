#!/bin/bash
# Second H200 run of the twelfth session (issue 19, Vulkan): convolutions as im2col + matmul on
# Vulkan (fusion-vulkan-pipeline{conv=im2col}, the new default) against IREE's direct SPIR-V
# convolutions, per dispatch and per call beside CUDA; and where a Vulkan call's time goes.
# Artifacts (here):
#   python bench/experiments/vulkan_dispatches.py build /tmp/art/vkd2 --workloads resnet18,conv_bn_relu   (im2col)
#   /tmp/art/vkd from vulkan-zoo-bench-dispatches.sh (built before im2col: IREE's direct convolutions)
#   braze bench build /tmp/art/bvk2 --device vulkan --target ampere --workloads resnet18,conv_bn_relu (-> bvk2s)
#   bcus from vulkan-zoo-bench-dispatches.sh, cut to resnet18,conv_bn_relu (-> bcu2s)
. bench/experiments/gpu_setup.sh
for f in .gpu/gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
echo "== im2col + matmul"; timeout 100 python3 bench/experiments/vulkan_dispatches.py run /tmp/art/vkd2 --top 4 2>&1 | tee $out/vulkan-dispatches-im2col.txt
echo "== direct"; timeout 150 python3 bench/experiments/vulkan_dispatches.py run /tmp/art/vkd --top 3 2>&1 | grep -A3 "^resnet18\|^conv_bn_relu" | tee $out/vulkan-dispatches-direct.txt
timeout 120 python3 -m braze.tools.cli bench run /tmp/art/bvk2s/group-1 --json $out/bench-vulkan.json \
    --torch-compile-modes none > $out/bench-vulkan.txt 2>&1
timeout 90 python3 -m braze.tools.cli bench run /tmp/art/bcu2s/group-1 --json $out/bench-cuda.json \
    --torch-compile-modes none > $out/bench-cuda.txt 2>&1
python3 bench/experiments/vulkan_vs_cuda.py $out/bench-vulkan.json $out/bench-cuda.json | tee $out/vulkan-vs-cuda.txt
timeout 150 python3 bench/experiments/vulkan_call_costs.py /tmp/art/vkd gelu_mlp,bert_layer,transformer_encoder,attention,layernorm_gelu,layernorm_gelu_bf16,elementwise_chain,conv_bn_relu 2>&1 | tee $out/vulkan-call-costs.txt
