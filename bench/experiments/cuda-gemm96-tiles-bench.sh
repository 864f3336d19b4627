#!/bin/bash
# Third H200 run of session 14 (issue 16): 96-wide tiles through braze's own path. The BERT
# FFN-down and attention-output Linears at the cost model's old and new tiles (and split K with
# TMA at 128x128) as braze artifacts: per-call times and errors after 200 calls, ncu kernel times
# beside cuBLAS's; then the bf16 contraction workloads of the bench against eager and torch.compile.
# Artifacts (here):
#   B=/work/gpubuild/s14
#   python bench/experiments/kernel_tiles.py build $B/ktiles --only ffn_down_1024x768x3072_bf16 \
#     --tiles 64x64x128x4x3,64x96x64x4x5,64x96x64x4x4,128x128x64x8x4x2,128x128x64x8x4x2x1,128x128x64x8x3x2x1
#   python bench/experiments/kernel_tiles.py build $B/ktiles --only proj_1024x768x768_bf16 --tiles 64x64x64x4x4,64x96x64x4x5,64x96x64x4x4
#   python bench/experiments/kernel_tiles.py build $B/ktiles --only ragged_77x131x1000_gelu_bf16 --tiles 64x64x64x4x4,64x96x64x4x5,32x48x64x4x3x2
#   braze bench build $B/bench --device cuda --target sm_90 --group-mib 800 --workloads gelu_mlp_bf16,transformer_encoder_bf16,bert_layer_bf16
#   python bench/experiments/bench_subset.py $B/bench/group-1 $B/benchs/group-1 gelu_mlp_bf16,transformer_encoder_bf16,bert_layer_bf16
#   tar chf - -C $B ktiles benchs | xz --lzma2=preset=1,dict=128MiB -T1 > .gpu/art.tar.xz
. bench/experiments/gpu_setup.sh
RUN_TIMEOUT=120 NCU_TIMEOUT=150 . bench/experiments/tiles_on_gpu.sh gemm96-tiles
timeout 300 python3 -m braze.tools.cli bench run /tmp/art/benchs/group-1 --json $out/bench.json \
    --torch-compile-modes default > $out/bench.txt 2>&1
grep "^| " $out/bench.txt | grep -v "p10" | cut -d'|' -f2,4,5,8,10,13
grep -i "geomean" -A3 $out/bench.txt | tail -4
