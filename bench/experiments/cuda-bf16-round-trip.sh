#!/bin/bash
# Seventh H200 run of session 14 (trust): a bf16/f16 round trip after a matmul on braze's CUDA
# path, before and after fusion-form-groups keeps bf16 round trips in one group
# (bench/experiments/round_trip_check.py; bench/NOTES.md §37).
# Artifacts (here): m2-before.braze and m2h-before.braze compiled by the code before the fix,
#   m2-after.braze after it (braze.compile(model, x, w, device="cuda", target="sm_90")), with
#   m2-inputs.pt, in .gpu/rt/
python3 -m pip install -q --no-index --no-deps --target /tmp/site .gpu/*.whl && \
  python3 -m pip install -q --no-deps --no-build-isolation --target /tmp/site . || exit 1
export PYTHONPATH=/tmp/site PYTHONWARNINGS=ignore
python3 bench/experiments/round_trip_check.py .gpu/rt 2>&1 | tee ${OUT:-/tmp}/round-trip.txt
