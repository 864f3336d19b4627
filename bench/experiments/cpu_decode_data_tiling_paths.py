"""A CPU decode step (batch 1, position 16) under IREE's two data-tiling paths and without data
tiling, interleaved in one process, one thread (bench/NOTES.md §57): median ms of 15 rounds of
10 steps.

    python bench/experiments/cpu_decode_data_tiling_paths.py qwen2-30m,qwen2-30m-bf16,qwen2-100m
"""
import sys, time, statistics, torch, braze
from braze.compiler import backend
from braze.testing import generation as gen
torch.set_num_threads(1); braze.set_cpu_threads(1)
P = {"old": ("--iree-opt-data-tiling=true", "--iree-llvmcpu-enable-ukernels=all"),
     "new": ("--iree-global-opt-data-tiling=true", "--iree-llvmcpu-enable-ukernels=all"),
     "off": None}
for model in sys.argv[1].split(","):
    lm = gen.model_for(model)
    ids = gen.prompt_ids(lm.config.vocab_size, 1, 16)
    decs = {}
    for k, f in P.items():
        kw = {}
        if f is None:
            kw["pipeline"] = "fusion-cpu-pipeline{data-tiling=off}"
        else:
            backend.DATA_TILING_FLAGS = f
        d = braze.compile_decoder(lm, batch_size=1, max_cache_len=64, device="cpu", cache=False, **kw)
        d.prefill(ids)
        decs[k] = d
    tok = ids[:, -1:]
    times = {k: [] for k in decs}
    for _ in range(15):
        for k, d in decs.items():
            t = time.perf_counter()
            for _ in range(10):
                d.position = 16
                d.decode(tok)
            times[k].append((time.perf_counter() - t) / 10 * 1e3)
    print(model, {k: round(statistics.median(v), 3) for k, v in times.items()}, flush=True)
