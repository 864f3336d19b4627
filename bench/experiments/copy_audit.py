"""Which IREE copy kernels remain on CUDA (issue 37: "no slow_memcpy in any bench or zoo model"),
read off each model's launch plan: no GPU needed, the plan is known at compile time.

    python bench/experiments/copy_audit.py [--workloads a,b] [--cases]

For each bench workload at its CUDA size (and with --cases each zoo case), cross-compiled for
sm_90 as `braze.compile(..., device="cuda", target="sm_90")` does: the launches per call, IREE's
`slow_memcpy` dispatches, its transposes (by kernel name), and the plan's own copies and fills
(hal queue commands, with their bytes). Kernel times need the GPU (ncu); this says where the
copies are.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter

def audit(name: str, model, args, kwargs=None) -> dict:
    import braze

    compiled = braze.compile(model, *args, example_kwargs=kwargs or None, device="cuda", target="sm_90")
    plan = compiled.plan
    row = {"name": name, "launches": 0, "kinds": Counter(), "bytes": Counter()}
    if plan is None:
        row["error"] = "no launch plan"
        return row
    for step in plan.steps:
        row["launches"] += 1
        if step.op == "dispatch":
            kname = plan.executables[step.executable].kernels[step.kernel].name
            kind = ("slow_memcpy" if "slow_memcpy" in kname else "transpose" if "transpose" in kname else None)
            if kind:
                row["kinds"][kind] += 1
        else:
            row["kinds"][f"plan {step.op}"] += 1
            row["bytes"][f"plan {step.op}"] += step.length
    return row


def _print(rows: list[dict]) -> None:
    kinds = ["slow_memcpy", "transpose", "plan copy", "plan fill"]
    print("| model | launches | " + " | ".join(kinds) + " |")
    print("|---|---:|" + "---:|" * len(kinds))
    for r in rows:
        if "error" in r:
            print(f"| {r['name']} | {r['error']} |")
            continue
        cells = [f"{r['kinds'][k]} ({r['bytes'][k] / 1e6:.2f} MB)" if k.startswith("plan") and r["kinds"][k]
                 else str(r["kinds"][k]) for k in kinds]
        print(f"| {r['name']} | {r['launches']} | " + " | ".join(cells) + " |", flush=True)


def main(argv=None) -> int:
    from braze.testing import zoo

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--workloads", help="bench workloads (default: every one)")
    p.add_argument("--cases", action="store_true", help="the zoo's cases too")
    a = p.parse_args(argv)
    names = a.workloads.split(",") if a.workloads else list(zoo.WORKLOADS)
    rows = []
    for name in names:
        try:
            model, args = zoo.workload(name).build("cuda")
            rows.append(audit(name, model, args))
        except Exception as e:  # report and go on: one model's failure says nothing of the others
            rows.append({"name": name, "error": f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"})
        print(f"  {name} done", file=sys.stderr, flush=True)
    if a.cases:
        for case in zoo.CASES:
            try:
                model, args, kwargs = case.build()
                rows.append(audit(f"zoo: {case.name}", model, list(args), kwargs))
            except Exception as e:
                rows.append({"name": f"zoo: {case.name}", "error": f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"})
    _print(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
