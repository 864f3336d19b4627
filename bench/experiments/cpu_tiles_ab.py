"""The f32 mmt4d tile variants (braze.compiler.cpu_tiles) side by side with eager on this host, in
one process (bench/NOTES.md §48):

    [ROUNDS=7] python bench/experiments/cpu_tiles_ab.py transformer_encoder,bert_layer THREADS [VARIANT,...]

Each variant fixes the tiles that mode auto would choose by the CPU ("loops": braze's Intel choice,
8x48 register tiles where the weight panels come in threes, 8x32 in twos, else 16 rows); ROUNDS
interleaved rounds of 10 calls each, median ms, and the error against eager (max abs / max abs: NaN shows as nan).
side_by_side is also cpu_data_tiling_ab.py's.
"""
import os
import statistics
import sys
import time

import torch

ROUNDS = int(os.environ.get("ROUNDS", 7))
"""Interleaved rounds of 10 calls (env ROUNDS; §57's runs used 15, 21 and 31)."""


def side_by_side(name: str, model, inputs, mods: dict, dispatches: bool = False) -> None:
    """Eager and each compiled module of `mods` in ROUNDS interleaved rounds of 10 calls; prints each
    one's median ms, its speed against eager and its error (and dispatch count)."""
    with torch.no_grad():
        ref = model(*inputs)
    for m in mods.values():
        m(*inputs)
    fns = {"eager": lambda: model(*inputs), **{k: (lambda c=c: c(*inputs)) for k, c in mods.items()}}
    times = {k: [] for k in fns}
    with torch.no_grad():
        for _ in range(ROUNDS):
            for k, f in fns.items():
                t = time.perf_counter()
                for _ in range(10):
                    f()
                times[k].append((time.perf_counter() - t) / 10 * 1000)
    med = {k: statistics.median(v) for k, v in times.items()}
    for k in fns:
        err = "" if k == "eager" else f"err {float((mods[k](*inputs) - ref).abs().max() / ref.abs().max()):.1e}"
        if k != "eager" and dispatches:
            err += f" {mods[k].report.dispatch_count} dispatches"
        print(f"{name:20s} {k:10s} {med[k]:8.3f} ms {med['eager']/med[k]:5.2f}x eager {err}", flush=True)


if __name__ == "__main__":
    torch.set_num_threads(int(sys.argv[2]))
    import braze
    braze.set_cpu_threads(int(sys.argv[2]))
    from braze.compiler import cpu_tiles as ct
    from braze.testing.zoo import WORKLOADS
    variants = {"iree": None, "microkernel-128x16": ct.MICROKERNEL, "loops": ct.LOOPS,
                "loops-16x32": ct.LOOPS_16X32,
                "loops-8x32": ct.Mmt4dTiles(vector_n=2, vector_m=8, max_n1=2),
                "loops-8x48": ct.Mmt4dTiles(vector_n=3, vector_m=8, max_n1=3),
                "loops-8x48-64rows": ct.Mmt4dTiles(vector_n=3, vector_m=8, max_m1=4, max_n1=3)}
    if len(sys.argv) > 3:
        variants = {k: v for k, v in variants.items() if k in sys.argv[3].split(",")}
    for name in sys.argv[1].split(","):
        model, inputs = WORKLOADS[name].build("cpu")
        mods = {}
        for v, t in variants.items():
            ct.tiles_for_cpu = lambda cpu, t=t: t
            mods[v] = braze.compile(model, *inputs, device="cpu", cache=False)  # tiles_for_cpu patched above
        side_by_side(name, model, inputs, mods)
