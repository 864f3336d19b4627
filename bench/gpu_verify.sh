#!/bin/bash
# Every GPU correctness check of braze, rebuilt on the compile machine and rerun on a GPU host
# (issue 35). Run it at the end of every session that changes GPU code, from the final commit,
# and keep what `run` prints in bench/results/gpu-verify-<part>-h200-<date>.txt.
#
#   here:   bash bench/gpu_verify.sh build [PART ...]   compiles each part into .gpu-build/verify/PART
#                                                       and packs them as .gpu/art.tar.xz
#           bash bench/gpu_verify.sh pack PART ...      packs parts built before (for a call of their own)
#   there:  bash bench/gpu_verify.sh run [PART ...]     (the device tool, carry .gpu, with the
#                                                       iree-base-runtime wheel in .gpu/ and the
#                                                       Vulkan loader's debs in .gpu/gl) runs each
#                                                       part; exits 1 if any check failed
#
# PARTS (all of them when none is named; the packed parts must stay under the 64 MiB a call
# carries, with the 15 MB wheel, so big parts go in calls of their own):
#   zoo            bench/gpu_check.py: every zoo model on CUDA and on Vulkan against eager
#   launch         bench/launch_check.py: braze's CUDA launcher against iree.runtime and eager,
#                  ordering on torch's streams without host syncs, graph capture
#   kernels        bench/kernels_check.py: generated GEMM, convolution and attention kernels
#                  against float64, beside IREE's own and torch's
#   diff-cuda      bench/differential.py on CUDA: random graphs, the zoo and coverage cases,
#   diff-vulkan    ... and on Vulkan
#   accuracy       bench/accuracy_check.py: MobileNetV2- and ResNet-50-class networks in float32,
#                  braze's error against eager's (TF32 and float32-exact)
#   pytest         the cuda- and vulkan-marked pytest tests (test/python/gpu_artifacts.py:
#                  --gpu-build here, --gpu-run there, the tests themselves unchanged)
# SEEDS (environment, default 0:100) is the differential suite's random graphs.
set -o pipefail
cd "$(dirname "$0")/.."
ALL="zoo launch kernels diff-cuda diff-vulkan accuracy pytest"
mode=$1; shift
parts=${*:-$ALL}
SEEDS=${SEEDS:-0:100}

build_part() {
  local d=.gpu-build/verify/$1
  rm -rf "$d"; mkdir -p "$d"
  case $1 in
    zoo) python bench/gpu_check.py build "$d" --devices cuda,vulkan ;;
    launch) python bench/launch_check.py build "$d" --workloads tiny,layers ;;
    kernels) python bench/kernels_check.py build "$d" ;;
    diff-cuda) python bench/differential.py build "$d" --device cuda --target sm_90 --seeds "$SEEDS" ;;
    diff-vulkan) python bench/differential.py build "$d" --device vulkan --target ampere --seeds "$SEEDS" ;;
    accuracy) python bench/accuracy_check.py build "$d" ;;
    pytest) python -m pytest -q -p no:cacheprovider --gpu-build "$d" -m "cuda or vulkan" test/python ;;
    *) echo "gpu_verify: unknown part '$1' (parts: $ALL)" >&2; return 2 ;;
  esac
}

run_part() {
  local d=/tmp/art/$1
  [ -d "$d" ] || { echo "gpu_verify: part $1 was not built and packed (bash bench/gpu_verify.sh build $1)"; return 1; }
  case $1 in
    zoo) python3 bench/gpu_check.py run "$d" ;;
    launch) python3 bench/launch_check.py run "$d" ;;
    kernels) python3 bench/kernels_check.py run "$d" ;;
    diff-cuda|diff-vulkan) python3 bench/differential.py run "$d" ;;
    accuracy) python3 bench/accuracy_check.py run "$d" ;;
    pytest) python3 -m pytest -q -p no:cacheprovider -rfEs --gpu-run "$d" -m "cuda or vulkan" test/python ;;
    *) echo "gpu_verify: unknown part '$1' (parts: $ALL)"; return 2 ;;
  esac
}

case $mode in
  build)
    for p in $parts; do
      echo "== building $p"; build_part "$p" || exit 1
    done
    git rev-parse HEAD > .gpu-build/verify/commit
    git status --porcelain --untracked-files=no | grep -q . && echo "dirty" >> .gpu-build/verify/commit
    bash bench/gpu_verify.sh pack $parts
    ;;
  pack)
    # what one call carries: the wheel (15 MB), the tree and these parts must stay under 64 MiB,
    # so parts built together may travel in calls of their own (kernels 39 MB and accuracy 44 MB
    # as xz: one call each; the rest fit in one)
    mkdir -p .gpu && (cd .gpu-build/verify && tar cf - commit $parts | xz -T2 -6 > ../../.gpu/art.tar.xz) || exit 1
    ls -l .gpu/art.tar.xz
    ;;
  run)
    for f in .gpu/gl/*.deb; do dpkg -x "$f" / 2>/dev/null; done; ldconfig
    export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
    . bench/experiments/gpu_setup.sh || exit 1
    echo "gpu_verify: artifacts built from $(cat /tmp/art/commit | tr '\n' ' '); $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader)"
    failed=""
    for p in $parts; do
      echo "== $p"
      run_part "$p" 2>&1 | tee "$out/gpu-verify-$p.txt" || failed="$failed $p"
    done
    if [ -n "$failed" ]; then echo "gpu_verify: FAILED:$failed"; exit 1; fi
    echo "gpu_verify: every part passed"
    ;;
  *)
    echo "usage: bash bench/gpu_verify.sh build|pack|run [PART ...]   (parts: $ALL)" >&2; exit 2 ;;
esac
