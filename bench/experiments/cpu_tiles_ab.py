"""The f32 mmt4d tile variants (braze.compiler.cpu_tiles) side by side with eager on this host, in
one process (bench/NOTES.md §48):

    python bench/experiments/cpu_tiles_ab.py transformer_encoder,bert_layer THREADS

Each variant fixes the tiles that mode auto would choose by the CPU; 7 interleaved rounds of 10
calls each, median ms, and the error against eager (max abs / max abs: NaN shows as nan).
side_by_side is also cpu_data_tiling_ab.py's.
"""
import statistics
import sys
import time

import torch


def side_by_side(name: str, model, inputs, mods: dict, dispatches: bool = False) -> None:
    """Eager and each compiled module of `mods` in 7 interleaved rounds of 10 calls; prints each
    one's median ms, its speed against eager and its error (and dispatch count)."""
    with torch.no_grad():
        ref = model(*inputs)
    for m in mods.values():
        m(*inputs)
    fns = {"eager": lambda: model(*inputs), **{k: (lambda c=c: c(*inputs)) for k, c in mods.items()}}
    times = {k: [] for k in fns}
    with torch.no_grad():
        for _ in range(7):
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
    variants = {"iree": None, "microkernel-128x16": ct.MICROKERNEL, "loops-128x32": ct.LOOPS,
                "loops16-128x16": ct.Mmt4dTiles(vector_n=1, max_n1=1), "microkernel-l2": ct.Mmt4dTiles(codegen=False)}
    for name in sys.argv[1].split(","):
        model, inputs = WORKLOADS[name].build("cpu")
        mods = {}
        for v, t in variants.items():
            ct.tiles_for_cpu = lambda cpu, t=t: t
            mods[v] = braze.compile(model, *inputs, device="cpu", cache=False)  # tiles_for_cpu patched above
        side_by_side(name, model, inputs, mods)
