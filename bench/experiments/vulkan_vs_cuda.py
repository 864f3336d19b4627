"""braze on Vulkan against braze on CUDA on the same GPU (issue 19's goal: within 2x), from two
`braze bench run --json` results of one GPU session:

    python bench/experiments/vulkan_vs_cuda.py VULKAN.json CUDA.json
"""

import json
import math
import sys


def medians(path: str) -> tuple[dict, dict]:
    data = json.load(open(path))
    braze, eager = {}, {}
    for w in data["workloads"]:
        c = w["contenders"]
        if c.get("braze", {}).get("status") == "ok":
            braze[w["name"]] = c["braze"]["latency_ms"]["median"]
        if c.get("eager", {}).get("status") == "ok":
            eager[w["name"]] = c["eager"]["latency_ms"]["median"]
    return braze, eager


def main(vulkan: str, cuda: str) -> int:
    vk, vk_eager = medians(vulkan)
    cu, cu_eager = medians(cuda)
    names = [n for n in cu if n in vk]
    print("| workload | eager (CUDA) | braze CUDA | braze Vulkan | Vulkan / CUDA |")
    print("|---|---:|---:|---:|---:|")
    ratios = []
    for n in names:
        r = vk[n] / cu[n]
        ratios.append(r)
        print(f"| {n} | {cu_eager.get(n, float('nan')):.3f} | {cu[n]:.3f} | {vk[n]:.3f} | {r:.2f}x |")
    missing = sorted(set(cu) - set(vk))
    if ratios:
        print(f"\ngeomean Vulkan / CUDA {math.exp(sum(map(math.log, ratios)) / len(ratios)):.2f}x over {len(ratios)}; "
              f"within 2x: {sum(r <= 2 for r in ratios)} of {len(ratios)}")
    if missing:
        print("no Vulkan result:", ", ".join(missing))
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    sys.exit(main(*sys.argv[1:]))
