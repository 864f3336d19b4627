"""A `braze bench build` group cut down to fit one transfer to the GPU host: the named workloads'
braze artifacts only (the "iree" ones dropped from the manifest), hard-linked into DST.

    python bench/experiments/bench_subset.py SRC_GROUP DST_GROUP resnet18,conv_bn_relu,...
"""

import json
import os
import sys
from pathlib import Path


def main(src: str, dst: str, names: str) -> int:
    keep = set(names.split(","))
    src_dir, dst_dir = Path(src), Path(dst)
    dst_dir.mkdir(parents=True, exist_ok=True)
    manifest = json.loads((src_dir / "manifest.json").read_text())
    missing = keep - {w["workload"] for w in manifest["workloads"]}
    if missing:
        print(f"not in {src}: {', '.join(sorted(missing))}", file=sys.stderr)
        return 1
    manifest["workloads"] = [w for w in manifest["workloads"] if w["workload"] in keep]
    for w in manifest["workloads"]:
        w["artifacts"].pop("iree", None)
        for art in w["artifacts"].values():
            name = art.get("file") or art.get("path") or f"{w['workload']}-braze.braze"
            if not (dst_dir / name).exists():
                os.link(src_dir / name, dst_dir / name)
    (dst_dir / "manifest.json").write_text(json.dumps(manifest, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:4]))
