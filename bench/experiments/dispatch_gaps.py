"""Where a call's time goes between kernels: the GPU timeline of braze calls, read with nsys.

    python bench/experiments/dispatch_gaps.py run ARTIFACT WORKLOAD              # GPU host, under nsys:
    nsys profile -o /tmp/gaps --force-overwrite true \\
        python bench/experiments/dispatch_gaps.py run DIR/transformer_encoder-braze.braze transformer_encoder
    nsys stats -r cuda_gpu_trace -f csv -o /tmp/gaps /tmp/gaps.nsys-rep          # -> /tmp/gaps_cuda_gpu_trace.csv
    python bench/experiments/dispatch_gaps.py table /tmp/gaps_cuda_gpu_trace.csv

`run` makes 5 warm-up calls and then 5 calls, each after a marker kernel (a 1-element torch
fill) and followed by a device synchronize, and prints the host time of each. `table` splits
the trace at the markers and prints, per call, the kernels, their summed time, the span from the
first kernel's start to the last one's end, and the idle time between kernels inside the span.
"""

import csv
import sys
import time


def run(path: str, name: str) -> None:
    import torch

    import braze
    from braze.testing.zoo import WORKLOADS

    _, args = WORKLOADS[name].build("cuda")
    args = [a.cuda() for a in args]
    module = braze.load(path, device="cuda")
    marker = torch.empty(1, device="cuda")
    for _ in range(5):
        module(*args)
    torch.cuda.synchronize()
    for _ in range(5):
        marker.fill_(1.0)
        torch.cuda.synchronize()
        t = time.perf_counter()
        module(*args)
        torch.cuda.synchronize()
        print(f"host: {(time.perf_counter() - t) * 1e6:.0f} us per call (launch to synchronized)")


def table(path: str) -> None:
    rows = list(csv.reader(open(path)))
    header = rows[0]
    col = lambda key: next(i for i, h in enumerate(header) if h.startswith(key))  # noqa: E731
    start, duration, name = col("Start"), col("Duration"), col("Name")
    calls, current = [], None
    for r in rows[1:]:
        if len(r) <= name:
            continue
        if "FillFunctor" in r[name] and float(r[duration]) < 5000:
            current = []
            calls.append(current)
        elif current is not None:
            current.append((float(r[start]) / 1e3, float(r[duration]) / 1e3))
    warm = [c for c in calls if c][-5:]
    for i, kernels in enumerate(warm):
        busy = sum(d for _, d in kernels)
        span = kernels[-1][0] + kernels[-1][1] - kernels[0][0]
        idle = span - busy
        print(f"call {i}: {len(kernels)} kernels, {busy:.0f} us of kernels, span {span:.0f} us, "
              f"idle {idle:.0f} us ({idle / max(1, len(kernels) - 1):.1f} us per gap)")


if __name__ == "__main__":
    if len(sys.argv) < 3 or sys.argv[1] not in ("run", "table"):
        sys.exit(__doc__)
    if sys.argv[1] == "run":
        run(sys.argv[2], sys.argv[3])
    else:
        table(sys.argv[2])
