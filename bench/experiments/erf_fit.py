"""Fit the rational erf of fusion-expand-erf and measure it in float32 (bench/NOTES.md §31).

    python bench/experiments/erf_fit.py [CLAMP] [DEGREE_P] [DEGREE_Q]     (default 3.92 6 5)

erf(x) ~ x P(s) / Q(s), s = x^2, Q(0) = 1, on x in [0, CLAMP] (x is clamped there, and beyond
CLAMP float32 erf is 1). The fit: linearized least squares on the relative error,
x P(s) - erf(x) Q(s) = 0 weighted by 1 / (erf(x) Q_prev(s)) (Sanathanan-Koerner), iterated
until Q settles. Prints the coefficients and the float32 error of the expansion as the pass
writes it (Horner in fused multiply-adds, emulated in float64 then rounded), against float64
erf on 4M points of [-6, 6], beside torch's own float32 erf.
"""

import sys

import numpy as np
import torch

clamp, dp, dq = (float(sys.argv[1]) if len(sys.argv) > 1 else 3.92,
                 int(sys.argv[2]) if len(sys.argv) > 2 else 6, int(sys.argv[3]) if len(sys.argv) > 3 else 5)
x = np.linspace(1e-4, clamp, 40000)
e = torch.erf(torch.from_numpy(x)).numpy()
s = x * x
A = np.concatenate([x[:, None] * s[:, None] ** np.arange(dp + 1), -e[:, None] * s[:, None] ** np.arange(1, dq + 1)], 1)
q = np.ones_like(x)
for _ in range(30):
    w = 1.0 / (e * q)
    sol, *_ = np.linalg.lstsq(A * w[:, None], e * w, rcond=None)
    P, Q = sol[:dp + 1], np.concatenate([[1.0], sol[dp + 1:]])
    q = np.polyval(Q[::-1], s)
print("P =", tuple(float(c) for c in P))
print("Q =", tuple(float(c) for c in Q))
print(f"float64 max relative error on [0, {clamp}]: {np.max(np.abs(x * np.polyval(P[::-1], s) / q - e) / e):.3g}")

f32 = np.float32
grid = np.linspace(-6, 6, 4_000_001, dtype=f32)
ref = torch.erf(torch.from_numpy(grid).double()).numpy()


def fma(a, b, c):
    return (a.astype(np.float64) * b + c).astype(f32)  # exact product and sum, one rounding


xc = np.clip(grid, f32(-clamp), f32(clamp))
ss = xc * xc
p = np.full_like(ss, f32(P[-1]))
for c in reversed(P[:-1]):
    p = fma(p, ss, f32(c))
r = np.full_like(ss, f32(Q[-1]))
for c in reversed(Q[:-1]):
    r = fma(r, ss, f32(c))
y = np.clip((xc * p) / r, f32(-1), f32(1))
err = np.abs(y.astype(np.float64) - ref)
print(f"float32 expansion: max abs error {err.max():.3g} (at x = {grid[err.argmax()]:.4f}); "
      f"odd: {bool(np.all(y[::-1] == -y))}; |erf| <= 1: {bool(np.all(np.abs(y) <= 1))}")
tv = torch.erf(torch.from_numpy(grid)).double().numpy()
print(f"torch.erf (float32, this CPU): max abs error {np.abs(tv - ref).max():.3g}")
