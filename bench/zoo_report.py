"""Fusion's effect on every zoo model: linalg op counts and IREE dispatches, fusion on and off.

    python bench/zoo_report.py [--device cpu] [--target T]

Prints one row per model of braze.testing.zoo.CASES: linalg ops in the
imported module, after braze's pipeline, IREE dispatches with fusion off and on, compile time.
"""

from __future__ import annotations

import argparse
import sys
import time


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python bench/zoo_report.py", description=__doc__.splitlines()[0])
    p.add_argument("--device", default="cpu")
    p.add_argument("--target", default=None)
    args = p.parse_args(argv)

    import braze
    from braze.testing.zoo import CASES

    cases = list(CASES)
    header = ("model", "linalg before", "linalg after", "dispatches off", "dispatches on", "groups", "compile s (on)")
    print(" | ".join(header))
    print(" | ".join("---" for _ in header))
    for case in cases:
        model, a, k = case.build()
        off = braze.compile(model, *a, example_kwargs=k, device=args.device, target=args.target, fusion=False).report
        t0 = time.perf_counter()
        on = braze.compile(model, *a, example_kwargs=k, device=args.device, target=args.target).report
        seconds = time.perf_counter() - t0
        print(" | ".join(str(x) for x in (case.name, on.linalg_ops_before, on.linalg_ops_after, off.dispatch_count,
                                          on.dispatch_count, len(on.groups), f"{seconds:.2f}")), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
