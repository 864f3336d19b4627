#!/bin/bash
# Session 15 (second run) on the GPU host's CPU (Intel Xeon, AVX-512 + AMX, 16 cores): braze's CPU variants
# compiled here for emeraldrapids (bench/experiments/cpu_remote.py build, into .gpu/cpu{A,B},
# packed as .gpu/art.tar.xz), timed there beside eager at 1 and 16 threads.
#   here:  python bench/experiments/cpu_remote.py build .gpu/cpuB --target emeraldrapids \
#            --workloads layernorm_gelu,attention,transformer_encoder,bert_layer,gelu_mlp,elementwise_chain \
#            --variants default,no-fusion
#          python bench/experiments/cpu_remote.py build .gpu/cpuA --target emeraldrapids \
#            --workloads conv_bn_relu,resnet18 --variants default,channels-last-off,no-fusion
#          (cd .gpu && tar cf - cpuA cpuB | xz -T2 > art.tar.xz)
#   there: bash bench/experiments/xeon-cpu-variants-run2.sh
# The run is session 15's (the same loop over .gpu/cpuA and .gpu/cpuB at 1 and 16 threads).
exec bash bench/experiments/xeon-cpu-variants.sh
