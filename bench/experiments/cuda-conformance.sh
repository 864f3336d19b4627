#!/bin/bash
# Issue 39 on CUDA: torch-mlir's e2e conformance suite through braze (float32-exact: precision
# 'highest') and through the raw toolchain (torch-mlir + IREE for cuda, its default flags),
# compiled here for sm_90 and run on the GPU host, where there is no IREE compiler.
#
#   here:   bash bench/experiments/cuda-conformance.sh compile SUITE   (SUITE: torch-mlir's projects/pt1/python;
#           ~30 min a toolchain on 2 cores) then pack SUITE  (-> .gpu/conf.tar.xz)
#   there:  (device tool, carry .gpu; sourced gpu_setup.sh) bash bench/experiments/cuda-conformance.sh run [braze|raw]
#           (JOBS workers, default 8; on an H100 with 14, braze's part and most of raw's took a 7-minute call)
#
# Arguments and golden results of more than LIMIT bytes (1 MB) stay behind (the device tool
# carries 64 MiB a call): the suite's sources travel instead, and the run makes them again there
# (the suite's TestUtils seeds torch's CPU generator; eager's golden result from the host's CPU).
set -o pipefail
cd "$(dirname "$0")/../.."
DIR=${CONF_DIR:-/tmp/conf}
case $1 in
  compile)
    python bench/conformance_e2e.py --suite "$2" --save $DIR/braze --device cuda --target sm_90 \
      --precision highest --jobs 2 | tail -3 || exit 1
    # the raw toolchain as a user of it gets Hopper: IREE 3.13's --iree-cuda-target has no sm_90,
    # so sm_80 code (PTX, which the driver compiles for the H200 at load time)
    python bench/conformance_e2e.py --suite "$2" --raw --save $DIR/raw --device cuda --target sm_80 \
      --jobs 2 | tail -3
    ;;
  pack)
    python3 - "$DIR" "${LIMIT:-1000000}" "$2" <<'EOF' || exit 1
import json, os, sys, tarfile
folder, limit, suite = sys.argv[1], int(sys.argv[2]), sys.argv[3] + "/torch_mlir_e2e_test"
with tarfile.open(".gpu/conf.tar", "w") as tar:
    for part in ("braze", "raw"):
        if not os.path.exists(f"{folder}/{part}/compile.jsonl"):
            continue
        rows = [json.loads(line) for line in open(f"{folder}/{part}/compile.jsonl") if line.strip()]
        kept = []
        for r in rows:
            pt = f"{folder}/{part}/{r['test']}.pt"
            if r["outcome"] == "saved":
                for ext in (".pt", ".braze" if part == "braze" else ".vmfb"):
                    if ext != ".pt" or os.path.getsize(pt) <= limit:
                        tar.add(f"{folder}/{part}/{r['test']}{ext}", f"conf/{part}/{r['test']}{ext}")
            kept.append(r)
        listing = f"/tmp/compile-{part}.jsonl"
        with open(listing, "w") as f:
            f.writelines(json.dumps(r) + "\n" for r in kept)
        tar.add(listing, f"conf/{part}/compile.jsonl")
        print(part, sum(r["outcome"] == "saved" for r in kept), "saved,",
              sum(r["outcome"] == "saved" and os.path.getsize(f"{folder}/{part}/{r['test']}.pt") > limit
                  for r in kept), "to be made again there")
    tar.add(suite, "conf/suite/torch_mlir_e2e_test")
EOF
    xz -T2 -6 -f .gpu/conf.tar && ls -l .gpu/conf.tar.xz
    ;;
  run)
    rm -rf /tmp/conf-run && mkdir -p /tmp/conf-run && xz -dc .gpu/conf.tar.xz | tar xf - -C /tmp/conf-run || exit 1
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
    for part in ${2:-braze raw}; do  # a part a call where one call's 10 minutes cannot hold both
      [ -d /tmp/conf-run/conf/$part ] || continue
      python3 bench/conformance_e2e.py --load /tmp/conf-run/conf/$part --suite /tmp/conf-run/conf/suite \
        --device cuda --jobs ${JOBS:-8} \
        -o "${OUT:-/tmp}/conformance-cuda-$part.jsonl" > "${OUT:-/tmp}/conformance-cuda-$part.txt"
      head -12 "${OUT:-/tmp}/conformance-cuda-$part.txt"
    done
    [ -f "${OUT:-/tmp}/conformance-cuda-raw.jsonl" ] && python3 bench/conformance_e2e.py \
      --summary "${OUT:-/tmp}/conformance-cuda-braze.jsonl" --against "${OUT:-/tmp}/conformance-cuda-raw.jsonl" | \
      sed -n '/passes .* by the first only/,$p' | tee "${OUT:-/tmp}/conformance-cuda-against-raw.txt"
    ;;
  *) echo "usage: $0 compile SUITE | pack SUITE | run [braze|raw]" >&2; exit 2 ;;
esac
