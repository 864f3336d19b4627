"""Compile times of the bench's models (issue 18's goals), each in a fresh process:

    python bench/experiments/compile_times.py [--workloads a,b] [--out FILE]

per workload (CPU sizes, float32): braze's cold compile for the CPU (empty compile cache), its
warm compile in a new process (a cache hit), a warm compile in a process that has compiled
before ('warm same': torch.export's first-call cost paid), its cold cross-compile for CUDA sm_90, and
torch.compile's cold compile for the CPU (torch.compile() and its first call, minus an eager
call, its caches in a fresh folder; before 2026-12-02 the torch.compile() call itself, which
imports Dynamo, was left out). Prints a table and the ratios warm/cold, braze/torch.compile and CUDA/CPU; a hit found
by the quick key (braze.compiler.cache.quick_key, no export) shows as 'quick'.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import textwrap

CHILD = textwrap.dedent("""
    import json, sys, time, warnings
    warnings.filterwarnings("ignore")
    import torch
    from braze.testing.zoo import WORKLOADS
    kind, name = sys.argv[1], sys.argv[2]
    model, args = WORKLOADS[name].build("cpu")
    t0 = time.perf_counter()
    if kind == "torch.compile":
        with torch.no_grad():
            t0 = time.perf_counter(); model(*args); eager = time.perf_counter() - t0
            t0 = time.perf_counter()  # torch.compile() itself imports Dynamo (~1-2 s), as braze's export does
            fast = torch.compile(model)
            fast(*args); seconds = time.perf_counter() - t0 - eager
        hit = None
    else:
        import braze
        device = "cuda" if kind == "cuda" else "cpu"
        target = "sm_90" if kind == "cuda" else None
        m = braze.compile(model, *args, device=device, target=target)
        seconds = time.perf_counter() - t0
        c = m.report.extra.get("cache", {})
        hit = "quick" if c.get("quick") else c.get("hit")
        if kind == "cpu-again":  # a second compile in the same process: a hit without torch's warm-up
            model, args = WORKLOADS[name].build("cpu")
            t0 = time.perf_counter()
            m = braze.compile(model, *args)
            c = m.report.extra.get("cache", {})
            seconds, hit = time.perf_counter() - t0, "quick" if c.get("quick") else c.get("hit")
    print(json.dumps({"seconds": seconds, "hit": hit}))
""")


def _run(kind: str, name: str, env: dict) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, kind, name], env=env, capture_output=True, text=True)
    if out.returncode:
        return {"seconds": None, "error": out.stderr.strip().splitlines()[-1] if out.stderr.strip() else "?"}
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    from braze.testing.zoo import CPU_DEFAULT

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--workloads", default=",".join(n for n in CPU_DEFAULT if not n.endswith("_bf16")))
    p.add_argument("--out", default="")
    args = p.parse_args(argv)
    rows = []
    print(f"{'workload':22s} {'braze cpu cold':>14s} {'warm':>7s} {'warm/cold':>9s} {'warm same':>9s} "
          f"{'/cold':>8s} {'torch.compile':>13s} {'braze/tc':>8s} {'cuda cold':>9s} {'cuda/cpu':>8s}", flush=True)
    for name in args.workloads.split(","):
        with tempfile.TemporaryDirectory() as braze_cache, tempfile.TemporaryDirectory() as inductor_cache:
            env = dict(os.environ, BRAZE_CACHE_DIR=braze_cache, BRAZE_COMPILE_CACHE="1",
                       TORCHINDUCTOR_CACHE_DIR=inductor_cache, TRITON_CACHE_DIR=inductor_cache)
            cold = _run("cpu", name, env)
            warm = _run("cpu", name, env)
            again = _run("cpu-again", name, env)
            cuda = _run("cuda", name, env)
            tc = _run("torch.compile", name, env)
        row = {"workload": name, "cold": cold, "warm": warm, "warm_in_process": again, "cuda": cuda,
               "torch_compile": tc}
        rows.append(row)
        c, w, g, t, a = (r.get("seconds") for r in (cold, warm, cuda, tc, again))
        ratio = lambda a, b: f"{a / b:.2f}" if a and b else "—"  # noqa: E731
        show = lambda v: f"{v:.2f}" if v is not None else "—"  # noqa: E731
        print(f"{name:22s} {show(c):>14s} {show(w):>7s} {ratio(w, c):>9s} {show(a):>9s} {ratio(a, c):>8s} "
              f"{show(t):>13s} {ratio(c, t):>8s} {show(g):>9s} {ratio(g, c):>8s}  "
              f"(hits: {warm.get('hit')}, {again.get('hit')})", flush=True)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
