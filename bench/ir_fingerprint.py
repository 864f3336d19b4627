"""Fingerprints of what braze hands IREE, for every model of the catalogue on every device:
proof that a refactor changed no behaviour (same fingerprints before and after).

    python bench/ir_fingerprint.py OUT.json [--devices cpu,cuda,vulkan]     (needs the compiler)
    python bench/ir_fingerprint.py --compare BEFORE.json AFTER.json

For each zoo case (test sizes) and bench workload (CPU and GPU sizes) the model is lowered as
braze.compile would (`braze.compiler.lower`), and the module IREE would compile (after the back
end's hooks: kernel configurations, braze's ABI, the device target) is hashed with the flags,
without running IREE's compiler (about a minute for all 81).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
import warnings

TARGETS = {"cpu": None, "cuda": "sm_90", "vulkan": "ampere"}


def items():
    from braze.testing.zoo import CASES, WORKLOADS

    for case in CASES:
        yield f"zoo:{case.name}", case.build, ("cpu", "cuda", "vulkan")
    for name, w in WORKLOADS.items():
        if "test" in w.tags:
            continue
        for size in ("cpu", "cuda"):
            def build(w=w, size=size):
                model, args = w.build(size)
                return model, tuple(args), {}
            yield f"bench:{name}:{size}", build, (("cpu",) if size == "cpu" else ("cuda", "vulkan"))


def fingerprint(devices: list[str]) -> dict:
    from braze.compiler.stages import iree_input
    from braze.compiler import lower

    out = {}
    for name, build, sizes in items():
        for device in devices:
            if device not in sizes:
                continue
            model, args, kwargs = build()
            t0 = time.perf_counter()
            try:
                lowered = lower(model, *args, example_kwargs=kwargs, device=device, target=TARGETS[device])
                text, flags = iree_input(lowered)  # what braze compile --emit iree-input prints
                digest = hashlib.sha256((text + "\n".join(flags)).encode()).hexdigest()[:16]
                result = f"{digest} groups={len(lowered.report.groups)} configs={len(lowered.report.kernel_configs)}"
            except Exception as e:  # a model that fails is a fingerprint too
                result = f"ERROR {type(e).__name__}: {str(e).splitlines()[0][:100]}"
            out[f"{name}@{device}"] = result
            print(f"{name}@{device}: {result} ({time.perf_counter() - t0:.1f} s)", flush=True)
    return out


def compare(before: dict, after: dict) -> int:
    changed = [k for k in before if k in after and before[k] != after[k]]
    for k in changed:
        print(f"changed  {k}: {before[k]} -> {after[k]}")
    for k in sorted(set(before) ^ set(after)):
        print(f"{'only before' if k in before else 'only after'}  {k}")
    same = sum(1 for k in before if after.get(k) == before[k])
    print(f"{same} identical, {len(changed)} changed, {len(set(before) ^ set(after))} in one run only")
    return 1 if changed else 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("out", nargs="?")
    p.add_argument("--devices", default="cpu,cuda,vulkan")
    p.add_argument("--compare", nargs=2, metavar=("BEFORE", "AFTER"))
    args = p.parse_args(argv)
    if args.compare:
        a, b = (json.load(open(path)) for path in args.compare)
        return compare(a, b)
    if not args.out:
        p.error("give OUT.json (or --compare BEFORE AFTER)")
    warnings.simplefilter("ignore")
    result = fingerprint(args.devices.split(","))
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1, sort_keys=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
