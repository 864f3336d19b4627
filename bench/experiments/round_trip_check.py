"""A float's 16-bit round trip right after a matmul, on the GPU host (bench/NOTES.md §37):
`(x @ w).to(bf16 or f16).float() - x @ w`, whose value is each element's rounding error. IREE
3.13 folds `extf(truncf(y))` to `y` once both sit in one dispatch, which its matmul-epilogue
fusion makes them: the result then comes back 0.

    python bench/experiments/round_trip_check.py DIR   (DIR: *.braze artifacts of that model
    for CUDA and m2-inputs.pt with x and w, built here; see cuda-bf16-round-trip.sh)
"""

import sys
from pathlib import Path

import torch

import braze

folder = Path(sys.argv[1])
inputs = torch.load(folder / "m2-inputs.pt")
x, w = inputs["x"], inputs["w"]
y = (x.double() @ w.double()).float()  # the float32 product, correctly rounded
for path in sorted(folder.glob("*.braze")):
    dtype = torch.float16 if "m2h" in path.name else torch.bfloat16
    ref = y.to(dtype).float() - y
    got = braze.load(path, device="cuda")(x.cuda(), w.cuda()).cpu()
    ulp = y.abs() * (2.0 ** -10 if dtype == torch.float16 else 2.0 ** -7)  # one 16-bit step, generous
    close = ((got - ref).abs() <= ulp).float().mean().item()
    print(f"{path.name:22s} max|result| {got.abs().max().item():.3e} (expected {ref.abs().max().item():.3e}); "
          f"{close * 100:.1f}% of elements within one {str(dtype)[6:]} step of the expected error")
