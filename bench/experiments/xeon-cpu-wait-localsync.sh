#!/bin/bash
# Session 16 on the GPU host's CPU (Intel Xeon, AVX-512 + AMX, 16 cores): how braze's calls wait
# for IREE's workers (BRAZE_CPU_WAIT batch against normal, bench/NOTES.md §41) at 16 threads, and
# one thread on IREE's local-sync driver (braze.set_cpu_threads(1)), each beside eager.
#   here:  python bench/experiments/cpu_remote.py build .gpu/cpuC --target emeraldrapids \
#            --workloads layernorm_gelu,attention,gelu_mlp,conv_bn_relu,elementwise_chain,transformer_encoder \
#            --variants default
#          python bench/experiments/cpu_remote.py build .gpu/cpuD --target emeraldrapids \
#            --workloads resnet18,bert_layer --variants default
#          (cd .gpu && tar cf - cpuC cpuD | xz -T2 -1 > art.tar.xz)
#   there: bash bench/experiments/xeon-cpu-wait-localsync.sh
. bench/experiments/gpu_setup.sh
echo "cores $(nproc), load $(cat /proc/loadavg)" | tee $out/cpu-xeon-wait.txt
for d in cpuC cpuD; do
  python3 bench/experiments/cpu_remote.py run /tmp/art/$d --threads 16 --wait batch,normal 2>&1 | tee -a $out/cpu-xeon-wait.txt
done
for d in cpuC cpuD; do
  python3 bench/experiments/cpu_remote.py run /tmp/art/$d --threads 1 2>&1 | tee -a $out/cpu-xeon-1thread-localsync.txt
done
