#!/bin/bash
# Session 16, third run on the GPU host's Xeon: IREE alone (iree-benchmark-module, no Python)
# with every thread SCHED_OTHER against every thread SCHED_BATCH (chrt --batch), at 16 workers
# and confined to 2 CPUs, for LayerNorm + GELU and ResNet-18 built here for emeraldrapids
# without braze's ABI (bench/NOTES.md §41):
#   here: .gpu/layernorm_gelu-emr.vmfb and .gpu/resnet18-emr.vmfb.xz (backend.compile_for_target
#         of lower(model) with Target("cpu", "emeraldrapids"), as in the NOTES)
. bench/experiments/gpu_setup.sh
uname -r | tee $out/iree-wait-xeon.txt
xz -dkf .gpu/resnet18-emr.vmfb.xz
B="/tmp/site/bin/iree-benchmark-module --device=local-task --function=main --benchmark_repetitions=5 --benchmark_min_time=0.3s"
LN="--module=.gpu/layernorm_gelu-emr.vmfb --input=8x512x768xf32 --input=8x512x768xf32"
RN="--module=.gpu/resnet18-emr.vmfb --input=1x3x112x112xf32"
for r in 1 2; do
  for w in "16 0-15" "2 0-1"; do set -- $w
    for m in LN RN; do
      for pol in other batch; do
        pre=""; [ $pol = batch ] && pre="chrt --batch 0"
        t=$(taskset -c $2 $pre $B ${!m} --task_topology_group_count=$1 2>&1 | grep real_time_median | awk '{print $2, $3, $4, $5}')
        echo "round $r workers $1 cpus $2 $m $pol: $t" | tee -a $out/iree-wait-xeon.txt
      done
    done
  done
done
