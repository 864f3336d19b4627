#!/bin/bash
# Issue 37: row kernels (LayerNorm, RMSNorm, softmax) on the GPU host: the GPU tests, the kernels
# against IREE's dispatches, torch eager, Inductor and a copy (bench/experiments/row_kernels.py),
# and the transformer workloads' kernel tables (bench/experiments/transformer_kernels.py).
#
#   here:   python bench/experiments/row_kernels.py build .gpu-build/rows
#           python -m pytest --gpu-build .gpu-build/verify/pytest-rows -m "cuda or vulkan" test/python/test_row_kernels.py
#           braze bench build --device cuda --target sm_90 --skip-iree .gpu-build/tf4 \
#               --workloads causal_lm_block_bf16,vit_layer_bf16,gqa_decoder_bf16 --batch-scale 1,8
#           pack rows, pytest-rows and tf/group-* into .gpu/art.tar.xz (one tar, xz)
#   there:  bash bench/experiments/cuda-row-kernels.sh [tests] [rows] [kernels WORKLOAD...]
. bench/experiments/gpu_setup.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
while [ $# -gt 0 ]; do
  case $1 in
    tests) python3 -m pytest -q -p no:cacheprovider -rfEs --gpu-run /tmp/art/pytest-rows -m "cuda or vulkan" \
             test/python/test_row_kernels.py 2>&1 | tee $out/tests.txt; shift ;;
    rows) python3 bench/experiments/row_kernels.py run /tmp/art/rows 2>&1 | tee $out/rows.txt; shift ;;
    kernels) shift; python3 bench/experiments/transformer_kernels.py /tmp/art/tf "$@" 2>&1 | tee $out/kernels.txt; shift $# ;;
    *) echo "unknown part $1"; exit 2 ;;
  esac
done
