#!/bin/bash
# Session 16, fourth run on the GPU host's Xeon: BRAZE_CPU_WAIT=auto (each program times both
# ways of waiting on its first calls and keeps the faster, bench/NOTES.md §41) beside batch and
# normal, at 16 threads and confined to 2 CPUs. Artifacts: xeon-cpu-wait-localsync.sh's .gpu/cpuC, cpuD.
. bench/experiments/gpu_setup.sh
for d in cpuC cpuD; do
  python3 bench/experiments/cpu_remote.py run /tmp/art/$d --threads 16 --wait auto,batch,normal 2>&1 | tee -a $out/cpu-xeon-wait-auto.txt
done
taskset -c 0-1 python3 bench/experiments/cpu_remote.py run /tmp/art/cpuC --threads 2 --wait auto,batch,normal 2>&1 | tee -a $out/cpu-xeon-wait-auto.txt
