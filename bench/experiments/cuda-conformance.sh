#!/bin/bash
# Issue 39 on CUDA: torch-mlir's e2e conformance suite through braze (float32-exact: precision
# 'highest') and through the raw toolchain (torch-mlir + IREE for cuda, its default flags),
# compiled here for sm_90 and run on the GPU host, where there is no IREE compiler.
#
#   here:   bash bench/experiments/cuda-conformance.sh compile SUITE   (SUITE: torch-mlir's projects/pt1/python;
#           ~30 min a toolchain on 2 cores) then pack  (-> .gpu/conf.tar.xz)
#   there:  (device tool, carry .gpu; sourced gpu_setup.sh) bash bench/experiments/cuda-conformance.sh run
#
# A test whose arguments and golden result take more than LIMIT bytes (1 MB) stays behind (the
# device tool carries 64 MiB a call): pack lists it as `not-carried`, and the summary counts it
# among the tests that ran in eager but did not pass on CUDA, so the CUDA count is a lower bound.
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
    python3 - "$DIR" "${LIMIT:-1000000}" <<'EOF' || exit 1
import json, os, sys, tarfile
folder, limit = sys.argv[1], int(sys.argv[2])
with tarfile.open(".gpu/conf.tar", "w") as tar:
    for part in ("braze", "raw"):
        if not os.path.exists(f"{folder}/{part}/compile.jsonl"):
            continue
        rows = [json.loads(line) for line in open(f"{folder}/{part}/compile.jsonl") if line.strip()]
        kept = []
        for r in rows:
            pt = f"{folder}/{part}/{r['test']}.pt"
            if r["outcome"] == "saved" and os.path.getsize(pt) > limit:
                r = dict(r, outcome="not-carried", why=f"its arguments and golden result take {os.path.getsize(pt)} bytes")
            elif r["outcome"] == "saved":
                for ext in (".pt", ".braze" if part == "braze" else ".vmfb"):
                    tar.add(f"{folder}/{part}/{r['test']}{ext}", f"conf/{part}/{r['test']}{ext}")
            kept.append(r)
        listing = f"/tmp/compile-{part}.jsonl"
        with open(listing, "w") as f:
            f.writelines(json.dumps(r) + "\n" for r in kept)
        tar.add(listing, f"conf/{part}/compile.jsonl")
        print(part, sum(r["outcome"] == "saved" for r in kept), "saved,",
              sum(r["outcome"] == "not-carried" for r in kept), "not carried")
EOF
    xz -T2 -6 -f .gpu/conf.tar && ls -l .gpu/conf.tar.xz
    ;;
  run)
    rm -rf /tmp/conf-run && mkdir -p /tmp/conf-run && xz -dc .gpu/conf.tar.xz | tar xf - -C /tmp/conf-run || exit 1
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
    for part in braze raw; do
      [ -d /tmp/conf-run/conf/$part ] || continue
      python3 bench/conformance_e2e.py --load /tmp/conf-run/conf/$part --device cuda --jobs ${JOBS:-8} \
        -o "${OUT:-/tmp}/conformance-cuda-$part.jsonl" > "${OUT:-/tmp}/conformance-cuda-$part.txt"
      head -12 "${OUT:-/tmp}/conformance-cuda-$part.txt"
    done
    ;;
  *) echo "usage: $0 compile SUITE | pack | run" >&2; exit 2 ;;
esac
