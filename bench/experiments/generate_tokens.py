"""Text generation, tokens per second: braze's decoder beside transformers' generate() in eager
(its dynamic cache), with a static cache, and with a static cache and torch.compile of the
forward, on random-weight Qwen2-class models (issue 40).

    python bench/experiments/generate_tokens.py [MODEL,...] [--prompt 128] [--new 128] [--threads N]
        [--contenders eager,static,compiled,braze]

Each contender generates `new` greedy tokens after a `prompt`-token prompt, batch 1, three
times after one warm-up run (which includes compiles); the table gives the median tokens/s of
the whole generate() call (prefill included), the decode step's ms (braze: Decoder.decode timed
alone; the others: (generate - prefill) / (new - 1)), the weights a step reads (all but an
untied embedding table) over the copy bandwidth measured in the same run as a fraction of the
step's time (the roofline a decode step can reach), and whether the tokens equal eager's.
"""

import argparse
import statistics
import time

import torch

MODELS = {  # Qwen2-class: name -> (hidden, layers, heads, kv heads, intermediate, vocab, dtype)
    "qwen2-30m": (512, 8, 8, 2, 1408, 32000, "float32"),
    "qwen2-30m-bf16": (512, 8, 8, 2, 1408, 32000, "bfloat16"),
    "qwen2-100m": (768, 12, 12, 2, 2048, 32000, "float32"),
    "qwen2-0.5b": (896, 24, 14, 2, 4864, 151936, "bfloat16"),
    "qwen2-1.5b": (1536, 28, 12, 2, 8960, 151936, "bfloat16"),
}


def config_for(name: str):
    """The model's transformers.Qwen2Config and its torch dtype."""
    import transformers

    hidden, layers, heads, kv, inter, vocab, dtype = MODELS[name]
    config = transformers.Qwen2Config(vocab_size=vocab, hidden_size=hidden, num_hidden_layers=layers,
                                      num_attention_heads=heads, num_key_value_heads=kv, intermediate_size=inter,
                                      max_position_embeddings=4096, tie_word_embeddings=vocab > 100000)
    return config, getattr(torch, dtype)


def model_for(name: str):
    import transformers

    config, dtype = config_for(name)
    torch.manual_seed(0)
    return transformers.Qwen2ForCausalLM(config).eval().to(dtype)


def _median_s(fn, runs: int = 3) -> tuple[float, object]:
    out = fn()  # warm-up: compiles
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="?", default="qwen2-30m,qwen2-30m-bf16,qwen2-100m")
    parser.add_argument("--prompt", type=int, default=128)
    parser.add_argument("--new", type=int, default=128)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--contenders", default="eager,static,compiled,braze")
    args = parser.parse_args()

    import braze
    from braze.tools.bench import copy_bandwidth

    if args.threads:
        torch.set_num_threads(args.threads)
        braze.set_cpu_threads(args.threads)
    contenders = args.contenders.split(",")
    bandwidth = copy_bandwidth("cpu")
    print(f"CPU copy bandwidth (measured now): {bandwidth:.1f} GB/s; torch threads {torch.get_num_threads()}; "
          f"prompt {args.prompt}, {args.new} new tokens, batch 1, greedy")
    print(f"| model | MB read a step | contender | tok/s | decode ms/step | % of roofline | tokens |")
    print("|---|---:|---|---:|---:|---:|---|")
    for name in args.models.split(","):
        model = model_for(name)
        # a step reads every weight once but only one row of an untied embedding table
        weights = sum(p.numel() * p.element_size() for p in model.parameters())
        if not model.config.tie_word_embeddings:
            table = model.get_input_embeddings().weight
            weights -= table.numel() * table.element_size()
        vocab = model.config.vocab_size
        ids = torch.randint(0, vocab, (1, args.prompt), generator=torch.Generator().manual_seed(1))
        kw = dict(max_new_tokens=args.new, min_new_tokens=args.new, do_sample=False, pad_token_id=0,
                  attention_mask=torch.ones_like(ids))
        with torch.no_grad():
            prefill_s, _ = _median_s(lambda: model(ids))
        rows, reference = [], None
        for contender in contenders:
            if contender == "braze":
                dec = braze.compile_decoder(model, batch_size=1, max_cache_len=args.prompt + args.new)
                seconds, tokens = _median_s(lambda: dec.generate(ids, max_new_tokens=args.new, eos_token_id=None))
                dec.prefill(ids)
                t0 = time.perf_counter()
                for _ in range(32):
                    dec.position = args.prompt
                    dec.decode(tokens[:, args.prompt])
                step_ms = (time.perf_counter() - t0) / 32 * 1e3
            else:
                import transformers

                m, extra = model, {}
                if contender in ("static", "compiled"):
                    m = model_for(name)
                    m.generation_config.cache_implementation = "static"
                    if contender == "compiled":  # transformers' own compile of the decode step
                        config = transformers.CompileConfig(mode="default" if m.device.type == "cpu"
                                                            else "reduce-overhead")
                        config._compile_all_devices = True  # transformers compiles only on GPUs unless told
                        m.generation_config.compile_config = config
                    else:
                        extra["disable_compile"] = True
                with torch.no_grad():
                    seconds, tokens = _median_s(lambda: m.generate(ids, **kw, **extra))
                step_ms = max(seconds - prefill_s, 0.0) / (args.new - 1) * 1e3
            if reference is None:
                reference = tokens
            same = "equal" if torch.equal(tokens, reference) else \
                f"differ from {int((tokens[0] != reference[0]).nonzero()[0]) - args.prompt}"
            roofline = weights / (bandwidth * 1e9) * 1e3  # ms a step that reads every weight once takes
            rows.append(f"| {name} | {weights / 1e6:.0f} | {contender} | {args.new / seconds:.1f} | {step_ms:.2f} | "
                        f"{100 * roofline / step_ms:.0f}% | {same} |")
            print(rows[-1], flush=True)


if __name__ == "__main__":
    main()
