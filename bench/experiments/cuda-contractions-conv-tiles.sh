#!/bin/bash
# Fourth H200 run of the sixth session: everything of issue 16 together.
# Artifacts built here (then tarred as bench/, kconv/, ktiles/ into .gpu/art.tar.xz, the
# bench's IREE artifacts dropped from the manifests for the 64 MiB trip):
#   braze bench build $B/bench8 --device cuda --target sm_90 --group-mib 200 --workloads \
#       gelu_mlp,gelu_mlp_bf16,transformer_encoder,transformer_encoder_bf16,bert_layer,bert_layer_bf16,attention,conv_bn_relu,resnet18
#   python bench/kernels_check.py build $B/kconv --only conv3x3_8x64x56_bn_relu,conv7x7s2_stem_8x3x224,\
#       conv3x3s2_8x128x28,conv1x1s2_8x64x56,conv3x3_8x64x56_bn_relu_bf16,conv3x3_8x256x14_bf16
#   python bench/experiments/kernel_tiles.py build $B/ktiles --only gemm_4096x4096x1024_tf32 \
#       --tiles 128x256x32x8x3,256x128x32x8x3,128x128x64x8x2,128x256x32x8x2
#   python bench/experiments/kernel_tiles.py build $B/ktiles --only mlp_down_256x1024x4096_bf16,\
#       ffn_down_1024x768x3072_bf16 --tiles 64x32x64x4x4,64x32x128x4x3,64x64x128x4x3,64x16x64x4x4,64x64x64x4x4
# then on the GPU host: DEADLINE=540 bash bench/experiments/cuda-contractions-conv-tiles.sh
start=$(date +%s)
. bench/experiments/gpu_setup.sh
convs=conv3x3_8x64x56_bn_relu,conv7x7s2_stem_8x3x224,conv3x3s2_8x128x28,conv1x1s2_8x64x56,conv3x3_8x64x56_bn_relu_bf16,conv3x3_8x256x14_bf16
timeout 100 ncu --clock-control none --csv --metrics gpu__time_duration.sum \
    python3 bench/kernels_check.py profile /tmp/art/kconv > /tmp/ncu-conv.csv 2>&1
python3 bench/experiments/ncu_table.py /tmp/ncu-conv.csv $convs > $out/conv-ncu.txt 2>&1; cat $out/conv-ncu.txt
timeout 100 ncu --clock-control none --csv --metrics gpu__time_duration.sum \
    python3 bench/experiments/kernel_tiles.py profile /tmp/art/ktiles > /tmp/ncu-tiles.csv 2>&1
python3 bench/experiments/kernel_tiles.py table /tmp/art/ktiles /tmp/ncu-tiles.csv > $out/tiles-ncu.txt 2>&1; cat $out/tiles-ncu.txt
for g in 1 2; do
  left=$(( ${DEADLINE:-540} - ($(date +%s) - start) ))
  [ $left -gt 40 ] && timeout $left python3 -m braze.tools.cli bench run /tmp/art/bench/group-$g --json $out/bench-$g.json \
      --torch-compile-modes default > $out/bench-$g.txt 2>&1
  grep "^| " $out/bench-$g.txt | grep -v "p10" | cut -d'|' -f2,4,5,8,10,13
done
