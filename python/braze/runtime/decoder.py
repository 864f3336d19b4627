"""Generation with a compiled causal LM: the token loop over braze's step programs and the
static key/value cache they update in place (the programs come from braze.compile_decoder, or
from a folder Decoder.save wrote: braze.load_decoder needs only the runtime).

    dec = braze.load_decoder("lm.decoder", device="cuda")
    tokens = dec.generate(input_ids, max_new_tokens=64, do_sample=True, top_p=0.9, generator=g)

Each program is `step(input_ids [B, T], position [1], k_0, v_0, ...) -> logits [B, vocab]`, its
cache results tied to the cache arguments (compile(inputs_in_place=True)). A prompt whose length
has no program of its own is fed through the decode step a token at a time.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from braze.errors import ArtifactError, InputError

_META = "decoder.json"


class Decoder:
    """A causal LM compiled for generation: its step programs by tokens a call (1: the decode
    step; prompt lengths), and the key/value cache they share: torch tensors of the programs'
    dtype on their device, one [batch, kv heads, max_cache_len, head dim] per layer and kind."""

    def __init__(self, programs: dict, compile_step=None):
        if 1 not in programs:
            raise ArtifactError("a decoder needs its decode step (the program for 1 token a call)")
        self.programs = dict(programs)
        """CompiledModule per tokens a call."""
        self.compile_step = compile_step
        """count -> CompiledModule for a prompt length without a program (None when loaded)."""
        spec = self.programs[1].signature.program_inputs
        ids, caches = spec[0], spec[2:]
        self.batch_size = ids.shape[0]
        self.max_cache_len = caches[0].shape[2]
        self._cache_specs = caches
        self._caches = None
        self.position = 0
        """How many cache positions hold this sequence's keys and values."""

    @property
    def caches(self) -> list:
        """The key and value caches (allocated on first use, on the programs' device: a decoder
        compiled here for another machine's GPU allocates nothing here)."""
        if self._caches is None:
            import torch

            device = "cuda" if self.programs[1].target.device == "cuda" else "cpu"
            dtype = getattr(torch, self._cache_specs[0].dtype)
            self._caches = [torch.zeros(tuple(c.shape), dtype=dtype, device=device) for c in self._cache_specs]
        return self._caches

    def program(self, count: int):
        """The step program for `count` tokens a call (compiled now if the decoder can), or None."""
        if count not in self.programs and self.compile_step is not None:
            self.programs[count] = self.compile_step(count)
        return self.programs.get(count)

    def _run(self, ids, start: int):
        import torch

        count = ids.shape[1]
        if start + count > self.max_cache_len:
            raise InputError(f"the cache holds {self.max_cache_len} positions; {start} are in use and this call "
                             f"adds {count}: compile the decoder with a larger max_cache_len")
        where = self.caches[0].device
        program = self.program(count)
        if program is None:  # a loaded decoder without this prompt length: a token at a time
            for t in range(count):
                logits = self._run(ids[:, t:t + 1], start + t)
            return logits
        logits = program(ids.to(where), torch.tensor([start], dtype=torch.long, device=where), *self.caches)
        self.position = start + count
        return logits

    def prefill(self, input_ids):
        """Start a sequence: the prompt's keys and values into the cache (from position 0);
        returns the logits after its last token, [batch, vocab]."""
        import torch

        ids = torch.as_tensor(input_ids, dtype=torch.long)
        if ids.dim() != 2 or ids.shape[0] != self.batch_size or ids.shape[1] < 1:
            raise InputError(f"input_ids: expected [{self.batch_size}, tokens] (the decoder's batch), "
                             f"got shape {tuple(ids.shape)}")
        return self._run(ids, 0)

    def decode(self, tokens):
        """The next token of each sequence ([batch] or [batch, 1]) at the next position; returns
        the logits after it, [batch, vocab]."""
        import torch

        ids = torch.as_tensor(tokens, dtype=torch.long).reshape(-1, 1)
        if ids.shape[0] != self.batch_size:
            raise InputError(f"tokens: expected {self.batch_size} (one a sequence), got {ids.shape[0]}")
        if self.position == 0:
            raise InputError("decode() before prefill(): start each sequence with prefill(prompt)")
        return self._run(ids, self.position)

    def generate(self, input_ids, max_new_tokens: int = 20, do_sample: bool = False, temperature: float = 1.0,
                 top_k: int | None = None, top_p: float | None = None, generator=None, eos_token_id=None,
                 pad_token_id=None, attention_mask=None):
        """The prompt followed by up to max_new_tokens tokens, [batch, prompt + new]
        (braze.generate says what each argument does)."""
        import torch

        ids = torch.as_tensor(input_ids, dtype=torch.long)
        if attention_mask is not None and not bool(torch.as_tensor(attention_mask).bool().all()):
            raise InputError("attention_mask has padding (zeros): braze's decoder takes prompts of one length "
                             "without padding for now; generate each length apart")
        if not isinstance(max_new_tokens, int) or max_new_tokens < 1:
            raise InputError(f"max_new_tokens={max_new_tokens!r}: give a positive number of tokens")
        if ids.dim() == 2 and ids.shape[1] + max_new_tokens - 1 > self.max_cache_len:
            raise InputError(f"a {ids.shape[1]}-token prompt and {max_new_tokens} new tokens need "
                             f"{ids.shape[1] + max_new_tokens - 1} cache positions; the decoder has {self.max_cache_len}")
        if do_sample and not temperature > 0:
            raise InputError(f"temperature={temperature!r}: sampling needs a positive temperature (or do_sample=False)")
        eos = torch.tensor([eos_token_id] if isinstance(eos_token_id, int) else list(eos_token_id or []),
                           dtype=torch.long)
        if pad_token_id is None and len(eos):
            pad_token_id = int(eos[0])
        logits = self.prefill(ids)
        out, done = [ids], torch.zeros(ids.shape[0], dtype=torch.bool)
        for i in range(max_new_tokens):
            # greedy: the argmax where the logits are, only the tokens come to the host
            nxt = (_sample(logits.float().cpu(), temperature, top_k, top_p, generator) if do_sample
                   else logits.argmax(-1).cpu())
            if len(eos):
                nxt = torch.where(done, torch.tensor(pad_token_id), nxt)
                done = done | torch.isin(nxt, eos)
            out.append(nxt[:, None].to(ids.device))
            if i == max_new_tokens - 1 or (len(eos) and bool(done.all())):
                break
            logits = self.decode(nxt)
        return torch.cat(out, dim=1)

    def save(self, path: str | os.PathLike, overwrite: bool = False) -> Path:
        """A folder with each step program (step-<tokens>.braze) and decoder.json; refuses an
        existing folder unless overwrite=True (then only the decoder's own files are replaced)."""
        folder = Path(path)
        if folder.exists() and not overwrite:
            from braze.errors import ArtifactExistsError

            raise ArtifactExistsError(f"{folder} exists; pass overwrite=True to replace the decoder in it")
        folder.mkdir(parents=True, exist_ok=True)
        for count, module in sorted(self.programs.items()):
            module.save(folder / f"step-{count}.braze", overwrite=overwrite)
        (folder / _META).write_text(json.dumps({"format": 1, "steps": sorted(self.programs)}))
        return folder


def load_decoder(path: str | os.PathLike, device: str | None = None, runtime: str | None = None) -> Decoder:
    """A Decoder from a folder Decoder.save wrote (braze.load's device and runtime per program)."""
    from braze.runtime.module import load

    folder = Path(path)
    try:
        meta = json.loads((folder / _META).read_text())
        steps = [int(n) for n in meta["steps"]]
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise ArtifactError(f"{folder} is not a braze decoder (no readable {_META}: {e})") from None
    kw = {"runtime": runtime, "device": device}
    return Decoder({n: load(folder / f"step-{n}.braze", **kw) for n in steps})


def _sample(scores, temperature: float, top_k: int | None, top_p: float | None, generator):
    """One token per row from softmax(scores / temperature), limited to the top_k scores and to
    the fewest tokens whose probability reaches top_p (transformers' warpers, in its order)."""
    import torch

    if temperature != 1.0:
        scores = scores / temperature
    if top_k:
        kth = torch.topk(scores, min(int(top_k), scores.shape[-1])).values[..., -1:]
        scores = scores.masked_fill(scores < kth, float("-inf"))
    if top_p is not None and top_p < 1.0:
        ordered, order = torch.sort(scores, descending=False)
        cut = ordered.softmax(-1).cumsum(-1) <= 1 - top_p
        cut[..., -1:] = False  # keep at least the most likely token
        scores = scores.masked_fill(cut.scatter(-1, order, cut), float("-inf"))
    return torch.multinomial(scores.softmax(-1), 1, generator=generator)[:, 0]
