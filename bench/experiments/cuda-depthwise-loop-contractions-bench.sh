#!/bin/bash
# Third H200 run of the ninth session (issue 16): the depthwise template with its filter rows in
# a loop (tiles again, and against torch and IREE), then the contraction workloads of the bench
# (split K in the GELU MLP's down projection and ResNet-18's 256- and 512-channel convolutions).
# Artifacts (here): the depthwise part of bench/experiments/splitk_tiles.sh into $B/s9c;
#   braze bench build $B/bench9 --device cuda --target sm_90 --group-mib 800 --workloads \
#     gelu_mlp,gelu_mlp_bf16,transformer_encoder,transformer_encoder_bf16,bert_layer,bert_layer_bf16,attention,conv_bn_relu,resnet18
#   python bench/experiments/bench_subset.py $B/bench9/group-1 $B/bench9s/group-1 \
#     resnet18,conv_bn_relu,attention,gelu_mlp,gelu_mlp_bf16,bert_layer_bf16,transformer_encoder_bf16
#   tar chf - -C $B s9c bench9s | xz --lzma2=preset=1,dict=128MiB -T1 > .gpu/art.tar.xz
. bench/experiments/gpu_setup.sh
timeout 100 python3 bench/experiments/kernel_tiles.py run /tmp/art/s9c/ktiles > $out/dw-tiles.txt 2>&1
timeout 120 ncu --clock-control none --csv --metrics gpu__time_duration.sum \
    python3 bench/experiments/kernel_tiles.py profile /tmp/art/s9c/ktiles > /tmp/ncu-dw.csv 2>&1
python3 bench/experiments/kernel_tiles.py table /tmp/art/s9c/ktiles /tmp/ncu-dw.csv > $out/dw-tiles-ncu.txt 2>&1
cat $out/dw-tiles-ncu.txt
timeout 60 python3 bench/kernels_check.py run /tmp/art/s9c/kcheck > $out/dw-check.txt 2>&1
grep -v Warn $out/dw-check.txt | head -6
timeout 330 python3 -m braze.tools.cli bench run /tmp/art/bench9s/group-1 --json $out/bench.json \
    --torch-compile-modes default > $out/bench.txt 2>&1
grep "^| " $out/bench.txt | grep -v "p10" | cut -d'|' -f2,4,5,8,10,13
grep -i "geomean" -A3 $out/bench.txt | tail -4
