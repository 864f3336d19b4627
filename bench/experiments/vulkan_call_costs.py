"""Where a Vulkan call's time goes (issue 19): the plain-ABI modules of vulkan_dispatches.py,
called through iree.runtime on the GPU host (a) with inputs already in device memory and the
results left there, (b) with numpy inputs and the results read back, as braze's Vulkan path does
for CPU tensors. Medians of 20 calls after 3 warm-up calls, beside the dispatch time from
vulkan_dispatches.py's profile.

    python bench/experiments/vulkan_call_costs.py DIR [name,...]     (GPU host: iree-base-runtime, numpy)
"""

from __future__ import annotations

import json
import re
import statistics
import sys
import time
from pathlib import Path

import numpy as np

NUMPY = {"f32": np.float32, "bf16": np.uint16, "f16": np.float16, "i64": np.int64, "i32": np.int32}


def _arrays(specs: list[str]) -> list[np.ndarray]:
    out = []
    for spec in specs:
        m = re.match(r"([\dx]+)x(\w+)=(.*)", spec)
        shape = [int(d) for d in m.group(1).split("x")]
        dtype = NUMPY[m.group(2)]
        value = 0x3F00 if m.group(2) == "bf16" else float(m.group(3))  # 0.5 in bf16 bits
        out.append(np.full(shape, value, dtype=dtype))
    return out


def _median_ms(fn, reps: int = int(__import__("os").environ.get("REPS", 20))) -> float:
    for _ in range(3):
        fn()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def main(out: Path, only: list[str] | None) -> int:
    import iree.runtime as rt

    config = rt.Config("vulkan")
    print("| workload | device-resident call ms | host numpy in, results read back ms | input MiB | output MiB |")
    print("|---|---:|---:|---:|---:|")
    for entry in json.loads((out / "manifest.json").read_text()):
        name = entry["name"]
        if (only and name not in only) or any("xbf16=" in i for i in entry["inputs"]):
            continue  # numpy has no bfloat16 for iree.runtime to take
        ctx = rt.SystemContext(config=config)
        ctx.add_vm_module(rt.VmModule.copy_buffer(ctx.instance, (out / f"{name}.vmfb").read_bytes()))
        main = ctx.modules.module["main"]
        host = _arrays(entry["inputs"])
        device = [rt.asdevicearray(config.device, a) for a in host]
        results = main(*device)
        results = results if isinstance(results, (tuple, list)) else [results]
        out_mib = sum(r.to_host().nbytes for r in results) / 2**20

        def resident():
            main(*device)

        def round_trip():
            r = main(*host)
            for x in (r if isinstance(r, (tuple, list)) else [r]):
                x.to_host()

        print(f"| {name} | {_median_ms(resident):.3f} | {_median_ms(round_trip):.3f} | "
              f"{sum(a.nbytes for a in host) / 2**20:.0f} | {out_mib:.0f} |")
    return 0


if __name__ == "__main__":
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    sys.exit(main(Path(sys.argv[1]), sys.argv[2].split(",") if len(sys.argv) == 3 else None))
