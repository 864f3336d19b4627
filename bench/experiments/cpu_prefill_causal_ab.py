"""The decoder's prefill on the CPU with its attention causal over the prompt (DecoderStep's
default since §58) against the mask over the whole cache it had before, interleaved in one run.

    python bench/experiments/cpu_prefill_causal_ab.py [MODEL] [PROMPT] [CACHE] [ROUNDS]

MODEL is one of braze.testing.generation.MODELS (default qwen2-30m), PROMPT the prompt's tokens
(default 256), CACHE the cache's length (default PROMPT + 128). Prints the median per-call ms of
each prefill over ROUNDS interleaved rounds (default 15; braze.tools.timing.interleaved_ms) and
the logits' agreement.
"""

import sys
import time

import torch

import braze
from braze.compiler.decoder import DecoderStep
from braze.testing import generation as gen
from braze.tools.timing import interleaved_ms


def main() -> None:
    model = sys.argv[1] if len(sys.argv) > 1 else "qwen2-30m"
    prompt = int(sys.argv[2]) if len(sys.argv) > 2 else 256
    cache = int(sys.argv[3]) if len(sys.argv) > 3 else prompt + 128
    rounds = int(sys.argv[4]) if len(sys.argv) > 4 else 15
    lm = gen.model_for(model)
    ids = gen.prompt_ids(lm.config.vocab_size, 1, prompt)
    causal_mask = DecoderStep._prefill_mask
    decoders = {}
    for name in ("causal", "mask"):
        if name == "mask":  # the step before §58: every call attends over the cache through the mask
            DecoderStep._prefill_mask = lambda self, positions, length, dtype: self._mask(positions, length, dtype)
        t0 = time.perf_counter()
        decoders[name] = braze.compile_decoder(lm, batch_size=1, max_cache_len=cache, cache=False)
        decoders[name].prefill(ids)  # the prefill program compiles on first use
        print(f"{name}: compiled in {time.perf_counter() - t0:.1f} s", flush=True)
        DecoderStep._prefill_mask = causal_mask
    ms = interleaved_ms({name: (lambda dec=dec: dec.prefill(ids)) for name, dec in decoders.items()}, rounds=rounds)
    a, b = decoders["causal"].prefill(ids), decoders["mask"].prefill(ids)
    print(f"{model}, prompt {prompt}, cache {cache}, {torch.get_num_threads()} threads, {rounds} rounds:")
    for name, t in ms.items():
        print(f"  {name:7s} {t:9.2f} ms (median)")
    ratio = ms["mask"] / ms["causal"]
    print(f"  causal is {ratio:.2f}x the mask's speed; logits max |diff| {float((a - b).abs().max()):.3g}, "
          f"same argmax: {bool((a.argmax(-1) == b.argmax(-1)).all())}")


if __name__ == "__main__":
    main()
