"""Per-layer table: each braze convolution kernel beside cuDNN's channels-last convolution kernel
of the same layer, from a `variants.py table` listing made with EAGER_KERNELS=1 (bench/NOTES.md §49).

    python bench/experiments/conv_layer_table.py LISTING WORKLOAD VARIANT [PIPELINE]

LISTING: the `table` output (sections '-- WORKLOAD eager-channels-last', '-- WORKLOAD VARIANT');
the layers are paired in execution order (both run the network's convolutions, and its classifier
GEMM, in the model's order). The layer names come from compiling WORKLOAD here with PIPELINE
(default: channels-last on), as the variant was built.
"""

import re
import sys

CONV = re.compile(r"fprop|xmma|nvjet|cutlass|implicit_gemm", re.I)


def sections(path: str) -> dict[str, list[tuple[float, str]]]:
    found, current = {}, None
    for line in open(path):
        if line.startswith("-- "):
            current = line[3:].strip()
            found[current] = []
            continue
        m = re.match(r"\s*([\d.]+) us  (.*)", line)
        if m and current:
            found[current].append((float(m.group(1)), m.group(2)))
    return found


def main(path: str, workload_name: str, variant: str, pipeline: str) -> None:
    import braze
    from braze.testing.zoo import workload

    found = sections(path)
    cudnn = [(t, n) for t, n in found[f"{workload_name} eager-channels-last"] if CONV.search(n)]
    ours = [(t, n) for t, n in found[f"{workload_name} {variant}"] if n.startswith("braze_gemm")]
    model, args = workload(workload_name).build("cuda")
    names = [k["kernel"] for k in braze.compile(model, *args, device="cuda", target="sm_90",
                                                 pipeline=pipeline).report.kernels]
    print(f"{'#':>2} {'layer (braze kernel: conv + BN/ReLU/residual epilogue)':60s} {'cuDNN conv us':>13s} "
          f"{'braze us':>9s} {'cuDNN/braze':>11s}  cuDNN kernel")
    total = [0.0, 0.0]
    for i, ((tc, nc), (tb, _)) in enumerate(zip(cudnn, ours)):
        layer = re.sub(r" \(implicit GEMM.*| bf16\*bf16.*|, bf16->bf16.*", "", names[i])
        total[0] += tc
        total[1] += tb
        print(f"{i:2d} {layer[:60]:60s} {tc:13.1f} {tb:9.1f} {tc / tb:10.2f}x  {nc[:60]}")
    print(f"   {'sum':60s} {total[0]:13.1f} {total[1]:9.1f} {total[0] / total[1]:10.2f}x")
    print("layers at >= 90% of cuDNN's conv kernel:",
          sum(1 for (tc, _), (tb, _) in zip(cudnn, ours) if tb <= tc / 0.9), "of", len(ours))


if __name__ == "__main__":
    if len(sys.argv) not in (4, 5):
        sys.exit(__doc__)
    main(*sys.argv[1:4], sys.argv[4] if len(sys.argv) == 5 else "fusion-cuda-pipeline{target=sm_90 channels-last=auto}")
