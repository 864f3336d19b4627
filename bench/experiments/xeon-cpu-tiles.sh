#!/bin/bash
# Session 19 (issue 41) on the GPU host's CPU (Intel Xeon, emeraldrapids, 16 cores): braze's f32 mmt4d
# tiles (braze.compiler.cpu_tiles, bench/NOTES.md §48) side by side with IREE's, eager and torch.compile.
#   here:  python bench/experiments/cpu_remote.py build .gpu/cpuT --target emeraldrapids \
#            --workloads transformer_encoder,bert_layer,gelu_mlp,conv_bn_relu,resnet18 \
#            --variants tiles-iree,tiles-micro-n1,tiles-micro-l2,tiles-loops-n2,tiles-loops-l2,tiles-loops1-n1
#          python bench/experiments/cpu_remote.py build .gpu/cpuO --target emeraldrapids \
#            --workloads attention,layernorm_gelu,elementwise_chain,elementwise_chain_bf16 --variants default
#          (cd .gpu && tar cf - --sort=name cpuT | xz -9 -T1 > a.xz; tar cf - cpuO | xz -9 > b.xz; cat a.xz b.xz > art.tar.xz)
#          (xz -9: its 64 MiB window finds a workload's weights again in each variant's artifact: 645 MB -> 16 MB)
#   there: bash bench/experiments/xeon-cpu-tiles.sh
. bench/experiments/gpu_setup.sh
lscpu | grep -E "Model name|^CPU\(s\)|L1d|L2|L3" | tee $out/host.txt
for t in 1 16; do
  for d in cpuT cpuO; do
    python3 bench/experiments/cpu_remote.py run /tmp/art/$d --threads $t --rounds 7 --torch-compile default 2>&1 \
      | grep -v "^W1\|Warning" | tee -a $out/cpu-xeon-tiles-threads$t.txt
  done
done
