"""bf16 drift on the CPU, several prompts (bench/NOTES.md §55): for each prompt, eager bf16's and
braze's first new greedy token differing from eager float32 on the same weights, and teacher
forcing (float32's tokens fed a step at a time: argmax misses, mean relative logit error), as
`braze bench`'s generation rows measure them (braze.tools.bench_generate).

    python bench/experiments/cpu_generation_drift.py [MODEL] [PROMPTS] [NEW]   (default qwen2-30m-bf16 4 48)
"""
import copy
import sys
import time

import torch

import braze
from braze.testing import generation as gen
from braze.tools.bench_generate import _greedy, first_difference, teacher_forced

model = sys.argv[1] if len(sys.argv) > 1 else "qwen2-30m-bf16"
prompts = int(sys.argv[2]) if len(sys.argv) > 2 else 4
new = int(sys.argv[3]) if len(sys.argv) > 3 else 48
plen = 32
lm = gen.model_for(model)
wide = copy.deepcopy(lm).float()
t0 = time.time()
dec = braze.compile_decoder(lm, batch_size=1, max_cache_len=plen + new + 1, device="cpu", cache=False)
dec.program(plen)
print("compiled", time.time() - t0, flush=True)

with torch.no_grad():
    for s in range(prompts):
        ids = gen.prompt_ids(lm.config.vocab_size, 1, plen, seed=s + 1)
        ref = wide.generate(ids, **_greedy(ids, new))
        e16 = lm.generate(ids, **_greedy(ids, new))
        b16 = dec.generate(ids, max_new_tokens=new)
        f = teacher_forced(lm, wide, ref, plen, dec)
        print(f"prompt {s}: first diff eager {first_difference(e16, ref, plen)} braze {first_difference(b16, ref, plen)}; "
              f"teacher-forced argmax misses eager {f['eager']['misses']} braze {f['braze']['misses']} of "
              f"{f['eager']['steps']}; mean rel max logit err eager {f['eager']['logit_error']:.4f} "
              f"braze {f['braze']['logit_error']:.4f}", flush=True)
