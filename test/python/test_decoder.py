"""braze.compile_decoder / braze.generate on the CPU: transformers' own causal LMs (random
weights, tiny configurations of each supported family) generate the tokens transformers' eager
generate() does, the cache is updated in place, and bad input is refused by name."""

import copy

import pytest
import torch

import braze

transformers = pytest.importorskip("transformers")

VOCAB = 97


def _config(family: str, **extra):
    common = dict(vocab_size=VOCAB, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
                  num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64, **extra)
    if family == "llama":
        return transformers.LlamaConfig(**common)
    if family == "qwen2":  # biased q/k/v projections
        return transformers.Qwen2Config(**common)
    if family == "qwen3":  # per-head q/k RMSNorm, head_dim apart from hidden/heads
        return transformers.Qwen3Config(head_dim=24, **common)
    if family == "mistral":
        return transformers.MistralConfig(sliding_window=None, **common)
    if family == "gemma":  # embeddings scaled by sqrt(hidden), (1 + w) norms, tanh GELU, MQA
        return transformers.GemmaConfig(head_dim=16, **{**common, "num_key_value_heads": 1})
    if family == "gpt2":  # learned positions, fused q/k/v Conv1D, LayerNorm, tied head
        return transformers.GPT2Config(vocab_size=VOCAB, n_embd=64, n_layer=2, n_head=4, n_positions=64, **extra)
    raise ValueError(family)


def _model(family: str, dtype=torch.float32, seed: int = 0, **extra):
    torch.manual_seed(seed)
    config = _config(family, **extra)
    model = transformers.AutoModelForCausalLM.from_config(config).eval()
    with torch.no_grad():  # transformers initialises norms to the identity and biases to zero: make them count
        for name, p in model.named_parameters():
            if p.dim() == 1:
                p.add_(torch.randn_like(p) * 0.2)
    return model.to(dtype)


def _prompt(batch: int, length: int, seed: int = 1):
    return torch.randint(0, VOCAB, (batch, length), generator=torch.Generator().manual_seed(seed))


def _eager(model, ids, new: int, **kw):
    with torch.no_grad():
        return model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=new, do_sample=False,
                              pad_token_id=0, **kw)


@pytest.mark.parametrize("family,extra", [
    ("llama", {}), ("qwen3", {}), ("gemma", {}),
    # GPT-2's two: --run-extended only (CI's 30 minutes); in CI its prefill and decode logits are
    # checked against float64 (test_gpt2_step_logits_match_the_model_in_float64), a stronger test
    pytest.param("gpt2", {}, marks=pytest.mark.extended),
    pytest.param("gpt2", {"scale_attn_by_inverse_layer_idx": True}, marks=pytest.mark.extended)],
    ids=["llama", "qwen3", "gemma", "gpt2", "gpt2-layer-scaled"])  # qwen2 (biases): the eos test
def test_greedy_tokens_equal_transformers_generate(family, extra):
    model = _model(family, **extra)
    ids = _prompt(2, 7)
    want = _eager(model, ids, 12, eos_token_id=None)
    got = braze.generate(model, ids, max_new_tokens=12, eos_token_id=None, cache=False)
    assert torch.equal(got, want), f"{family}: braze {got.tolist()} != transformers {want.tolist()}"


def test_cache_is_updated_in_place_and_holds_the_step_keys():
    """The decode program writes its keys into the decoder's own cache tensors (no copy comes
    back), and the keys it writes are those the eager step computes (float64 reference)."""
    model = _model("llama")
    dec = braze.compile_decoder(model, batch_size=1, max_cache_len=16, cache=False)
    ids = _prompt(1, 5)
    dec.prefill(ids)
    before = [c.clone() for c in dec.caches]
    module = dec.programs[1]
    token, position = torch.tensor([[3]]), torch.tensor([5])
    outputs = module.program.call_torch([token, position, *dec.caches], ["ids", "position"] +
                                        [f"cache {i}" for i in range(len(dec.caches))])
    for cache, new in zip(dec.caches, outputs[:len(dec.caches)]):
        assert new.data_ptr() == cache.data_ptr(), "the step's cache update came back in a copy"
    from braze.compiler.decoder import DecoderStep

    reference = DecoderStep(copy.deepcopy(model)).double()
    caches64 = [c.double() for c in before]
    with torch.no_grad():
        reference(token, position, *caches64)
    for cache, want, old in zip(dec.caches, caches64, before):
        assert torch.equal(cache[:, :, :5], old[:, :, :5]), "positions before the step changed"
        assert (cache[:, :, 5].double() - want[:, :, 5]).abs().max() < 1e-5
        assert torch.equal(cache[:, :, 6:], old[:, :, 6:]), "positions after the step changed"
        assert not torch.equal(cache[:, :, 5], old[:, :, 5])


def test_eos_ends_each_sequence_and_pads_as_transformers_does():
    model = _model("qwen2")
    ids = _prompt(2, 6, seed=3)
    free = _eager(model, ids, 10, eos_token_id=None)
    eos = int(free[0, 6 + 2])  # the first sequence's third new token
    want = _eager(model, ids, 10, eos_token_id=eos)
    got = braze.generate(model, ids, max_new_tokens=10, eos_token_id=eos, pad_token_id=0, cache=False)
    assert torch.equal(got, want), f"braze {got.tolist()} != transformers {want.tolist()}"


def test_bfloat16_drifts_no_earlier_than_eager_bfloat16():
    """In bf16, braze's greedy tokens leave float32's no earlier than eager bf16's do."""
    model = _model("llama")
    ids = _prompt(1, 8, seed=5)
    exact = _eager(model, ids, 16, eos_token_id=None)[0, 8:]
    model16 = _model("llama", torch.bfloat16)
    eager16 = _eager(model16, ids, 16, eos_token_id=None)[0, 8:]
    got = braze.generate(model16, ids, max_new_tokens=16, eos_token_id=None, cache=False)[0, 8:]

    def first_difference(a, b):
        differ = (a != b).nonzero()
        return int(differ[0]) if len(differ) else len(a)

    assert first_difference(got, exact) >= first_difference(eager16, exact), (got, eager16, exact)


def test_one_decoder_serves_several_prompts_and_sampling_is_seeded():
    model = _model("llama")
    dec = braze.compile_decoder(model, batch_size=1, max_cache_len=24, cache=False)
    for seed in (1, 2):  # a second sequence reuses the cache: stale positions must not leak in
        ids = _prompt(1, 6, seed=seed)
        assert torch.equal(dec.generate(ids, max_new_tokens=8), _eager(model, ids, 8, eos_token_id=None))
    ids = _prompt(1, 6)
    one = dec.generate(ids, max_new_tokens=8, do_sample=True, top_k=5, generator=torch.Generator().manual_seed(7))
    two = dec.generate(ids, max_new_tokens=8, do_sample=True, top_k=5, generator=torch.Generator().manual_seed(7))
    assert torch.equal(one, two)
    greedy = dec.generate(ids, max_new_tokens=8)
    assert torch.equal(dec.generate(ids, max_new_tokens=8, do_sample=True, top_k=1), greedy)
    assert torch.equal(dec.generate(ids, max_new_tokens=8, do_sample=True, top_p=1e-6), greedy)
    assert set(dec.programs) == {1, 6}, "one decode program and one prefill per prompt length"


def test_saved_decoder_generates_without_the_compiler(tmp_path):
    """load_decoder runs the saved programs; a prompt length without its own prefill program
    goes through the decode step a token at a time, to the same tokens."""
    model = _model("qwen3")
    dec = braze.compile_decoder(model, batch_size=2, max_cache_len=20, cache=False)
    ids = _prompt(2, 6)
    dec.prefill(ids)  # compiles the 6-token prefill
    path = dec.save(tmp_path / "lm.decoder")
    with pytest.raises(braze.ArtifactExistsError):
        dec.save(path)
    loaded = braze.load_decoder(path)
    assert set(loaded.programs) == {1, 6} and loaded.compile_step is None
    for prompt in (ids, _prompt(2, 5, seed=4)):
        assert torch.equal(loaded.generate(prompt, max_new_tokens=9), _eager(model, prompt, 9, eos_token_id=None))
    assert set(loaded.programs) == {1, 6}
    with pytest.raises(braze.ArtifactError, match="not a braze decoder"):
        braze.load_decoder(tmp_path)


def test_sampling_follows_temperature_top_k_and_top_p():
    from braze.runtime.decoder import _sample

    logits = torch.tensor([[2.0, 1.0, 0.5, 0.0, -1.0]])
    draws = 20000
    gen = torch.Generator().manual_seed(0)
    for kw, allowed in (({"temperature": 0.7}, [0, 1, 2, 3, 4]), ({"temperature": 1.0, "top_k": 3}, [0, 1, 2]),
                        ({"temperature": 1.0, "top_p": 0.8}, None)):
        scaled = logits / kw["temperature"]
        probs = torch.softmax(scaled, -1)[0]
        if allowed is None:  # the fewest most likely tokens whose probability reaches 0.8
            order = probs.argsort(descending=True)
            allowed = order[: int((probs[order].cumsum(0) < 0.8).sum()) + 1].tolist()
        want = torch.zeros(5, dtype=torch.float64)
        want[allowed] = probs[allowed].double() / probs[allowed].sum()
        got = torch.bincount(_sample(logits.expand(draws, 5), kw["temperature"], kw.get("top_k"), kw.get("top_p"),
                                     gen), minlength=5).double() / draws
        assert (got - want).abs().max() < 0.015, (kw, got, want)


def test_bad_input_is_refused_by_name():
    model = _model("llama")
    dec = braze.compile_decoder(model, batch_size=1, max_cache_len=10, cache=False)
    with pytest.raises(braze.InputError, match="before prefill"):
        dec.decode(torch.tensor([1]))
    with pytest.raises(braze.InputError, match="need 12 cache positions; the decoder has 10"):
        dec.generate(_prompt(1, 6), max_new_tokens=7)
    with pytest.raises(braze.InputError, match="expected \\[1, tokens\\]"):
        dec.prefill(_prompt(2, 4))
    with pytest.raises(braze.InputError, match="padding"):
        dec.generate(_prompt(1, 4), attention_mask=torch.tensor([[0, 1, 1, 1]]))
    with pytest.raises(braze.InputError, match="max_position_embeddings"):
        braze.compile_decoder(model, max_cache_len=65)
    cross = transformers.GPT2LMHeadModel(transformers.GPT2Config(n_layer=1, n_embd=32, n_head=2, vocab_size=VOCAB,
                                                                 add_cross_attention=True)).eval()
    with pytest.raises(braze.UnsupportedOpError, match="GPT2LMHeadModel's block 0 .* has cross-attention"):
        braze.compile_decoder(cross)
    bert = transformers.BertForMaskedLM(transformers.BertConfig(num_hidden_layers=1, hidden_size=32,
                                                                num_attention_heads=2, intermediate_size=64,
                                                                vocab_size=VOCAB)).eval()
    with pytest.raises(braze.UnsupportedOpError, match="BertForMaskedLM is not a causal LM of the Llama or GPT-2 kind"):
        braze.compile_decoder(bert)


class _Append(torch.nn.Module):
    """Writes x into the cache at pos (in place, as a KV cache is written) and reads it back."""

    def forward(self, x, pos, cache):
        cache.index_copy_(1, pos, x)
        return (cache * torch.arange(1, cache.shape[1] + 1)[None, :, None]).sum(1)


@pytest.mark.parametrize("abi", [{}, {"output_storage": True}, {"transient_storage": False}])
def test_inputs_in_place_writes_the_callers_tensor_as_eager_does(tmp_path, abi):
    """Each of braze's calling conventions (CUDA's is output storage and transients)."""
    torch.manual_seed(0)
    x, pos = torch.randn(2, 1, 4), torch.tensor([3])
    module = braze.compile(_Append().eval(), x, pos, torch.zeros(2, 8, 4), inputs_in_place=True, cache=False, **abi)
    assert module.abi["tied"] == [[2, 0]] and 2 not in module.abi["copy_inputs"]
    loaded = braze.load(module.save(tmp_path / "append.braze"))
    assert loaded.abi["tied"] == [[2, 0]]
    for fast in (module, loaded):
        start = torch.randn(2, 8, 4)
        for cache in (start.clone(), start.clone().transpose(0, 1).contiguous().transpose(0, 1)):  # the second: strided
            want_cache = start.clone()
            want = _Append()(x, pos, want_cache)
            ptr = cache.data_ptr()
            got = fast(x, pos, cache)
            torch.testing.assert_close(got, want, rtol=1e-6, atol=1e-5)
            assert torch.equal(cache, want_cache), "the caller's tensor does not hold the update"
            assert cache.data_ptr() == ptr


def test_cuda_decode_step_plan_is_iree_program_with_caches_in_place():
    """Compiled for an sm_90 GPU here: braze's launch plan exists, hands back each cache as its
    own result (the tied input, no output buffer, no copy step) and issues exactly the commands
    IREE's program does (plan_check replays the bytecode), the queue copy of a hoisted constant
    into the transient buffer included."""
    from braze.runtime.cuda import plan_check
    from braze.runtime.cuda.plan import Ref

    dec = braze.compile_decoder(_model("llama"), batch_size=1, max_cache_len=16, device="cuda", target="sm_90",
                                cache=False)
    module = dec.programs[1]
    assert module.plan is not None, module.report.launch_plan
    caches = len(module.signature.program_inputs) - 2
    assert [o.buffer for o in module.plan.outputs[:caches]] == [Ref("input", 2 + i) for i in range(caches)]
    assert all(o.offset == 0 for o in module.plan.outputs[:caches])
    assert not any(s.op == "copy" and s.target.kind == "input" for s in module.plan.steps)
    assert plan_check.check(module.vmfb, module.plan) == []


@pytest.mark.parametrize("extra", [{}, {"scale_attn_by_inverse_layer_idx": True}], ids=["gpt2", "gpt2-layer-scaled"])
def test_gpt2_step_logits_match_the_model_in_float64(extra):
    """GPT-2's prefill and decode logits against transformers' own forward over the whole sequence
    in float64 (tokens alone cannot tell a wrong attention scale in a tiny model)."""
    model = _model("gpt2", **extra)
    with torch.no_grad():  # GPT-2's init leaves attention near uniform, where a wrong scale hardly shows
        for block in model.transformer.h:
            block.attn.c_attn.weight.mul_(10)
    dec = braze.compile_decoder(model, batch_size=1, max_cache_len=16, cache=False)
    ids = _prompt(1, 6)
    exact = copy.deepcopy(model).double()
    got = [dec.prefill(ids)]
    for token in (5, 11):
        got.append(dec.decode(torch.tensor([token])))
    seq = torch.cat([ids, torch.tensor([[5, 11]])], dim=1)
    with torch.no_grad():
        want = exact(seq).logits[0, 5:]
    for step, logits in enumerate(got):
        err = float((logits[0].double() - want[step]).abs().max())
        assert err < 1e-4 * float(want[step].abs().max()), f"step {step}: error {err}"


@pytest.mark.parametrize("family", ["qwen2", "gpt2"])
def test_cuda_step_keeps_each_layers_attention_one_op(family):
    """For CUDA each layer's attention over the cache stays one attention op (braze's
    flash-attention kernel), and q/k/v and gate/up are one matmul each where the model has
    Linears: the step's mask is the 4-D additive one torch-mlir lowers whole (a 2-D boolean mask
    left SDPA decomposed: six IREE dispatches a layer)."""
    from braze.compiler import lower
    from braze.compiler.decoder import DecoderStep

    model = _model(family).to(torch.bfloat16)
    step = DecoderStep(model).eval()
    caches = [torch.zeros(step.cache_shape(1, 32), dtype=torch.bfloat16) for _ in range(2 * step.layers)]
    lowered = lower(step, torch.zeros(1, 1, dtype=torch.long), torch.zeros(1, dtype=torch.long), *caches,
                    device="cuda", target="sm_90")
    assert lowered.report.attention.get("fused") == step.layers, lowered.report.attention
    if family == "qwen2":
        assert sorted(step.joined.values()) == ["qkv+mlp"] * step.layers


@pytest.mark.parametrize("family", ["qwen2", "gpt2"])
def test_cuda_step_cache_writes_are_spread_over_threads(family):
    """Each layer's cache writes on CUDA are scatters whose PTX is spread over the workgroup's
    threads: IREE 3.13 compiles a scatter reading its updates straight from a buffer (the values
    from the projection; GPT-2's keys too) as one loop over them, with no thread index, 11.7 us a
    layer on an H200 (DecoderStep._attend writes x + 0.0, an elementwise producer IREE fuses)."""
    import re

    model = _model(family).to(torch.bfloat16)
    dec = braze.compile_decoder(model, batch_size=1, max_cache_len=32, device="cuda", target="sm_90", cache=False)
    plan = dec.programs[1].plan
    scatters = [(k.name, re.search(rf"\.entry {re.escape(k.name)}\(.*?\n}}", e.ptx[k.module], re.S).group(0))
                for e in plan.executables for k in e.kernels if "scatter" in k.name]
    layers = model.config.num_hidden_layers
    assert scatters  # one kernel for the keys and one for the values, or one for both (GPT-2's are alike)
    for name, body in scatters:
        assert "%tid.x" in body, f"{name} runs as one loop over its updates (no thread index in its PTX)"
    launched = [plan.executables[s.executable].kernels[s.kernel].name for s in plan.steps if s.op == "dispatch"]
    assert sum("scatter" in n for n in launched) == 2 * layers, launched


@pytest.mark.parametrize("family", ["qwen2", "gpt2"])
def test_cuda_prefill_attends_over_the_prompt_with_causal_tiles(family):
    """A prefill (T > 1, from position 0) attends over its own keys with is_causal, which braze's
    attention kernel applies by skipping tiles, not over the whole cache through a mask; the
    decode step keeps the mask over the cache (any position)."""
    from braze.compiler import lower
    from braze.compiler.decoder import DecoderStep

    model = _model(family).to(torch.bfloat16)
    step = DecoderStep(model).eval()
    caches = [torch.zeros(step.cache_shape(1, 32), dtype=torch.bfloat16) for _ in range(2 * step.layers)]
    for tokens, causal in ((8, step.layers), (1, 0)):
        lowered = lower(step, torch.zeros(1, tokens, dtype=torch.long), torch.zeros(1, dtype=torch.long), *caches,
                        device="cuda", target="sm_90")
        kernels = [line for line in lowered.report.table().splitlines() if ": attention " in line]
        assert len(kernels) == step.layers, kernels
        assert sum(", causal," in line for line in kernels) == causal, kernels
        assert all(f"x{tokens}x{tokens if causal else 32} " in line for line in kernels), kernels

