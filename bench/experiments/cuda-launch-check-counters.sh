#!/bin/bash
# Diagnostic H200 run: the launch check again with the launcher's counters (graph launches and
# nodes rewritten because a buffer moved) beside its timings, to see whether the company in the
# timing rounds (eager, iree.runtime) costs the launcher rewrites.
# Artifacts: as cuda-launch-check-differential.sh's lcheck7 (tarred as lcheck7/ into .gpu/art.tar.xz).
. bench/experiments/gpu_setup.sh
timeout 300 python3 bench/launch_check.py run /tmp/art/lcheck7 --json $out/launch-check.json > $out/launch-check.txt 2>&1
echo "rc=$?" >> $out/launch-check.txt
grep -v Warn $out/launch-check.txt | tail -36
