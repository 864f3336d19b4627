"""Text-generation workloads: Qwen2-class causal LMs with random weights (braze bench's
`generate_*` rows, issue 40).

A workload is named `generate_<model>_p<prompt>_b<batch>` (e.g. generate_qwen2-0.5b_p128_b1):
`batch` sequences of a `prompt`-token random prompt, then `new` (128) greedy tokens each. The
weights are `braze.testing.zoo.pool_weights` (normal values of the init's spread, every matrix
different, one pool repeated), so that a GPU host rebuilds the very weights braze compiled from
the seed, and `strip`/`restore` can send gigabytes of constants across as zeros.
"""

from __future__ import annotations

import json
import mmap
import os
import re
from dataclasses import dataclass

from braze.errors import ArtifactError, UsageError

MODELS = {  # name -> (hidden, layers, heads, kv heads, intermediate, vocab, dtype)
    "qwen2-tiny": (64, 2, 4, 2, 128, 512, "float32"),
    "qwen2-30m": (512, 8, 8, 2, 1408, 32000, "float32"),
    "qwen2-30m-bf16": (512, 8, 8, 2, 1408, 32000, "bfloat16"),
    "qwen2-100m": (768, 12, 12, 2, 2048, 32000, "float32"),
    "qwen2-0.5b": (896, 24, 14, 2, 4864, 151936, "bfloat16"),
    "qwen2-1.5b": (1536, 28, 12, 2, 8960, 151936, "bfloat16"),
}
"""The Qwen2 configurations: qwen2-0.5b and qwen2-1.5b are the ~0.5B and ~1.5B classes of the
issue (Qwen2-0.5B's and Qwen2-1.5B's shapes), the others sizes a CPU runs in seconds."""

NEW_TOKENS = 128

_NAME = re.compile(r"generate_(?P<model>[a-z0-9.-]+?)(?:_p(?P<prompt>\d+))?(?:_b(?P<batch>\d+))?")


@dataclass(frozen=True)
class Generation:
    """One generation workload: a model, its prompt length and its batch."""

    model: str
    prompt: int = 128
    batch: int = 1
    new: int = NEW_TOKENS

    @property
    def name(self) -> str:
        return f"generate_{self.model}_p{self.prompt}_b{self.batch}"

    @property
    def cache_len(self) -> int:
        return self.prompt + self.new

    def describe(self) -> str:
        return f"{self.model}, batch {self.batch}, prompt {self.prompt}, {self.new} new tokens"


def is_generation(name: str) -> bool:
    return name == "generate" or name.startswith("generate_")


def default(device: str) -> list[Generation]:
    """`--workloads generate`: the issue's matrix on CUDA (both classes, prompt 128 and 512,
    batch 1 and 8); sizes a CPU generates in seconds elsewhere."""
    if device == "cuda":
        return [Generation(m, p, b) for m in ("qwen2-0.5b", "qwen2-1.5b") for p in (128, 512) for b in (1, 8)]
    return [Generation("qwen2-30m", 128, 1), Generation("qwen2-30m-bf16", 128, 1), Generation("qwen2-30m", 128, 8)]


def parse(names: list[str], device: str) -> list[Generation]:
    """The generation workloads of `--workloads` names ('generate': the device's default set)."""
    found = []
    for name in names:
        if name == "generate":
            found += default(device)
            continue
        m = _NAME.fullmatch(name)
        if m is None or m["model"] not in MODELS:
            raise UsageError(f"unknown generation workload '{name}': name it generate_MODEL[_pPROMPT][_bBATCH] "
                             f"with MODEL one of {', '.join(MODELS)} (e.g. generate_qwen2-0.5b_p128_b1)")
        prompt, batch = int(m["prompt"] or 128), int(m["batch"] or 1)
        if prompt < 1 or batch < 1:
            raise UsageError(f"'{name}': the prompt and the batch are at least 1")
        found.append(Generation(m["model"], prompt, batch))
    return found


def config_for(model: str):
    """The model's transformers.Qwen2Config and its torch dtype."""
    import torch
    import transformers

    hidden, layers, heads, kv, inter, vocab, dtype = MODELS[model]
    config = transformers.Qwen2Config(vocab_size=vocab, hidden_size=hidden, num_hidden_layers=layers,
                                      num_attention_heads=heads, num_key_value_heads=kv, intermediate_size=inter,
                                      max_position_embeddings=4096, tie_word_embeddings=vocab > 100000)
    return config, getattr(torch, dtype)


def model_for(model: str):
    """The random-weight model (built in its dtype: no float32 copy of gigabytes), the same
    weights on every machine."""
    import torch
    import transformers

    from braze.testing.zoo import pool_weights

    config, dtype = config_for(model)
    torch.manual_seed(0)
    default_dtype = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        lm = transformers.Qwen2ForCausalLM(config).eval()
    finally:
        torch.set_default_dtype(default_dtype)
    pool_weights(lm)
    return lm


def prompt_ids(vocab: int, batch: int, tokens: int, seed: int = 1):
    import torch

    return torch.randint(0, vocab, (batch, tokens), generator=torch.Generator().manual_seed(seed))


def step_bytes(lm) -> int:
    """The bytes of weights one decode step reads: every parameter once, but only one row of an
    untied embedding table."""
    total = sum(p.numel() * p.element_size() for p in lm.parameters())
    if not lm.config.tie_word_embeddings:
        table = lm.get_input_embeddings().weight
        total -= table.numel() * table.element_size()
    return total


def _weights(lm) -> list[tuple[str, bytes]]:
    """Each weight matrix's name and bytes (a tied embedding once), biggest first."""
    found = [(n, p.detach().contiguous().view(-1).view(__import__("torch").uint8).numpy().tobytes())
             for n, p in lm.named_parameters() if p.dim() >= 2]
    return sorted(found, key=lambda w: -len(w[1]))


def _strip_file(folder: str) -> str:
    return os.path.join(folder, "strip.json")


def strip(folder: str, lm) -> tuple[int, int]:
    """Zero each weight matrix's bytes where a program in the decoder folder holds them whole (IREE
    keeps constants as they are on CUDA; a CPU program may hold them packed: those stay) and list
    where they were in FOLDER/strip.json, for `restore`. Returns (matrices zeroed, bytes)."""
    # the pool repeats, so a small matrix's bytes also sit inside bigger ones: the biggest are
    # placed first, and a match overlapping a placed one is not it
    weights = _weights(lm)
    entries = []
    for file in sorted(os.listdir(folder)):
        if not file.endswith(".braze"):
            continue
        path = os.path.join(folder, file)
        with open(path, "r+b") as f, mmap.mmap(f.fileno(), 0) as mm:
            taken: list[tuple[int, int]] = []
            for name, data in weights:
                n = len(data)
                if n < 4096:
                    continue

                def whole(at: int) -> bool:  # the head recurs (the pool): probe the tail and middle first
                    return (mm[at + n - 64:at + n] == data[-64:] and mm[at + n // 2:at + n // 2 + 64]
                            == data[n // 2:n // 2 + 64] and mm[at:at + n] == data)

                at = mm.find(data[:64])
                while at >= 0 and (not whole(at) or any(a < at + n and at < a + m for a, m in taken)):
                    at = mm.find(data[:64], at + 1)
                if at >= 0:
                    taken.append((at, n))
                    entries.append((file, name, at, n))
            for at, n in taken:
                mm[at:at + n] = bytes(n)
    with open(_strip_file(folder), "w") as f:
        json.dump(entries, f)
    return len(entries), sum(e[3] for e in entries)


def restore(folder: str, lm) -> int:
    """Put back the weights `strip` zeroed (from the model rebuilt from its seed); returns how
    many. A folder that was not stripped is left as it is."""
    if not os.path.exists(_strip_file(folder)):
        return 0
    weights = dict(_weights(lm))
    with open(_strip_file(folder)) as f:
        entries = json.load(f)
    for file, name, at, n in entries:
        data = weights.get(name)
        if data is None or len(data) != n:
            raise ArtifactError(f"{folder}: weight {name} of the stripped program is not the model's "
                                f"({'missing' if data is None else f'{len(data)} bytes, not {n}'}); "
                                "rebuild the decoder with this braze")
        with open(os.path.join(folder, file), "r+b") as f:
            f.seek(at)
            f.write(data)
    os.remove(_strip_file(folder))
    return len(entries)
