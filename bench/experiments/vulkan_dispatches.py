"""Where Vulkan spends its time, per dispatch (issue 19): each bench workload compiled by braze for
Vulkan with IREE's plain ABI (no transient or output storage, so iree-benchmark-module can call
it), timed on the GPU host by iree-benchmark-module with IREE's HAL profiling (device timestamps
per dispatch), summarized by iree-profile.

    python bench/experiments/vulkan_dispatches.py build DIR [--workloads a,b] [--target ampere]   (here)
    python bench/experiments/vulkan_dispatches.py run DIR [--top 6]     (GPU host: iree-base-runtime)
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

ELEMENT = {"float32": "f32", "bfloat16": "bf16", "float16": "f16", "int64": "i64", "int32": "i32"}


def build(out: Path, names: list[str] | None, target: str) -> int:
    import braze
    from braze.testing.zoo import GPU_DEFAULT, WORKLOADS

    out.mkdir(parents=True, exist_ok=True)
    manifest = []
    for name in names or GPU_DEFAULT:
        model, args = WORKLOADS[name].build("cuda")
        try:
            compiled = braze.compile(model, *args, device="vulkan", target=target, cache=False,
                                     transient_storage=False)
        except braze.CompileError as e:
            print(f"{name}: did not compile: {str(e).splitlines()[0][:200]}")
            continue
        (out / f"{name}.vmfb").write_bytes(compiled.vmfb)
        # splat inputs: dispatch times do not depend on the values, and the artifacts travel lighter
        inputs = [f"{'x'.join(map(str, a.shape))}x{ELEMENT[str(a.dtype).replace('torch.', '')]}="
                  + ("1" if not a.dtype.is_floating_point else "0.5") for a in args]
        manifest.append({"name": name, "inputs": inputs, "dispatches": compiled.report.dispatch_count,
                         "workarounds": compiled.report.iree_workarounds})
        print(f"built {name}: {compiled.report.dispatch_count} dispatches")
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1))
    return 0


def run(out: Path, top: int) -> int:
    import iree._runtime_libs as libs

    tools = Path(libs.__file__).parent
    for entry in json.loads((out / "manifest.json").read_text()):
        name = entry["name"]
        prof = out / f"{name}.ireeprof"
        cmd = [str(tools / "iree-benchmark-module"), f"--module={out / (name + '.vmfb')}", "--device=vulkan",
               "--function=main", "--benchmark_min_time=0.3s", "--device_profiling_mode=dispatch-events",
               f"--device_profiling_output={prof}", *[f"--input={i}" for i in entry["inputs"]]]
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode:
            print(f"{name}: did not run: {(done.stderr.strip().splitlines() or ['?'])[-1][:200]}")
            continue
        wall = re.search(r"BM_main/process_time/real_time\s+([\d.]+) (\w+)", done.stdout)
        stats = subprocess.run([str(tools / "iree-profile"), "statistics", str(prof)], capture_output=True, text=True)
        rows = []
        for m in re.finditer(r"dispatch (\S+)\s+count=(\d+) total=([\d.]+) (\w+) avg=([\d.]+) (\w+)", stats.stdout):
            avg = float(m.group(5)) * {"ns": 1e-3, "us": 1.0, "ms": 1e3, "s": 1e6}[m.group(6)]
            rows.append((avg, m.group(1)))
        rows.sort(reverse=True)
        total = sum(a for a, _ in rows)
        print(f"{name}: {len(rows)} dispatches, {total:.1f} us of dispatches per call"
              + (f", {wall.group(1)} {wall.group(2)} per call (iree-benchmark-module)" if wall else ""))
        for avg, fn in rows[:top]:
            print(f"  {avg:9.1f} us  {100 * avg / max(total, 1e-9):4.1f}%  {fn}")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build")
    b.add_argument("dir", type=Path)
    b.add_argument("--workloads")
    b.add_argument("--target", default="ampere")
    r = sub.add_parser("run")
    r.add_argument("dir", type=Path)
    r.add_argument("--top", type=int, default=6)
    a = ap.parse_args()
    if a.cmd == "build":
        return build(a.dir, a.workloads.split(",") if a.workloads else None, a.target)
    return run(a.dir, a.top)


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "python"))
    sys.exit(main())
