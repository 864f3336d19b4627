"""CPU: where a bench workload's time goes, dispatch by dispatch, inside the whole program as
braze compiles it (issue 41).

    python bench/experiments/cpu_dispatch_times.py WORKLOAD [--flag IREE_FLAG]... [--no-fusion] [--pipeline P]

It lowers the workload as braze.compile does (braze.compiler.stages.lower + iree_input), compiles
it with iree-compile as a system library (so perf can attribute samples), runs the whole program
under `perf record` with iree-benchmark-module at one thread (local-sync), maps each sample to
its dispatch function by the dumped binary's symbols, and prints one row per dispatch: its share
of the samples, its ms per call and, where the name gives the sizes of a matmul, GFLOP/s.

It compiles with the iree-compile command, which braze's configuration hook does not reach:
its matmul dispatches have IREE's own mmt4d tiles, not the ones braze.compiler.cpu_tiles gives
them (bench/NOTES.md §57). For braze's, compile with braze.compile(iree_flags=
["--iree-llvmcpu-link-embedded=false", "--iree-hal-dump-executable-binaries-to=DIR"]) and
perf-record the calls.

Why not IREE's `--iree-hal-dump-executable-benchmarks-to`: those benchmarks bind one fresh,
never-written buffer, whose pages are all the kernel's zero page, so every read hits L1. On
this host a 128x3072x768 matmul dispatch runs 2.51 ms that way and 3.72 ms once the buffer is
filled (bench/notes/48-cpu-intel-matmul-tiles.md); per-dispatch numbers from those dumps
flatter every memory-bound step.
"""

import argparse
import bisect
import glob
import json
import os
import re
import subprocess
import sys
import tempfile

from braze.compiler.stages import iree_input, lower
from braze.testing.zoo import WORKLOADS

IREE_BIN = os.path.dirname(sys.executable)


def flops_of(name: str) -> float | None:
    """2*M*N*K(*B) from an IREE dispatch name such as main_dispatch_3_matmul_128x2304x768_f32."""
    m = re.search(r"_(batch_matmul|matmul_transpose_b|matmul|mmt4d|batch_mmt4d)(?:_like)?_((?:\d+x)+\d+)", name)
    if not m:
        return None
    n = 2.0
    for d in m.group(2).split("x"):
        n *= int(d)
    return n


def median_ms(vmfb: str, inputs: list[str]) -> float:
    out = subprocess.run([f"{IREE_BIN}/iree-benchmark-module", f"--module={vmfb}", "--device=local-sync",
                          "--function=main", "--benchmark_repetitions=5", "--benchmark_format=json",
                          "--benchmark_min_time=0.5s", *inputs], capture_output=True, text=True, check=True).stdout
    rows = [r for r in json.loads(out)["benchmarks"] if r.get("aggregate_name") == "median"]
    return rows[0]["real_time"] * {"ns": 1e-6, "us": 1e-3, "ms": 1.0}[rows[0]["time_unit"]]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("workload")
    p.add_argument("--flag", action="append", default=[])
    p.add_argument("--no-fusion", action="store_true")
    p.add_argument("--pipeline")
    a = p.parse_args()
    model, inputs = WORKLOADS[a.workload].build("cpu")
    kw = {"pipeline": a.pipeline} if a.pipeline else {}
    low = lower(model, *inputs, device="cpu", fusion=not a.no_fusion, **kw)
    # braze's buffer ABI (output and transient storage) is left out: the dispatches are the same
    text, flags = iree_input(low, iree_flags=a.flag, output_storage=False, transient_storage=False)
    dtypes = {"torch.float32": "f32", "torch.bfloat16": "bf16", "torch.float16": "f16"}
    args = [f"--input={'x'.join(map(str, t.shape))}x{dtypes[str(t.dtype)]}=0.5" for t in inputs]
    with tempfile.TemporaryDirectory() as d:
        src = f"{d}/in.mlir"
        with open(src, "w") as f:
            f.write(text)
        subprocess.run([f"{IREE_BIN}/iree-compile", src, *flags, "--iree-llvmcpu-link-embedded=false",
                        f"--iree-hal-dump-executable-binaries-to={d}/bin", "-o", f"{d}/m.vmfb"], check=True)
        total_ms = median_ms(f"{d}/m.vmfb", args)
        subprocess.run(["perf", "record", "-q", "-o", f"{d}/perf.data", "--", f"{IREE_BIN}/iree-benchmark-module",
                        f"--module={d}/m.vmfb", "--device=local-sync", "--function=main",
                        "--benchmark_min_time=2s", *args], capture_output=True, check=True)
        report = subprocess.run(["perf", "report", "-i", f"{d}/perf.data", "--no-children", "--sort", "dso,sym"],
                                capture_output=True, text=True, check=True).stdout
        syms = []
        for lib in glob.glob(f"{d}/bin/*.so"):
            for line in subprocess.run(["nm", "-n", lib], capture_output=True, text=True).stdout.splitlines():
                parts = line.split()
                if len(parts) == 3 and parts[1] in "tT":
                    syms.append((int(parts[0], 16), parts[2]))
    syms.sort()
    starts = [s for s, _ in syms]
    share: dict[str, float] = {}
    for line in report.splitlines():
        m = re.match(r"\s*([\d.]+)%\s+(\S+)\s+\[.\]\s+(\S+)", line)
        if not m:
            continue
        if "iree_dylib" in m.group(2) and m.group(3).startswith("0x"):
            i = bisect.bisect_right(starts, int(m.group(3), 16)) - 1
            key = syms[i][1] if i >= 0 else "?"
        else:
            key = "(runtime) " + m.group(2)
        share[key] = share.get(key, 0.0) + float(m.group(1))
    print(f"{a.workload} flags={a.flag}: {total_ms:.3f} ms per call (iree-benchmark-module, local-sync)")
    for name, pct in sorted(share.items(), key=lambda kv: -kv[1]):
        if pct < 0.2:
            continue
        ms = total_ms * pct / 100
        fl = flops_of(name)
        rate = f"{fl / ms / 1e6:6.1f} GFLOP/s" if fl else ""
        print(f"  {pct:5.1f}%  {ms:7.3f} ms  {rate:15s} {name}")


if __name__ == "__main__":
    main()
