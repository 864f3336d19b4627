"""Kernel times per case from `ncu --csv --metrics gpu__time_duration.sum` output of
`bench/kernels_check.py profile` (per case: braze's module, then eager, each 1 + 3 calls):
a case starts where a braze_* kernel follows others; its braze kernels and the rest (torch's)
are summed per call (over the 4 calls).

    python bench/experiments/ncu_table.py ncu.csv [case names in profile order, comma-separated]
"""

import sys

from braze.tools.timing import ncu_kernels


def launches(path: str) -> list[tuple[str, float]]:
    """(kernel name without its argument list, µs) of each launch ncu timed, in launch order."""
    return [(name.split("(")[0], us) for name, us in ncu_kernels(path)]


def segments(path: str):
    current, out = None, []
    for name, us in launches(path):
        ours = name.startswith("braze_")
        if ours and (current is None or current["torch"]):
            current = {"braze": {}, "torch": {}}
            out.append(current)
        if current is None:
            continue
        side = current["braze" if ours else "torch"]
        side[name] = side.get(name, 0.0) + us / 4
    return out


def main(path: str, names: list[str]) -> None:
    for i, seg in enumerate(segments(path)):
        ours, theirs = sum(seg["braze"].values()), sum(seg["torch"].values())
        label = names[i] if i < len(names) else f"case {i}"
        kinds = "; ".join(f"{k[:60]} {v:.2f}" for k, v in seg["torch"].items())
        print(f"{label:32s} braze {ours:8.2f} us  torch {theirs:8.2f} us  torch/braze {theirs / ours:5.2f}  ({kinds})")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2].split(",") if len(sys.argv) > 2 else [])
