"""Memory a decoder's compile holds, by point of the compile (bench/NOTES.md §52).

    python bench/experiments/compile_memory.py [MODEL] [--prefill N]

Builds the random-weight Qwen2-class MODEL of cuda_generate.py (default qwen2-0.5b) and compiles
its decode step for CUDA (sm_90, no GPU needed), then with --prefill N its N-token prefill beside
it, printing the process's anonymous resident memory (RssAnon: what the kernel cannot drop; the
pages of files braze maps are page cache) at each point, and its peak since the previous point
(sampled every 50 ms).
"""

import argparse
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(__file__))


def _anon_mb() -> int:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) // 1024 for line in f if line.startswith("RssAnon"))


class _Peak:
    def __init__(self):
        self.value = 0
        threading.Thread(target=self._sample, daemon=True).start()

    def _sample(self):
        while True:
            self.value = max(self.value, _anon_mb())
            time.sleep(0.05)

    def mark(self, what: str) -> None:
        now = _anon_mb()
        print(f"{what:48s} anon {now:6d} MB   peak since the last point {max(self.value, now):6d} MB", flush=True)
        self.value = 0


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("model", nargs="?", default="qwen2-0.5b")
    p.add_argument("--prefill", type=int, default=0, metavar="N")
    a = p.parse_args()
    import braze
    import braze.compiler._iree_compiler as iree_compiler
    from braze.compiler import backend
    from cuda_generate import model_for

    peak = _Peak()
    compile_module = backend.compile_module

    def watched(source, *args, **kwargs):  # the points inside IREE's compile
        peak.mark("handed to IREE's compiler")
        at_hal = kwargs.get("at_hal")
        if at_hal is not None:
            def plan(module_op):
                peak.mark("IREE at its hal phase")
                result = at_hal(module_op)
                peak.mark("launch plan read")
                return result
            kwargs["at_hal"] = plan
        result = compile_module(source, *args, **kwargs)
        peak.mark("IREE's program back")
        return result

    backend.compile_module = iree_compiler.compile_module = watched
    peak.mark("start")
    model = model_for(a.model)
    peak.mark("model built")
    dec = braze.compile_decoder(model, batch_size=1, max_cache_len=256, device="cuda", target="sm_90", cache=False)
    peak.mark("decode step compiled")
    if a.prefill:
        dec.program(a.prefill)
        peak.mark(f"{a.prefill}-token prefill compiled")


if __name__ == "__main__":
    main()
