"""Repack `braze bench build` groups into folders that fit one GPU-host transfer each: a call's
folder holds one group made of the chosen (workload, contender) artifacts.

    python bench/experiments/pack_calls.py BUILD_DIR OUT_DIR  w1:braze,w2:braze+iree  [...]

Each further argument is one call: OUT_DIR/callN/bench/group-1 (manifest.json and the
artifacts, hard-linked). `braze bench run OUT_DIR/callN/bench/group-1` measures it; `braze
bench merge` joins the calls' results into one table.
"""

import json
import os
import sys
from pathlib import Path


def main(build: Path, out: Path, calls: list[str]) -> int:
    manifests = [(p.parent, json.loads(p.read_text())) for p in sorted(build.glob("group-*/manifest.json"))]
    where = {}
    for folder, m in manifests:
        for e in m["workloads"]:
            for name, art in e["artifacts"].items():
                where[(e["workload"], name)] = (folder, m, e, art)
    for k, call in enumerate(calls, 1):
        group = out / f"call{k}" / "bench" / "group-1"
        group.mkdir(parents=True, exist_ok=True)
        entries, header = {}, None
        for item in call.split(","):
            workload, names = item.split(":")
            for name in names.split("+"):
                folder, m, e, art = where[(workload, name)]
                header = header or {k2: v for k2, v in m.items() if k2 != "workloads"}
                entry = entries.setdefault(workload, dict(e, artifacts={}))
                entry["artifacts"][name] = art
                if art.get("file"):
                    dst = group / art["file"]
                    if not dst.exists():
                        os.link(folder / art["file"], dst)
        manifest = dict(header, group=1, groups=1, workloads=list(entries.values()))
        (group / "manifest.json").write_text(json.dumps(manifest, indent=2))
        size = sum(f.stat().st_size for f in group.iterdir())
        print(f"{group}: {size / 1e6:.1f} MB: {call}")
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3:]))
