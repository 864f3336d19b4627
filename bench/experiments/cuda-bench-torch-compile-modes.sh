#!/bin/bash
# Third H200 run of the fourth session: the bf16 1x1-convolution fix (the op isolation repro and
# the bf16 MobileNet through the zoo check), and braze bench with the strongest torch anchors
# (torch.compile default, reduce-overhead, max-autotune), memory per call, braze on its launcher
# and the raw toolchain on iree.runtime. Artifacts built here:
#   python bench/repro/bf16_ops.py build $B/bf16ops
#   python bench/gpu_check.py build $B/mnet16 --devices cuda --only mobilenet_bf16,mobilenet
#   braze bench build $B/bench --device cuda --target sm_90
#   python bench/experiments/pack_calls.py $B/bench $B/pack "<small six>:braze+iree" \
#       "transformer_encoder_bf16:braze+iree,bert_layer_bf16:braze+iree,gelu_mlp_bf16:braze+iree" \
#       "resnet18:braze,bert_layer:braze,transformer_encoder:braze,gelu_mlp:braze"
#   (folders renamed bench/small, bench/bf16, bench/fp32; with bf16ops and mnet16 tarred into
#   .gpu/art.tar.xz: 47 MB, the artifacts' weights compress 7x)
# then on the GPU host: BENCH_GROUPS="small bf16 fp32" MODES=default,reduce-overhead bash bench/experiments/cuda-bench-torch-compile-modes.sh
# (the second call: BENCH_GROUPS=... MODES=max-autotune, the same way).
. bench/experiments/gpu_setup.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $out/gpu.txt
if [ -d /tmp/art/bf16ops ]; then
  python3 bench/repro/bf16_ops.py run /tmp/art/bf16ops 2>&1 | tee $out/bf16-ops.txt
fi
if [ -d /tmp/art/mnet16 ]; then
  python3 bench/gpu_check.py run /tmp/art/mnet16 2>&1 | tee $out/mnet16.txt
fi
for g in ${BENCH_GROUPS:-}; do
  timeout ${GROUP_TIMEOUT:-240} python3 -m braze.tools.cli bench run /tmp/art/bench/$g --json $out/bench-$g.json \
    --torch-compile-modes ${MODES:-default,reduce-overhead,max-autotune} 2>&1 | tee $out/bench-$g.txt
done
