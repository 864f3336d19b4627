"""Kernel times from `ncu --csv --metrics gpu__time_duration.sum` output: median µs per kernel
name (shortened), in the order first seen, so a braze kernel reads next to torch's.

    python bench/experiments/ncu_table.py ncu.csv
"""

import csv
import statistics
import sys
from collections import OrderedDict


def main(path: str) -> None:
    times: OrderedDict = OrderedDict()
    with open(path, newline="") as f:
        lines = [line for line in f if line.startswith('"')]
    for row in csv.DictReader(lines):
        if row.get("Metric Name") != "gpu__time_duration.sum":
            continue
        unit, value = row.get("Metric Unit", "ns"), float(row["Metric Value"].replace(",", ""))
        us = value / 1000 if unit == "nsecond" or unit == "ns" else value * (1000 if unit.startswith("m") else 1)
        name = row["Kernel Name"].split("(")[0][:70]
        times.setdefault(name, []).append(us)
    for name, values in times.items():
        print(f"{statistics.median(values):10.2f} us  x{len(values):<3d} {name}")


if __name__ == "__main__":
    main(sys.argv[1])
