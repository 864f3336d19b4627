"""Where a prefill's time goes, braze beside torch.compile (issue 40's prefill goal), on the GPU
host: the decoders `braze bench build` wrote (bench/experiments/cuda-generate-bench.sh build),
their weights restored from the seed, then for each contender the median ms of the prompt's
forward (the last token's logits), the kernels one call launches, the GPU's busy time a call,
and the kernels taking most of it (torch.profiler, CUPTI: braze's launcher's kernels included).

    python bench/experiments/prefill_profile.py DIR [WORKLOAD,...] [--modes default,reduce-overhead]
"""

import argparse
import json
from pathlib import Path

import torch

from braze.testing import generation as gen
from braze.tools.timing import median_ms, profiled_kernels


def report(name: str, fn, top: int) -> dict:
    ms = median_ms(fn, reps=20, sync=True)
    kernels = profiled_kernels(fn)
    busy, count = sum(t for _, t in kernels.values()), sum(n for n, _ in kernels.values())
    print(f"\n{name}: {ms:.3f} ms a call; {count:.0f} kernels, GPU busy {busy:.3f} ms ({100 * busy / ms:.0f}%)")
    largest = sorted(kernels.items(), key=lambda kv: -kv[1][1])[:top]
    for kname, (n, t) in largest:
        print(f"  {t:8.4f} ms  {n:5.0f}x  {100 * t / busy:4.1f}%  {kname[:120]}")
    return {"ms": ms, "busy_ms": busy, "kernels": count, "top": [[k, n, t] for k, (n, t) in largest]}


def main() -> None:
    import braze

    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("dir")
    p.add_argument("workloads", nargs="?", default="generate_qwen2-0.5b_p512_b1")
    p.add_argument("--modes", default="default,reduce-overhead")
    p.add_argument("--top", type=int, default=25)
    p.add_argument("--json")
    a = p.parse_args()
    folder = Path(a.dir) / "generate"
    out = {}
    print(torch.cuda.get_device_name(), flush=True)
    for name in a.workloads.split(","):
        (w,) = gen.parse([name], "cuda")
        lm = gen.model_for(w.model)
        gen.restore(str(folder / f"{name}.decoder"), lm)
        lm = lm.to("cuda")
        dec = braze.load_decoder(folder / f"{name}.decoder", device="cuda")
        ids = gen.prompt_ids(lm.config.vocab_size, w.batch, w.prompt).to("cuda")
        rows = {}
        with torch.no_grad():
            rows["braze"] = report(f"{name} braze prefill", lambda: dec.prefill(ids), a.top)
            rows["eager"] = report(f"{name} eager", lambda: lm(ids, logits_to_keep=1, use_cache=False).logits, a.top)
            for mode in a.modes.split(","):
                torch._dynamo.reset()
                c = torch.compile(lm) if mode == "default" else torch.compile(lm, mode=mode)
                fn = lambda: c(ids, logits_to_keep=1, use_cache=False).logits  # noqa: E731
                fn()
                fn()
                rows[mode] = report(f"{name} torch.compile {mode}", fn, a.top)
        out[name] = rows
        dec = lm = c = None  # the model and programs freed before the next workload's
        torch.cuda.empty_cache()
    if a.json:
        Path(a.json).write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
