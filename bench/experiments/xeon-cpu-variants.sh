#!/bin/bash
# Session 15 on the GPU host's CPU (Intel Xeon, AVX-512 + AMX, 16 cores): braze's CPU variants
# compiled here for emeraldrapids (bench/experiments/cpu_remote.py build, into .gpu/cpu{A,B},
# packed as .gpu/art.tar.xz), timed there beside eager at 1 and 16 threads.
#   here:  python bench/experiments/cpu_remote.py build .gpu/cpuA --target emeraldrapids \
#            --workloads layernorm_gelu,attention,transformer_encoder,bert_layer,gelu_mlp,elementwise_chain \
#            --variants default,reassoc,no-fusion,no-fusion-reassoc
#          python bench/experiments/cpu_remote.py build .gpu/cpuB --target emeraldrapids \
#            --workloads conv_bn_relu,resnet18 --variants default,reassoc,no-fusion,cpu-direct,cpu-im2col
#          (cd .gpu && tar cf - cpuA cpuB | xz -T2 > art.tar.xz)
#   there: bash bench/experiments/xeon-cpu-variants.sh
. bench/experiments/gpu_setup.sh
for t in 1 16; do
  for d in cpuA cpuB; do
    python3 bench/experiments/cpu_remote.py run /tmp/art/$d --threads $t 2>&1 | tee -a $out/cpu-xeon-threads$t.txt
  done
done
