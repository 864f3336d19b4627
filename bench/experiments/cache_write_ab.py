"""The decode step's cache writes with and without `+ 0.0` (DecoderStep._attend), on the CPU:
both compiled from the same Qwen2-class model, timed alternately in one process (bench/NOTES.md §52).

    python bench/experiments/cache_write_ab.py [MODEL]     # default qwen2-30m-bf16
"""

import os
import statistics
import sys
import time

import torch
from torch import nn

sys.path.insert(0, os.path.dirname(__file__))
from generate_tokens import config_for  # noqa: E402


def _plain(self, q, k, v, keys, values, positions, mask, scale):
    """_attend as it was before the `+ 0.0`."""
    keys.index_copy_(2, positions, k)
    values.index_copy_(2, positions, v)
    return nn.functional.scaled_dot_product_attention(q, keys, values, attn_mask=mask, scale=scale,
                                                      enable_gqa=self.heads != self.kv_heads)


def main() -> None:
    import transformers

    import braze
    from braze.compiler import decoder

    config, dtype = config_for(sys.argv[1] if len(sys.argv) > 1 else "qwen2-30m-bf16")
    torch.manual_seed(0)
    model = transformers.Qwen2ForCausalLM(config).eval().to(dtype)
    decoders = {}
    for name, attend in (("plus0", decoder.DecoderStep._attend), ("plain", _plain)):
        decoder.DecoderStep._attend = attend
        decoders[name] = braze.compile_decoder(model, batch_size=1, max_cache_len=256, cache=False)
    ids = torch.randint(0, config.vocab_size, (1, 128), generator=torch.Generator().manual_seed(1))
    tokens = {n: d.generate(ids, max_new_tokens=16, eos_token_id=None) for n, d in decoders.items()}
    for d in decoders.values():
        d.prefill(ids)
    times = {n: [] for n in decoders}
    for _ in range(7):
        for n, d in decoders.items():
            t0 = time.perf_counter()
            for _ in range(50):
                d.position = 128
                d.decode(torch.tensor([[5]]))
            times[n].append((time.perf_counter() - t0) / 50 * 1e3)
    print("ms a decode step (median of 7 rounds of 50):",
          {n: round(statistics.median(t), 3) for n, t in times.items()},
          "; tokens equal:", torch.equal(tokens["plus0"], tokens["plain"]))


if __name__ == "__main__":
    main()
