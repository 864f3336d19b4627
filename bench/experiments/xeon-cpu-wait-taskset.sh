#!/bin/bash
# Session 16, second run on the GPU host's Xeon: the wait policy (BRAZE_CPU_WAIT batch against
# normal) with the process confined to 2, 4 and 8 CPUs (taskset) and as many threads, to find
# where SCHED_BATCH stops helping (it helped on the 2-core EPYC and hurt at 16 threads here;
# bench/NOTES.md §41). Artifacts: xeon-cpu-wait-localsync.sh's .gpu/cpuC.
. bench/experiments/gpu_setup.sh
for n in 2 4 8; do
  last=$((n - 1))
  taskset -c 0-$last python3 bench/experiments/cpu_remote.py run /tmp/art/cpuC --threads $n --wait batch,normal 2>&1 | tee -a $out/cpu-xeon-wait-cpus.txt
done
