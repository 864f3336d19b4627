"""braze bench's text-generation rows (`--workloads generate_*`, issue 40): tokens per second of
a whole greedy generate() and the decode step's time against the bandwidth roofline, for
braze's decoder beside transformers' generate() in eager (its dynamic cache) and with a static
cache and its own torch.compile of the decode step (reduce-overhead on CUDA: CUDA graphs); and
the prefill alone (logits of the last token) beside the forward under each torch.compile mode.

Each contender generates `new` greedy tokens after the prompt, three timed runs after a warm-up
(which compiles); tok/s is batch x new over the median generate() time; the decode step's ms is
braze's Decoder.decode timed alone at the prompt's position, the others' (generate - eager
prefill) / (new - 1) (transformers compiles the decode step only); the roofline is the weights a
step reads over the copy bandwidth measured in the same run; the first differing token is the
first new token where a contender's tokens differ from eager's (in float32 there should be none).
"""

from __future__ import annotations

import json
import statistics
import time
from pathlib import Path

from braze.testing import generation as gen

from .bench_common import TORCH_COMPILE_MODES
from .bench_common import error_text as _error_text
from .bench_common import progress as _progress
from .bench_common import reset_torch as _reset_torch

GEN_CONTENDERS = ("eager", "compiled", "braze")
"""eager: transformers' generate() with its dynamic cache; compiled: a static cache and
transformers' torch.compile of the decode step; braze: braze's decoder (prefill + decode step)."""
GEN_LABELS = {"eager": "transformers eager", "compiled": "transformers static cache + torch.compile",
              "braze": "braze"}
PREFILL_MODES = ("eager", "inductor", "inductor-ro", "inductor-max", "braze")


def _sync(device: str) -> None:
    if device == "cuda":
        import torch

        torch.cuda.synchronize()


def _median_s(fn, device: str, runs: int = 3):
    """(median seconds of `runs` calls after one untimed call, the last call's result)."""
    out = fn()
    times = []
    for _ in range(runs):
        _sync(device)
        t0 = time.perf_counter()
        out = fn()
        _sync(device)
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


def _greedy(ids, new: int) -> dict:
    """transformers generate()'s arguments for `new` greedy tokens after `ids`, no early end."""
    import torch

    return dict(max_new_tokens=new, min_new_tokens=new, do_sample=False, pad_token_id=0,
                attention_mask=torch.ones_like(ids))


def first_difference(tokens, reference, prompt: int) -> int | None:
    """The first new token (0-based) where any sequence of `tokens` differs from `reference`."""
    differ = (tokens.to(reference.device) != reference).any(0).nonzero()
    return int(differ[0]) - prompt if len(differ) else None


def float32_drift(lm, ids, w: gen.Generation, tokens: dict, dec=None) -> tuple[dict, dict]:
    """The issue's 16-bit criterion and a steadier view of it, both against eager float32 on the
    same weights. (first, forced): `first` maps each contender of `tokens` (eager's and braze's
    greedy tokens) to the first new token where they differ from float32's (None: none of the
    `w.new` do; braze's must come no earlier than eager's own). One token decides it, and a
    near-tie anywhere flips it either way, so `forced` (teacher_forced) also feeds float32's own
    tokens to eager and to braze's decoder `dec` and compares every step's logits."""
    import copy

    import torch

    wide = copy.deepcopy(lm).float()
    wide.generation_config.cache_implementation = None
    with torch.no_grad():
        reference = wide.generate(ids, **_greedy(ids, w.new))
    first = {name: first_difference(t, reference, w.prompt) for name, t in tokens.items() if t is not None}
    forced = teacher_forced(lm, wide, reference, w.prompt, dec)
    del wide
    return first, forced


def _eager_steps(model, sequence, prompt: int):
    """The logits after the prompt and after each later token but the last of `sequence` [B, T],
    one token a step on the model's own cache as generate() runs it: [B, T - prompt, vocab]."""
    out = model(sequence[:, :prompt], use_cache=True)
    cache, logits = out.past_key_values, [out.logits[:, -1]]
    for t in range(prompt, sequence.shape[1] - 1):
        out = model(sequence[:, t:t + 1], past_key_values=cache, use_cache=True)
        cache = out.past_key_values
        logits.append(out.logits[:, -1])
    return _stacked(logits)


def _braze_steps(dec, sequence, prompt: int):
    """As _eager_steps, through braze's decoder (its prefill, then a decode step a token)."""
    logits = [dec.prefill(sequence[:, :prompt])]
    for t in range(prompt, sequence.shape[1] - 1):
        logits.append(dec.decode(sequence[:, t]))
    return _stacked(logits)


def _stacked(logits):
    """[B, steps, vocab] float32 from a list of [B, vocab] logits."""
    import torch

    return torch.stack([x.float() for x in logits], 1)


def teacher_forced(lm, wide, reference, prompt: int, dec=None) -> dict:
    """eager (`lm`, 16-bit) and braze (`dec`, when given) fed float32's greedy sequence
    `reference` [B, prompt + new] a token a step: for each, `misses` (the steps, over every
    sequence, whose argmax is not float32's next token), `steps`, and `logit_error` (the mean
    over steps and sequences of max|logits - float32's| / max|float32's| at that step, the
    logits of the contender's own step against float32's own: infinite where a NaN or an
    infinity appears)."""
    import torch

    from braze.accuracy import max_error

    with torch.no_grad():
        expected = _eager_steps(wide, reference, prompt)
        contenders = {"eager": lambda: _eager_steps(lm, reference, prompt)}
        if dec is not None:
            contenders["braze"] = lambda: _braze_steps(dec, reference, prompt).to(expected.device)
        out = {}
        for name, steps in contenders.items():
            got = steps()
            target = reference[:, prompt:].to(got.device)
            errors = [max_error(got[b, t], expected[b, t], floor=0.0)
                      for b in range(got.shape[0]) for t in range(got.shape[1])]
            out[name] = {"misses": int((got.argmax(-1) != target).sum()), "steps": len(errors),
                         "logit_error": sum(errors) / len(errors)}
    return out


def _entry(name: str) -> dict:
    return {"name": name, "status": "ok", "error": None, "tok_s": None, "decode_ms": None,
            "roofline_fraction": None, "first_difference": None, "compile_seconds": None}


def _transformers_generate(contender: str, lm, ids, w: gen.Generation, device: str, prefill_s: float) -> dict:
    import torch
    import transformers

    entry = _entry(contender)
    extra = {}
    try:
        if contender == "compiled":
            lm.generation_config.cache_implementation = "static"
            config = transformers.CompileConfig(mode="reduce-overhead" if device == "cuda" else "default")
            config._compile_all_devices = True  # transformers compiles only on GPUs unless told
            lm.generation_config.compile_config = config
        else:
            lm.generation_config.cache_implementation = None
            extra["disable_compile"] = True
        _reset_torch()
        t0 = time.perf_counter()
        with torch.no_grad():
            lm.generate(ids, **_greedy(ids, w.new), **extra)  # the warm-up: compiles
        _sync(device)
        entry["compile_seconds"] = round(time.perf_counter() - t0, 3)
        with torch.no_grad():
            seconds, tokens = _median_s(lambda: lm.generate(ids, **_greedy(ids, w.new), **extra), device)
        entry["tok_s"] = w.batch * w.new / seconds
        entry["decode_ms"] = max(seconds - prefill_s, 0.0) / (w.new - 1) * 1e3
        entry["_tokens"] = tokens
    except Exception as e:
        entry.update(status="error", error=_error_text(e))
    finally:
        lm.generation_config.cache_implementation = None
        lm.generation_config.compile_config = None
    return entry


def _braze_generate(dec, ids, w: gen.Generation, device: str, compile_seconds: float | None) -> dict:
    entry = _entry("braze")
    entry["compile_seconds"] = compile_seconds
    try:
        seconds, tokens = _median_s(lambda: dec.generate(ids, max_new_tokens=w.new, eos_token_id=None), device)
        entry["tok_s"] = w.batch * w.new / seconds
        dec.prefill(ids)
        step = tokens[:, w.prompt]
        _sync(device)
        steps = 64 if device == "cuda" else 16
        t0 = time.perf_counter()
        for _ in range(steps):  # the same slot each time: a step's time does not depend on the position's values
            dec.position = w.prompt
            dec.decode(step)
        _sync(device)
        entry["decode_ms"] = (time.perf_counter() - t0) / steps * 1e3
        entry["_tokens"] = tokens
        entry["_prefill"] = lambda: dec.prefill(ids)
    except Exception as e:
        entry.update(status="error", error=_error_text(e))
    return entry


def _prefills(lm, ids, device: str, modes: list[str], braze_entry: dict | None) -> dict:
    """ms of the prompt's forward (the last token's logits) per contender: eager, each
    torch.compile mode, braze's prefill program."""
    import torch


    def forward(model):
        return lambda: model(ids, logits_to_keep=1, use_cache=False).logits

    out: dict = {}
    with torch.no_grad():
        out["eager"] = {"ms": _median_s(forward(lm), device)[0] * 1e3}
        for mode in modes:
            name = TORCH_COMPILE_MODES[mode]
            _reset_torch()
            try:
                compiled = torch.compile(lm) if mode == "default" else torch.compile(lm, mode=mode)
                fn = forward(compiled)
                fn()
                fn()  # CUDA graphs record on the second call
                out[name] = {"ms": _median_s(fn, device, runs=5)[0] * 1e3}
            except Exception as e:
                out[name] = {"ms": None, "error": _error_text(e)}
        _reset_torch()
    if braze_entry is not None and braze_entry.get("_prefill"):
        out["braze"] = {"ms": _median_s(braze_entry["_prefill"], device, runs=5)[0] * 1e3}
    return out


def measure(w: gen.Generation, lm, device: str, copy_gbs: float, modes: list[str], dec=None,
            compile_seconds: float | None = None, notes: list[str] | None = None) -> dict:
    """One generation row: every contender's generate() and decode step, then the prefills.
    `dec`: braze's decoder (loaded from an artifact or compiled here), None: braze failed and
    `notes` says why."""
    import torch

    tdev = "cuda" if device == "cuda" else "cpu"
    lm = lm.to(tdev)
    ids = gen.prompt_ids(lm.config.vocab_size, w.batch, w.prompt).to(tdev)
    weights = gen.step_bytes(lm)
    roofline_ms = weights / (copy_gbs * 1e9) * 1e3 if copy_gbs else None
    with torch.no_grad():
        prefill_s, _ = _median_s(lambda: lm(ids, logits_to_keep=1), device)
    row = {"name": w.name, "model": w.model, "prompt": w.prompt, "batch": w.batch, "new": w.new,
           "dtype": str(next(lm.parameters()).dtype).replace("torch.", ""), "weights_mb": round(weights / 1e6, 1),
           "contenders": {}, "prefill_ms": {}}
    entries = []
    for contender in GEN_CONTENDERS:
        _progress(f"    {w.name}: {contender}...")
        if contender == "braze":
            if dec is None:
                entry = _entry("braze")
                entry.update(status="error", error="; ".join(notes or ["braze's decoder did not build"]))
            else:
                entry = _braze_generate(dec, ids, w, device, compile_seconds)
        else:
            entry = _transformers_generate(contender, lm, ids, w, device, prefill_s)
        entries.append(entry)
    reference = entries[0].get("_tokens")
    for entry in entries:
        if entry["status"] == "ok":
            if roofline_ms and entry["decode_ms"]:
                entry["roofline_fraction"] = roofline_ms / entry["decode_ms"]
            if reference is not None:
                entry["first_difference"] = first_difference(entry["_tokens"], reference, w.prompt)
    if next(lm.parameters()).dtype in (torch.bfloat16, torch.float16):
        _progress(f"    {w.name}: eager float32 (drift)...")
        braze_ok = any(e["name"] == "braze" and e["status"] == "ok" for e in entries)
        row["drift"], row["teacher_forced"] = float32_drift(
            lm, ids, w, {e["name"]: e.get("_tokens") for e in entries if e["status"] == "ok" and e["name"] != "compiled"},
            dec if braze_ok else None)
    _progress(f"    {w.name}: prefill...")
    row["prefill_ms"] = _prefills(lm, ids, device, modes, entries[-1])
    for entry in entries:
        row["contenders"][entry["name"]] = {k: v for k, v in entry.items() if not k.startswith("_")}
    if notes:
        row["notes"] = notes
    del entries
    if tdev == "cuda":
        torch.cuda.empty_cache()
    return row


def compile_decoder(w: gen.Generation, lm, device: str, target: str | None):
    """(braze's decoder with its prefill for the prompt compiled, seconds, error text or None)."""
    import braze

    t0 = time.perf_counter()
    try:
        dec = braze.compile_decoder(lm, batch_size=w.batch, max_cache_len=w.cache_len, device=device,
                                    target=target, cache=False)
        dec.program(w.prompt)
        return dec, round(time.perf_counter() - t0, 3), None
    except Exception as e:
        return None, round(time.perf_counter() - t0, 3), _error_text(e)


def bench_here(workloads: list[gen.Generation], device: str, target: str | None, copy_gbs: float,
               modes: list[str]) -> list[dict]:
    rows = []
    for i, w in enumerate(workloads, 1):
        _progress(f"[generate {i}/{len(workloads)}] {w.name}: compiling braze's decoder...")
        lm = gen.model_for(w.model)
        dec, seconds, error = compile_decoder(w, lm, device, target)
        rows.append(measure(w, lm, device, copy_gbs, modes, dec, seconds, [error] if error else None))
        del dec, lm
    return rows


def build(workloads: list[gen.Generation], out: Path, device: str, target: str | None) -> None:
    """Each workload's decoder in OUT/generate/NAME.decoder, its weights stripped (`restore` puts
    them back from the seed on the measuring machine), listed in OUT/generate/manifest.json
    (beside what an earlier build for the same device and target put there)."""
    folder = out / "generate"
    folder.mkdir(parents=True, exist_ok=True)
    manifest = []
    for i, w in enumerate(workloads, 1):
        _progress(f"[generate {i}/{len(workloads)}] compiling {w.name} for {device} {target or ''}...")
        lm = gen.model_for(w.model)
        dec, seconds, error = compile_decoder(w, lm, device, target)
        entry = {"workload": w.name, "compile_seconds": seconds, "error": error}
        if dec is not None:
            dec.save(folder / f"{w.name}.decoder", overwrite=True)
            del dec  # its programs out of memory before strip reads the files
            zeroed, size = gen.strip(str(folder / f"{w.name}.decoder"), lm)
            entry["decoder"] = f"{w.name}.decoder"
            print(f"{folder / entry['decoder']}: built in {seconds:.0f} s; {zeroed} weight matrices "
                  f"({size / 1e6:.0f} MB) zeroed for the transfer")
        else:
            _progress(f"    braze failed: {error[:200]}")
        manifest.append(entry)
        del lm
    old = folder / "manifest.json"
    if old.exists():  # a second build into the folder adds to it (same device and target)
        known = json.loads(old.read_text())
        if (known.get("device"), known.get("target")) == (device, target):
            built = {e["workload"] for e in manifest}
            manifest = [e for e in known["workloads"] if e["workload"] not in built] + manifest
    old.write_text(json.dumps({"schema": "braze-bench-generate/1", "device": device, "target": target,
                               "workloads": manifest}, indent=2))


def has_artifacts(directory: Path) -> bool:
    return (directory / "generate" / "manifest.json").exists()


def run(directory: Path, only: list[str] | None, copy_gbs: float, modes: list[str]) -> list[dict]:
    """Measure the decoders `build` wrote (their weights restored from the seed)."""
    import braze

    folder = directory / "generate"
    manifest = json.loads((folder / "manifest.json").read_text())
    device = manifest["device"]
    rows = []
    entries = [e for e in manifest["workloads"] if not only or e["workload"] in only]
    for i, e in enumerate(entries, 1):
        (w,) = gen.parse([e["workload"]], device)
        _progress(f"[generate {i}/{len(entries)}] {w.name}: loading braze's decoder, measuring...")
        lm = gen.model_for(w.model)
        dec, notes = None, None
        if e.get("decoder"):
            try:
                gen.restore(str(folder / e["decoder"]), lm)
                dec = braze.load_decoder(folder / e["decoder"], device=device)
            except Exception as ex:
                notes = ["load failed: " + _error_text(ex)]
        else:
            notes = ["build failed: " + str(e.get("error"))]
        rows.append(measure(w, lm, device, copy_gbs, modes, dec, e.get("compile_seconds"), notes))
        del dec, lm
    return rows


def _fmt(value, spec: str) -> str:
    return "—" if value is None else format(value, spec)


def table(rows: list[dict]) -> list[str]:
    """The generation rows as markdown lines: one per workload and contender, then the prefills
    and braze's ratios."""
    if not rows:
        return []
    lines = ["", "Text generation (greedy; tok/s of the whole generate(), prefill included; the decode step "
             "against the bandwidth roofline: the weights a step reads over the copy bandwidth):", "",
             "| workload | MB a step | contender | tok/s | decode ms/step | % of roofline | first differing token "
             "| compile s |", "|---|---:|---|---:|---:|---:|---|---:|"]
    for r in rows:
        for name in GEN_CONTENDERS:
            c = r["contenders"].get(name)
            if c is None:
                continue
            if c["status"] != "ok":
                err = (c["error"] or "").replace("|", "\\|").replace("\n", " ")[:160]
                lines.append(f"| {r['name']} | {r['weights_mb']:.4g} | {name} | error | | | {err} | |")
                continue
            first = "none" if c["first_difference"] is None else str(c["first_difference"])
            frac = c.get("roofline_fraction")
            lines.append(f"| {r['name']} | {r['weights_mb']:.4g} | {name} | {c['tok_s']:.1f} | {c['decode_ms']:.3f} | "
                         f"{_fmt(None if frac is None else 100 * frac, '.0f')}% | {first} | "
                         f"{_fmt(c.get('compile_seconds'), '.1f')} |")
    modes = [m for m in PREFILL_MODES if any(m in r["prefill_ms"] for r in rows)]
    lines += ["", "Prefill (the prompt's forward to the last token's logits; braze: its prefill program, which "
              "also writes the cache), median ms:", "",
              "| workload | " + " | ".join(modes) + " | braze vs best torch.compile |",
              "|---|" + "---:|" * (len(modes) + 1)]
    for r in rows:
        p = r["prefill_ms"]
        cells = [_fmt((p.get(m) or {}).get("ms"), ".3f") for m in modes]
        best = [v["ms"] for k, v in p.items() if k.startswith("inductor") and v.get("ms")]
        ours = (p.get("braze") or {}).get("ms")
        ratio = f"{min(best) / ours:.2f}x" if best and ours else "—"
        lines.append(f"| {r['name']} | " + " | ".join(cells) + f" | {ratio} |")
    drifts = [r for r in rows if r.get("drift")]
    if drifts:
        lines += ["", "16-bit drift: the first new token differing from eager float32 on the same weights "
                  "(none: all equal; braze's should come no earlier than eager's):", "",
                  "| workload | eager | braze |", "|---|---:|---:|"]
        for r in drifts:
            cells = ["none" if r["drift"].get(n, "—") is None else str(r["drift"].get(n, "—"))
                     for n in ("eager", "braze")]
            lines.append(f"| {r['name']} | " + " | ".join(cells) + " |")
    forced = [r for r in rows if r.get("teacher_forced")]
    if forced:
        lines += ["", "Fed float32's greedy tokens a step at a time (teacher forcing): steps whose argmax is not "
                  "float32's next token, and the mean over steps of max|logits - float32's| / max|float32's|:", "",
                  "| workload | eager misses | braze misses | eager logit error | braze logit error |",
                  "|---|---:|---:|---:|---:|"]
        for r in forced:
            f = r["teacher_forced"]
            miss = [f"{f[n]['misses']} of {f[n]['steps']}" if n in f else "—" for n in ("eager", "braze")]
            err = [_fmt(f[n]["logit_error"], ".4f") if n in f else "—" for n in ("eager", "braze")]
            lines.append(f"| {r['name']} | " + " | ".join(miss + err) + " |")
    lines += ["", "| workload | braze decode vs compiled | braze tok/s vs compiled | braze vs eager (tok/s) |",
              "|---|---:|---:|---:|"]
    for r in rows:
        c = r["contenders"]

        def ok(name):
            e = c.get(name)
            return e if e and e["status"] == "ok" else None

        b, comp, eager = ok("braze"), ok("compiled"), ok("eager")

        def ratio(x, y, key):
            return f"{x[key] / y[key]:.2f}x" if x and y else "—"

        lines.append(f"| {r['name']} | {ratio(comp, b, 'decode_ms')} | {ratio(b, comp, 'tok_s')} | "
                     f"{ratio(b, eager, 'tok_s')} |")
    return lines
