"""Per-kernel times of braze's artifact and of torch.compile (default mode) for bench workloads,
read with torch.profiler on the GPU host (issue 37's kernel tables).

    python bench/experiments/transformer_kernels.py DIR WORKLOAD...
        DIR: a `braze bench build` folder (group-*/manifest.json); prints, per workload and
        contender, each kernel's time per call (the mean over 10 profiled calls), largest first.
"""

import json
import sys
from collections import defaultdict
from pathlib import Path

import torch

import braze
from braze.testing.zoo import workload


def kernel_table(fn, args, calls: int = 10) -> list[tuple[str, float]]:
    for _ in range(3):
        fn(*args)
    torch.cuda.synchronize()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            fn(*args)
        torch.cuda.synchronize()
    times = defaultdict(float)
    for e in prof.events():
        if e.device_type == torch.autograd.DeviceType.CUDA:
            times[e.name] += e.device_time / 1000.0 / calls
    return sorted(times.items(), key=lambda kv: -kv[1])


def main(directory: str, names: list[str]) -> None:
    arts = {}
    for m in Path(directory).glob("group-*/manifest.json"):
        for e in json.loads(m.read_text())["workloads"]:
            arts[e["workload"]] = m.parent / e["artifacts"]["braze"]["file"]
    for name in names:
        model, args = workload(name).build("cuda")
        model, args = model.cuda(), [a.cuda() for a in args]
        contenders = {"braze": braze.load(arts[name], device="cuda"), "inductor": torch.compile(model)}
        for who, fn in contenders.items():
            with torch.no_grad():
                table = kernel_table(fn, args)
            total = sum(t for _, t in table)
            print(f"== {name} {who}: {total:.3f} ms of kernels per call")
            for k, t in table[:14]:
                print(f"  {t:8.3f} ms  {100 * t / total:5.1f}%  {k[:110]}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
