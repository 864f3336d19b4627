"""Text generation on CUDA at the issue's sizes (issue 40): braze's decoder beside transformers'
generate() in eager and with a static cache under torch.compile (reduce-overhead: CUDA graphs),
on random-weight Qwen2-class models, batch 1.

    python bench/experiments/cuda_generate.py build DIR [MODEL,...] [--prompt 128] [--new 128]
        here: DIR/MODEL.decoder (prefill for the prompt length and the decode step, sm_90)
    python bench/experiments/cuda_generate.py run DIR [MODEL,...] [--contenders eager,compiled,braze] [--profile]
        [--drift N]
        GPU host (transformers there): the table below

The weights are braze.testing.zoo.pool_weights (normal values of the init's spread, every matrix
different, one pool repeated) so that gigabytes of constants compress to a few MiB for the
transfer; `run` rebuilds the same model from the same seeds, so every contender runs the very
weights braze compiled. Each contender generates `new` greedy tokens after a `prompt`-token
prompt, three timed runs after a warm-up (compiles); the table gives the median tokens/s of the
whole generate() (prefill included), the decode step's ms (braze: Decoder.decode timed alone over
the same cache slot; the others: (generate - prefill) / (new - 1)), the fraction of the bandwidth
roofline (the bytes of weights a step reads over the device copy bandwidth measured in the same
run), and the first new token that differs from eager's.
"""

import argparse
import copy
import os
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(__file__))
from generate_tokens import MODELS, config_for  # noqa: E402  the same Qwen2-class configurations


def model_for(name: str):
    import transformers
    from braze.testing.zoo import pool_weights

    config, dtype = config_for(name)
    torch.manual_seed(0)
    default = torch.get_default_dtype()
    torch.set_default_dtype(dtype)  # built in its dtype: no float32 copy of gigabytes
    try:
        model = transformers.Qwen2ForCausalLM(config).eval()
    finally:
        torch.set_default_dtype(default)
    pool_weights(model)
    return model


def _weights(model) -> list[tuple[str, bytes]]:
    """Each weight matrix's name and bytes (a tied embedding once)."""
    return [(n, p.detach().contiguous().view(torch.uint8).numpy().tobytes())
            for n, p in model.named_parameters() if p.dim() >= 2]


def strip(folder: str, model) -> None:
    """Zero each weight matrix's bytes in the folder's programs (found whole in each file: braze
    stores the program uncompressed and IREE its constants as they are) and list where they were
    in FOLDER/../NAME.strip.json: gigabytes of weights cross the transfer as zeros, and `restore`
    puts the same bytes back on the GPU host (the artifacts' checksums then hold again)."""
    import json
    import mmap

    # the pool repeats, so a small matrix's bytes also sit inside bigger ones: the biggest are
    # placed first, and a match overlapping a placed one is not it
    weights = sorted(_weights(model), key=lambda w: -len(w[1]))
    entries = []
    for file in sorted(os.listdir(folder)):
        if not file.endswith(".braze"):
            continue
        path = os.path.join(folder, file)
        with open(path, "r+b") as f, mmap.mmap(f.fileno(), 0) as mm:
            taken = []
            for name, data in weights:
                n = len(data)

                def whole(at: int) -> bool:  # the head recurs (the pool): probe the tail and middle first
                    return (mm[at + n - 64:at + n] == data[-64:] and mm[at + n // 2:at + n // 2 + 64] ==
                            data[n // 2:n // 2 + 64] and mm[at:at + n] == data)

                at = mm.find(data[:64])
                while at >= 0 and (not whole(at) or any(a < at + n and at < a + m for a, m in taken)):
                    at = mm.find(data[:64], at + 1)
                if at < 0:
                    raise SystemExit(f"{path}: weight {name} not found whole; cannot strip it")
                taken.append((at, n))
                entries.append((file, name, at, n))
            for at, n in taken:
                mm[at:at + n] = bytes(n)
    with open(folder.rstrip("/") + ".strip.json", "w") as f:
        json.dump(entries, f)
    print(f"{folder}: {len(entries)} weight matrices zeroed ({sum(e[3] for e in entries) / 1e6:.0f} MB)")


def restore(folder: str, model) -> None:
    import json

    weights = dict(_weights(model))
    with open(folder.rstrip("/") + ".strip.json") as f:
        entries = json.load(f)
    for file, name, at, n in entries:
        with open(os.path.join(folder, file), "r+b") as f:
            f.seek(at)
            f.write(weights[name])


def _prompt(vocab: int, n: int, seed: int = 1):
    return torch.randint(0, vocab, (1, n), generator=torch.Generator().manual_seed(seed))


def _greedy(ids, new: int) -> dict:
    """transformers generate()'s arguments for `new` greedy tokens after `ids`, no early end."""
    return dict(max_new_tokens=new, min_new_tokens=new, do_sample=False, pad_token_id=0,
                attention_mask=torch.ones_like(ids))


def _first_difference(tokens, reference, prompt: int) -> int | None:
    """The first new token where `tokens` differs from `reference` (None: none does)."""
    differ = (tokens[0].to(reference.device) != reference[0]).nonzero()
    return int(differ[0]) - prompt if len(differ) else None


def _drift(out: str, name: str, model, prompt: int, new: int, prompts: int) -> None:
    """The issue's bf16 criterion over `prompts` prompts: the first new token where eager bf16,
    and where braze bf16, differ from eager float32 on the same weights (greedy)."""
    import braze

    wide = copy.deepcopy(model).float()
    dec = braze.load_decoder(f"{out}/{name}.decoder", device="cuda")
    model.generation_config.cache_implementation = None

    def first(tokens, reference) -> int:
        at = _first_difference(tokens, reference, prompt)
        return new if at is None else at

    eager_at, braze_at = [], []
    for seed in range(1, prompts + 1):
        ids = _prompt(model.config.vocab_size, prompt, seed).cuda()
        with torch.no_grad():
            f32 = wide.generate(ids, **_greedy(ids, new))
            bf16 = model.generate(ids, **_greedy(ids, new))
        ours = dec.generate(ids, max_new_tokens=new, eos_token_id=None)
        eager_at.append(first(bf16, f32))
        braze_at.append(first(ours, f32))
    print(f"\n{name}: first new token differing from eager float32 ({new}: none), {prompts} prompts of {prompt} "
          f"tokens: eager bf16 {eager_at} (median {statistics.median(eager_at)}), braze bf16 {braze_at} "
          f"(median {statistics.median(braze_at)}); braze no earlier than eager on {sum(b >= e for b, e in zip(braze_at, eager_at))} "
          f"of {prompts}", flush=True)
    del wide, dec


def build(out: str, names: list[str], prompt: int, new: int) -> None:
    import braze

    for name in names:
        t0 = time.perf_counter()
        model = model_for(name)
        dec = braze.compile_decoder(model, batch_size=1, max_cache_len=prompt + new, device="cuda",
                                    target="sm_90", cache=False)
        dec.program(prompt)
        dec.save(f"{out}/{name}.decoder", overwrite=True)
        launch_plan = dec.programs[1].report.launch_plan
        del dec  # its programs (the weights twice) out of memory before strip reads the files
        strip(f"{out}/{name}.decoder", model)
        print(f"{name}: programs [1, {prompt}] in {time.perf_counter() - t0:.0f} s; launch plan {launch_plan}",
              flush=True)


def _median_s(fn, runs: int = 3):
    out = fn()
    times = []
    for _ in range(runs):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        out = fn()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


def _profile_steps(dec, prompt: int, step, step_ms: float, steps: int = 16, top: int = 12) -> None:
    """Where a decode step's time goes (torch.profiler over `steps` steps): the GPU's busy time
    per step against the step's wall time (the rest is gaps between kernels), and the kernels
    taking most of it, by name."""
    from braze.tools.timing import profiled_kernels

    def one_step():
        dec.position = prompt
        dec.decode(step)

    kernels = profiled_kernels(one_step, calls=steps, warmup=0)  # per step
    busy = sum(t for _, t in kernels.values())
    count = sum(n for n, _ in kernels.values())
    print(f"\nbraze decode step: {count:.0f} kernels, GPU busy {busy:.3f} ms of {step_ms:.3f} ms a step "
          f"({100 * busy / step_ms:.0f}%); top kernels by time a step:")
    for name, (n, t) in sorted(kernels.items(), key=lambda kv: -kv[1][1])[:top]:
        print(f"  {t:8.4f} ms  {int(n):4d}x  {100 * t / busy:4.1f}%  {name[:110]}")
    print(flush=True)


def run(out: str, names: list[str], prompt: int, new: int, contenders: list[str], profile: bool = False,
        drift: int = 0) -> None:
    import braze
    import transformers
    from braze.tools.bench import copy_bandwidth

    bandwidth = copy_bandwidth("cuda")
    print(f"{torch.cuda.get_device_name()}; copy bandwidth (measured now) {bandwidth:.0f} GB/s; torch "
          f"{torch.__version__}, transformers {transformers.__version__}; prompt {prompt}, {new} new tokens, "
          f"batch 1, greedy", flush=True)
    print("| model | MB read a step | contender | tok/s | decode ms/step | % of roofline | first differing token |")
    print("|---|---:|---|---:|---:|---:|---|")
    for name in names:
        model = model_for(name)
        if "braze" in contenders:
            restore(f"{out}/{name}.decoder", model)
        model = model.cuda()
        weights = sum(p.numel() * p.element_size() for p in model.parameters())
        if not model.config.tie_word_embeddings:
            table = model.get_input_embeddings().weight
            weights -= table.numel() * table.element_size()
        roofline_ms = weights / (bandwidth * 1e9) * 1e3
        ids = _prompt(model.config.vocab_size, prompt).cuda()
        kw = _greedy(ids, new)
        with torch.no_grad():
            prefill_s, _ = _median_s(lambda: model(ids))
        reference = None
        for contender in contenders:
            if contender == "braze":
                dec = braze.load_decoder(f"{out}/{name}.decoder", device="cuda")
                seconds, tokens = _median_s(lambda: dec.generate(ids, max_new_tokens=new, eos_token_id=None))
                dec.prefill(ids)
                step = tokens[:, prompt]
                torch.cuda.synchronize()
                t0 = time.perf_counter()
                for _ in range(64):
                    dec.position = prompt
                    dec.decode(step)
                torch.cuda.synchronize()
                step_ms = (time.perf_counter() - t0) / 64 * 1e3
                if profile:
                    _profile_steps(dec, prompt, step, step_ms)
                del dec
            else:
                m, extra = model, {}
                if contender == "compiled":  # transformers' static cache and its own compile of the step
                    m.generation_config.cache_implementation = "static"
                    m.generation_config.compile_config = transformers.CompileConfig(mode="reduce-overhead")
                elif contender == "static":
                    m.generation_config.cache_implementation = "static"
                    extra["disable_compile"] = True
                else:
                    m.generation_config.cache_implementation = None
                with torch.no_grad():
                    seconds, tokens = _median_s(lambda: m.generate(ids, **kw, **extra))
                step_ms = max(seconds - prefill_s, 0.0) / (new - 1) * 1e3
                m.generation_config.cache_implementation = None
            tokens = tokens.to(ids.device)
            if reference is None:
                reference = tokens
            first = _first_difference(tokens, reference, prompt)
            first = "none" if first is None else str(first)
            print(f"| {name} | {weights / 1e6:.0f} | {contender} | {new / seconds:.1f} | {step_ms:.3f} | "
                  f"{100 * roofline_ms / step_ms:.0f}% | {first} |", flush=True)
        if drift:
            _drift(out, name, model, prompt, new, drift)
        torch.cuda.empty_cache()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("mode", choices=("build", "run"))
    p.add_argument("dir")
    p.add_argument("models", nargs="?", default="qwen2-0.5b,qwen2-1.5b")
    p.add_argument("--prompt", type=int, default=128)
    p.add_argument("--new", type=int, default=128)
    p.add_argument("--contenders", default="eager,compiled,braze")
    p.add_argument("--profile", action="store_true", help="where braze's decode step spends its time (torch.profiler)")
    p.add_argument("--drift", type=int, default=0, metavar="N",
                   help="the bf16 criterion on N prompts: first tokens differing from eager float32")
    a = p.parse_args()
    names = a.models.split(",")
    unknown = [n for n in names if n not in MODELS]
    if unknown:
        sys.exit(f"unknown model(s) {', '.join(unknown)}; known: {', '.join(MODELS)}")
    if a.mode == "build":
        build(a.dir, names, a.prompt, a.new)
    else:
        run(a.dir, names, a.prompt, a.new, a.contenders.split(","), a.profile, a.drift)


if __name__ == "__main__":
    main()
