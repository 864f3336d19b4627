"""braze's decoder (braze.compile_decoder) on CUDA: tokens against transformers' eager generate()
on the GPU, and time per decode step against eager's, for small Llama-class models.

    python bench/experiments/cuda_decoder_check.py build DIR    # here: DIR/<name>.decoder folders
    python bench/experiments/cuda_decoder_check.py run DIR      # GPU host (transformers there)

Each model is a random-weight LlamaForCausalLM (GQA 8/2 heads) whose weight matrices take 16
distinct values (braze.testing.zoo._quantize_weights: the artifacts cross a 64 MiB transfer);
`run` rebuilds the same model from the same seeds on the GPU host, so eager runs the very
weights braze compiled.
"""

import sys
import time

import torch

MODELS = {  # name: (dtype, hidden, layers, vocab, prompt, new tokens, cache)
    "llama-f32": ("float32", 256, 4, 4096, 16, 32, 64),
    "llama-bf16": ("bfloat16", 256, 4, 4096, 16, 32, 64),
}


def _model(name: str):
    import transformers
    from braze.testing.zoo import _quantize_weights

    dtype, hidden, layers, vocab, *_ = MODELS[name]
    config = transformers.LlamaConfig(vocab_size=vocab, hidden_size=hidden, intermediate_size=hidden * 11 // 4,
                                      num_hidden_layers=layers, num_attention_heads=8, num_key_value_heads=2,
                                      max_position_embeddings=512)
    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(config).eval()
    _quantize_weights(model)
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() == 1:
                p.add_(torch.randn(p.shape, generator=torch.Generator().manual_seed(3)) * 0.2)
    return model.to(getattr(torch, dtype))


def _prompt(name: str):
    vocab, prompt = MODELS[name][3], MODELS[name][4]
    return torch.randint(0, vocab, (1, prompt), generator=torch.Generator().manual_seed(1))


def build(out: str) -> None:
    import braze

    for name, (_, _, _, _, prompt, _, cache) in MODELS.items():
        dec = braze.compile_decoder(_model(name), batch_size=1, max_cache_len=cache, device="cuda", target="sm_90",
                                    cache=False)
        dec.program(prompt)
        dec.save(f"{out}/{name}.decoder", overwrite=True)
        print(name, "programs", sorted(dec.programs), dec.programs[1].report.launch_plan, flush=True)


def run(out: str) -> None:
    import braze

    print(f"{'model':12s} {'tokens':>7s} {'first diff':>10s} {'braze ms/step':>13s} {'eager ms/step':>13s}")
    for name, (dtype, _, _, _, prompt, new, _) in MODELS.items():
        model = _model(name).cuda()
        ids = _prompt(name).cuda()
        with torch.no_grad():
            want = model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=new, do_sample=False,
                                  pad_token_id=0, eos_token_id=None)
        firsts = []
        for runtime in ("iree", None):  # iree.runtime, then braze's launcher (kept for the timing)
            dec = braze.load_decoder(f"{out}/{name}.decoder", device="cuda", runtime=runtime)
            got = dec.generate(ids, max_new_tokens=new).to(want.device)
            differ = (got[0] != want[0]).nonzero()
            firsts.append(int(differ[0]) - prompt if len(differ) else new)
        first = min(firsts)
        print(f"{name}: first differing new token, iree.runtime {firsts[0]}, launcher {firsts[1]} (of {new}); "
              f"launcher used: {dec.programs[1].runtime_for(ids[:, :1], torch.tensor([0], device='cuda'), *dec.caches)}")
        # one decode step each, after a prefill, timed over 50 steps
        dec.prefill(ids)
        token = got[:, prompt]
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(50):
            dec.position = prompt  # the same slot each time: the cache state stays one step long
            dec.decode(token)
        torch.cuda.synchronize()
        braze_ms = (time.perf_counter() - t0) / 50 * 1e3
        with torch.no_grad():
            cache = None
            out_ = model(ids, use_cache=True)
            cache = out_.past_key_values
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            for _ in range(50):
                model(token[:, None], past_key_values=cache, use_cache=True)
                cache.crop(prompt)
            torch.cuda.synchronize()
            eager_ms = (time.perf_counter() - t0) / 50 * 1e3
        print(f"{name:12s} {'equal' if first == new else 'differ':>7s} {first:10d} {braze_ms:13.3f} {eager_ms:13.3f}",
              flush=True)


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("build", "run"):
        sys.exit(__doc__)
    build(sys.argv[2]) if sys.argv[1] == "build" else run(sys.argv[2])
