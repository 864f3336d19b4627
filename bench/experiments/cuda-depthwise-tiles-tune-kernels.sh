#!/bin/bash
# Second H200 run of the ninth session (issue 16): the depthwise template's tiles against torch's
# depthwise kernels and IREE's own, then `braze tune` for the generated kernels of the GELU MLP
# and BERT layer (bf16), by ncu kernel time.
# Artifacts (here): the depthwise part of bench/experiments/splitk_tiles.sh into $B/s9b
#   (ktiles/, kcheck/); python -m braze.tools.tune build $B/tune9 --workloads "" --kernels gelu_mlp_bf16,bert_layer_bf16;
#   tar cf - -C $B s9b tune9 | xz --lzma2=preset=1,dict=128MiB -T1 > .gpu/art.tar.xz
. bench/experiments/gpu_setup.sh
timeout 100 python3 bench/experiments/kernel_tiles.py run /tmp/art/s9b/ktiles > $out/dw-tiles.txt 2>&1
grep -v Warn $out/dw-tiles.txt | cut -c1-400
timeout 120 ncu --clock-control none --csv --metrics gpu__time_duration.sum \
    python3 bench/experiments/kernel_tiles.py profile /tmp/art/s9b/ktiles > /tmp/ncu-dw.csv 2>&1
python3 bench/experiments/kernel_tiles.py table /tmp/art/s9b/ktiles /tmp/ncu-dw.csv > $out/dw-tiles-ncu.txt 2>&1
cat $out/dw-tiles-ncu.txt
timeout 60 python3 bench/kernels_check.py run /tmp/art/s9b/kcheck > $out/dw-check.txt 2>&1
grep -v Warn $out/dw-check.txt
timeout 280 ncu --clock-control none --csv --metrics gpu__time_duration.sum \
    python3 -m braze.tools.tune run /tmp/art/tune9 --reps 5 --markers > /tmp/tune.csv 2> $out/tune-run.err
python3 -m braze.tools.tune kernels /tmp/art/tune9 /tmp/tune.csv > $out/tune-kernels.txt 2>&1
cp /tmp/art/tune9/winners.json $out/ 2>/dev/null
grep -v Warn $out/tune-kernels.txt; tail -3 $out/tune-run.err
