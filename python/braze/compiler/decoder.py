"""Text generation: a causal LM's prefill and decode step as two braze programs that share a
static key/value cache, which the programs update in place.

    dec = braze.compile_decoder(model, batch_size=1, max_cache_len=256)   # transformers' LlamaForCausalLM, ...
    tokens = dec.generate(input_ids, max_new_tokens=64)                  # or braze.generate(model, input_ids, ...)

The step program is braze's own module around the model's own submodules (its embedding, norms,
projections, rotary embedding, MLPs and head; their weights become the program's constants):

    step(input_ids [B, T], position [1], k_0, v_0, ..., k_{L-1}, v_{L-1}) -> logits [B, vocab]

Tokens t of the call sit at cache positions position + t. Each layer writes its new keys and
values into its cache slots (`index_copy_`) and attends over the whole static cache, the slots
past each query's position masked, so one program serves every position and no cache shape
changes. The prefill is the same step at T = the prompt's length (compiled once per length),
which the Decoder calls at position 0 only: it writes the cache the same way but attends over the
prompt's own keys with is_causal, skipping the masked tiles. The decode step is T = 1 (compiled
once, any position). The caches are arguments the program updates, compiled with
inputs_in_place=True: each cache result is tied to its argument (IREE's iree.abi.output), so the
program writes the new keys and values into the Decoder's own cache tensors and nothing of the
cache is copied per token. The Decoder (the token loop, sampling, save and load) is the runtime's:
braze.runtime.decoder.

Supported: the standard pre-norm decoder layer as transformers' Llama, Mistral, Qwen2, Qwen3
(q/k norms) and Gemma (scaled embeddings) write it, and GPT-2's block (learned positions, fused
q/k/v projection); anything else is refused naming what differs.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from braze.errors import InputError, UnsupportedOpError
from braze.runtime.decoder import Decoder

_LAYER_PARTS = ("self_attn", "mlp", "input_layernorm", "post_attention_layernorm")
_EXTRA_NORMS = ("pre_feedforward_layernorm", "post_feedforward_layernorm")
"""Gemma 2/3's sandwich norms: a different layer, refused."""


def _rope(x, cos, sin):
    """x * cos + rotate_half(x) * sin, rotate_half(x) = cat(-x2, x1), written as the halves
    swapped (a flip of the [2, D/2] view) times [-1, +1]: the same values bit for bit, but an
    index map IREE fuses into one elementwise kernel where the cat of slices became copies."""
    half = x.shape[-1] // 2
    swapped = x.unflatten(-1, (2, half)).flip(-2).flatten(-2)
    sign = torch.cat([torch.full((half,), -1.0), torch.ones(half)]).to(x.dtype)
    return x * cos + swapped * sign * sin


def _joined(*linears):
    """The weights (and biases, or None) of plain nn.Linears over one input, stacked along their
    outputs; None where any is something else (a quantized or adapted layer) or they differ."""
    if not all(type(m) is nn.Linear for m in linears):
        return None
    weights = [m.weight for m in linears]
    if len({(w.dtype, w.device, w.shape[1]) for w in weights}) != 1:
        return None
    biases = [m.bias for m in linears]
    if any(b is None for b in biases) and not all(b is None for b in biases):
        return None
    with torch.no_grad():
        return torch.cat(weights), (None if biases[0] is None else torch.cat(biases))


def _conv1d(module, x):
    """transformers' Conv1D (x @ weight + bias) with a reshape where it views its input: torch's
    export traces the heads' transpose-and-reshape with a view's strides, which Conv1D's view of
    the attention output then rejects in decomposition (torch 2.13)."""
    return torch.addmm(module.bias, x.reshape(-1, x.shape[-1]), module.weight).reshape(*x.shape[:-1], -1)


class DecoderStep(nn.Module):
    """One step of a causal LM over a static cache: `forward(input_ids, position, *caches)`."""

    def __init__(self, lm: nn.Module):
        super().__init__()
        name = type(lm).__name__
        gpt2 = getattr(lm, "transformer", None)
        if gpt2 is not None and all(hasattr(gpt2, p) for p in ("wte", "wpe", "h", "ln_f")) and hasattr(lm, "lm_head"):
            self._init_gpt2(lm, name)
            return
        self.kind = "llama"
        base = getattr(lm, "model", None)
        if base is None or not hasattr(base, "layers") or not hasattr(base, "embed_tokens") or \
                not hasattr(lm, "lm_head"):
            raise UnsupportedOpError(
                f"braze.compile_decoder: {name} is not a causal LM of the Llama or GPT-2 kind (it needs "
                ".model.embed_tokens, .model.layers, .model.norm and .lm_head, as transformers' LlamaForCausalLM, "
                "MistralForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM and GemmaForCausalLM have, or "
                ".transformer.wte, .wpe, .h, .ln_f and .lm_head, as GPT2LMHeadModel has)")
        config = getattr(lm, "config", None)
        for i, layer in enumerate(base.layers):
            missing = [p for p in _LAYER_PARTS if not hasattr(layer, p)]
            extra = [p for p in _EXTRA_NORMS if hasattr(layer, p)]
            attn = getattr(layer, "self_attn", None)
            if not missing and not all(hasattr(attn, p) for p in ("q_proj", "k_proj", "v_proj", "o_proj")):
                missing = ["self_attn.q_proj/k_proj/v_proj/o_proj (separate projections)"]
            if missing or extra:
                raise UnsupportedOpError(
                    f"braze.compile_decoder: {name}'s layer {i} ({type(layer).__name__}) is not the standard "
                    f"pre-norm decoder layer braze rebuilds: " +
                    (f"it lacks {', '.join(missing)}" if missing else f"it has {', '.join(extra)}") +
                    "; supported: Llama, Mistral, Qwen2, Qwen3 and Gemma (1) layers")
        softcap = getattr(config, "attn_logit_softcapping", None) or getattr(config, "final_logit_softcapping", None)
        if softcap:
            raise UnsupportedOpError(f"braze.compile_decoder: {name} caps its logits (softcapping={softcap}), "
                                     "which braze's decoder does not do yet")
        self.lm = lm
        self.rotary = getattr(base, "rotary_emb", None)
        if self.rotary is None:
            raise UnsupportedOpError(f"braze.compile_decoder: {name}.model has no rotary_emb (transformers >= 4.48 "
                                     "keeps one rotary embedding per model): update transformers")
        attn = base.layers[0].self_attn
        self.head_dim = int(getattr(attn, "head_dim", None) or config.hidden_size // config.num_attention_heads)
        self.heads = int(config.num_attention_heads)
        self.kv_heads = int(getattr(config, "num_key_value_heads", None) or self.heads)
        self.layers = len(base.layers)
        window = getattr(config, "sliding_window", None)
        self.window = int(window) if window and getattr(config, "use_sliding_window", True) else None
        model_type = getattr(config, "model_type", "")
        self.embed_scale = math.sqrt(config.hidden_size) if model_type == "gemma" else None
        # One projection for q, k and v, and one for the MLP's gate and up, where they are plain
        # Linears: a decode step reads the same weights in a third of the matmul kernels (each
        # output is the same dot product; the joined weights are the program's constants, and
        # the separate ones go unused).
        self.joined = {}
        for i, layer in enumerate(base.layers):
            attn, mlp = layer.self_attn, layer.mlp
            qkv = _joined(attn.q_proj, attn.k_proj, attn.v_proj)
            if qkv is not None:
                self.register_buffer(f"qkv_weight_{i}", qkv[0], persistent=False)
                if qkv[1] is not None:
                    self.register_buffer(f"qkv_bias_{i}", qkv[1], persistent=False)
                self.joined[i] = "qkv"
            if all(hasattr(mlp, p) for p in ("gate_proj", "up_proj", "down_proj", "act_fn")):
                gate_up = _joined(mlp.gate_proj, mlp.up_proj)
                if gate_up is not None and gate_up[1] is None:
                    self.register_buffer(f"gate_up_weight_{i}", gate_up[0], persistent=False)
                    self.joined[i] = self.joined.get(i, "") + "+mlp"

    def _init_gpt2(self, lm: nn.Module, name: str) -> None:
        """GPT-2's block: LayerNorm, one fused q/k/v projection (Conv1D), learned positions, GELU MLP."""
        config = lm.config
        for i, block in enumerate(lm.transformer.h):
            attn = getattr(block, "attn", None)
            missing = [p for p in ("ln_1", "attn", "ln_2", "mlp") if not hasattr(block, p)]
            if not missing and not all(hasattr(attn, p) for p in ("c_attn", "c_proj")):
                missing = ["attn.c_attn/c_proj"]
            if missing or getattr(block, "crossattention", None) is not None or getattr(attn, "is_cross_attention", False):
                raise UnsupportedOpError(
                    f"braze.compile_decoder: {name}'s block {i} ({type(block).__name__}) is not GPT-2's decoder block: " +
                    (f"it lacks {', '.join(missing)}" if missing else "it has cross-attention"))
        self.kind = "gpt2"
        self.lm = lm
        self.layers = len(lm.transformer.h)
        self.heads = self.kv_heads = int(config.num_attention_heads)
        self.hidden = int(config.hidden_size)
        self.head_dim = self.hidden // self.heads
        self.window = None
        self.scales = []  # transformers' GPT2Attention: 1/sqrt(head_dim), optionally / (layer + 1)
        for i, block in enumerate(lm.transformer.h):
            scale = self.head_dim ** -0.5 if getattr(block.attn, "scale_attn_weights", True) else 1.0
            if getattr(block.attn, "scale_attn_by_inverse_layer_idx", False):
                scale /= float((block.attn.layer_idx if block.attn.layer_idx is not None else i) + 1)
            self.scales.append(scale)

    def cache_shape(self, batch: int, length: int) -> tuple[int, int, int, int]:
        return (batch, self.kv_heads, length, self.head_dim)

    def _mask(self, positions, length: int, dtype):
        """SDPA's additive mask over the cache, [1, 1, T, S]: 0 where query t sees slot s (s up to
        its position, within the sliding window), -inf elsewhere. The same attention as a boolean
        mask (every query sees at least its own slot), in the form that stays one attention op:
        torch-mlir lowers SDPA whole only with a 4-D mask, and braze's flash-attention kernel reads
        float masks (a 2-D boolean one left SDPA to IREE as six dispatches a layer)."""
        slots = torch.arange(length, device=positions.device)
        visible = slots[None, :] <= positions[:, None]  # [T, S]
        if self.window is not None:
            visible = visible & (slots[None, :] > positions[:, None] - self.window)
        return torch.zeros(visible.shape, dtype=dtype).masked_fill(~visible, float("-inf"))[None, None]

    def _attend(self, q, k, v, keys, values, positions, mask, scale: float):
        """The step's keys and values written into their cache slots, then attention over the cache.

        Each written as itself plus 0.0 (the same values; -0.0 becomes +0.0): IREE 3.13 compiles a
        scatter whose updates are read straight from a buffer as one thread looping over them,
        which for the values (taken from the q/k/v projection as they are) was 11.7 us a layer
        on an H200, 22% of a 0.5B decode step; with an elementwise producer fused into it, the
        scatter is spread over its threads, as the keys' (after RoPE) always were."""
        keys.index_copy_(2, positions, k + 0.0)
        values.index_copy_(2, positions, v + 0.0)
        if mask is None:  # a prefill: see _prefill_mask
            return nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True, scale=scale,
                                                              enable_gqa=self.heads != self.kv_heads)
        return nn.functional.scaled_dot_product_attention(q, keys, values, attn_mask=mask, scale=scale,
                                                          enable_gqa=self.heads != self.kv_heads)

    def _prefill_mask(self, positions, length: int, dtype):
        """The step's mask, or None for a prefill (T > 1 tokens: braze's Decoder starts every
        prompt at position 0): then the cache's slots a query sees are exactly the prompt's own
        keys up to its position, so the prefill attends over the T new keys and values with
        is_causal (braze's attention kernel skips the tiles past the diagonal) instead of over the
        whole cache through a mask (the same values; at a 512-token prompt in a 640-slot cache,
        2.5x fewer score tiles). A sliding window never binds here: compile_decoder keeps the cache
        within it."""
        if positions.shape[0] > 1:
            return None
        return self._mask(positions, length, dtype)

    def forward(self, input_ids, position, *caches):
        if self.kind == "gpt2":
            return self._forward_gpt2(input_ids, position, *caches)
        base = self.lm.model
        batch, count = input_ids.shape
        positions = position + torch.arange(count, device=input_ids.device)  # [T]
        x = base.embed_tokens(input_ids)
        if self.embed_scale is not None:
            x = x * torch.tensor(self.embed_scale, dtype=x.dtype)
        cos, sin = self.rotary(x, positions[None, :].expand(batch, count))
        cos, sin = cos[:, None], sin[:, None]  # [B, 1, T, D]
        visible = self._prefill_mask(positions, caches[0].shape[2], x.dtype)
        for i, layer in enumerate(base.layers):
            attn = layer.self_attn
            h = layer.input_layernorm(x)
            joined = self.joined.get(i, "")
            if joined.startswith("qkv"):
                q, k, v = nn.functional.linear(h, getattr(self, f"qkv_weight_{i}"),
                                               getattr(self, f"qkv_bias_{i}", None)).split(
                    [self.heads * self.head_dim, self.kv_heads * self.head_dim, self.kv_heads * self.head_dim], -1)
            else:
                q, k, v = attn.q_proj(h), attn.k_proj(h), attn.v_proj(h)
            q = q.reshape(batch, count, self.heads, self.head_dim)
            k = k.reshape(batch, count, self.kv_heads, self.head_dim)
            v = v.reshape(batch, count, self.kv_heads, self.head_dim)
            if hasattr(attn, "q_norm"):
                q, k = attn.q_norm(q), attn.k_norm(k)
            q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
            q, k = _rope(q, cos, sin), _rope(k, cos, sin)
            o = self._attend(q, k, v, caches[2 * i], caches[2 * i + 1], positions, visible, float(attn.scaling))
            o = o.transpose(1, 2).reshape(batch, count, self.heads * self.head_dim)
            x = x + attn.o_proj(o)
            h = layer.post_attention_layernorm(x)
            if joined.endswith("mlp"):
                mlp = layer.mlp
                gate, up = nn.functional.linear(h, getattr(self, f"gate_up_weight_{i}")).chunk(2, dim=-1)
                x = x + mlp.down_proj(mlp.act_fn(gate) * up)
            else:
                x = x + layer.mlp(h)
        return self.lm.lm_head(base.norm(x[:, -1]))

    def _forward_gpt2(self, input_ids, position, *caches):
        t = self.lm.transformer
        batch, count = input_ids.shape
        positions = position + torch.arange(count, device=input_ids.device)  # [T]
        x = t.wte(input_ids) + t.wpe(positions)[None]
        visible = self._prefill_mask(positions, caches[0].shape[2], x.dtype)
        for i, block in enumerate(t.h):
            q, k, v = block.attn.c_attn(block.ln_1(x)).split(self.hidden, dim=2)
            q, k, v = (z.view(batch, count, self.heads, self.head_dim).transpose(1, 2) for z in (q, k, v))
            o = self._attend(q, k, v, caches[2 * i], caches[2 * i + 1], positions, visible, self.scales[i])
            x = x + _conv1d(block.attn.c_proj, o.transpose(1, 2).reshape(batch, count, self.hidden))
            x = x + block.mlp(block.ln_2(x))
        return self.lm.lm_head(t.ln_f(x[:, -1]))


def compile_decoder(model, batch_size: int = 1, max_cache_len: int = 256, device: str = "cpu",
                    **options):
    """A causal LM's prefill and decode step compiled by braze over a static key/value cache of
    `max_cache_len` positions for `batch_size` sequences (a braze.runtime.decoder.Decoder: its
    prefill for a prompt length is compiled on first use; `save` keeps the programs compiled).

    model: a transformers causal LM with the standard decoder layer (Llama, Mistral, Qwen2,
      Qwen3, Gemma), in eval mode, in the dtype to run (the cache takes the model's dtype).
    options: braze.compile's options for both programs (target, precision, cache, ...).
    """
    if not isinstance(batch_size, int) or batch_size < 1:
        raise InputError(f"batch_size={batch_size!r}: give a positive number of sequences")
    if not isinstance(max_cache_len, int) or max_cache_len < 2:
        raise InputError(f"max_cache_len={max_cache_len!r}: give the number of positions the cache holds "
                         "(prompt plus new tokens), at least 2")
    if getattr(model, "training", False):
        raise InputError(f"braze.compile_decoder: {type(model).__name__} is in training mode; call model.eval() first")
    step = DecoderStep(model).eval()
    limit = getattr(getattr(model, "config", None), "max_position_embeddings", None)
    if limit and max_cache_len > limit:
        raise InputError(f"max_cache_len={max_cache_len} exceeds the model's max_position_embeddings ({limit})")
    if step.window is not None and max_cache_len > step.window:
        raise UnsupportedOpError(f"max_cache_len={max_cache_len} exceeds {type(model).__name__}'s sliding window "
                                 f"({step.window}): braze's decoder keeps a full cache, not a rolling one")
    dtype = next(model.parameters()).dtype
    shape = step.cache_shape(batch_size, max_cache_len)

    def compile_step(count: int):
        from braze.compiler.stages import compile as braze_compile
        from braze.errors import InternalError

        ids = torch.zeros(batch_size, count, dtype=torch.long)
        examples = [torch.zeros(shape, dtype=dtype) for _ in range(2 * step.layers)]
        module = braze_compile(step, ids, torch.zeros(1, dtype=torch.long), *examples, device=device,
                               inputs_in_place=True, **options)
        slots = set(range(2, 2 + len(examples)))
        written = {m["index"] for m in module.signature.mutations if m["kind"] == "input"}
        if written != slots or module.signature.state:
            raise InternalError(f"braze.compile_decoder: the step program updates inputs {sorted(written)} and "
                                f"state {module.signature.state}, where braze expected its caches "
                                f"{sorted(slots)} (reproduce: braze.compile_decoder on the same model)")
        return module

    return Decoder({1: compile_step(1)}, compile_step=compile_step)


def generate(model, input_ids, max_new_tokens: int = 20, max_cache_len: int | None = None,
             device: str = "cpu", do_sample: bool = False, temperature: float = 1.0, top_k: int | None = None,
             top_p: float | None = None, generator=None, eos_token_id=None, pad_token_id=None,
             attention_mask=None, **options):
    """transformers' `model.generate(input_ids, max_new_tokens=...)` through braze: the prompt and
    the new tokens, [batch, prompt + new] (fewer columns when every sequence ended early).

    Greedy by default; do_sample=True samples with temperature, top_k and top_p (applied in that
    order, as transformers does) from `generator` (a seeded torch.Generator for reproducible
    tokens). eos_token_id (an int or a list; default the model's generation config's) ends a
    sequence, which is then padded with pad_token_id. The decoder is compiled for this batch and
    a cache of max_cache_len positions (default prompt + new tokens); braze's compile cache keeps
    both programs for the next call.
    """
    ids = torch.as_tensor(input_ids)
    if ids.dim() != 2:
        raise InputError(f"input_ids: expected [batch, tokens], got shape {tuple(ids.shape)}")
    length = max_cache_len or ids.shape[1] + max_new_tokens
    decoder = compile_decoder(model, batch_size=ids.shape[0], max_cache_len=length, device=device, **options)
    config = getattr(model, "generation_config", None)
    if eos_token_id is None and config is not None:
        eos_token_id = config.eos_token_id
    if pad_token_id is None and config is not None:
        pad_token_id = config.pad_token_id
    return decoder.generate(ids, max_new_tokens=max_new_tokens, do_sample=do_sample, temperature=temperature,
                            top_k=top_k, top_p=top_p, generator=generator, eos_token_id=eos_token_id,
                            pad_token_id=pad_token_id, attention_mask=attention_mask)
