"""braze bench's text-generation rows (`--workloads generate_*`): names, the measurement here and
through build/run (weights stripped for the transfer and restored from the seed), the table."""

import hashlib
import json

import pytest

pytest.importorskip("transformers")

from braze.errors import UsageError  # noqa: E402
from braze.testing import generation  # noqa: E402
from braze.tools import bench  # noqa: E402


def test_generation_names():
    (w,) = generation.parse(["generate_qwen2-0.5b_p512_b8"], "cuda")
    assert (w.model, w.prompt, w.batch, w.new) == ("qwen2-0.5b", 512, 8, 128)
    assert w.name == "generate_qwen2-0.5b_p512_b8" and w.cache_len == 640
    (w,) = generation.parse(["generate_qwen2-1.5b"], "cuda")
    assert (w.prompt, w.batch) == (128, 1)
    matrix = generation.parse(["generate"], "cuda")
    assert {(w.model, w.prompt, w.batch) for w in matrix} == {
        (m, p, b) for m in ("qwen2-0.5b", "qwen2-1.5b") for p in (128, 512) for b in (1, 8)}
    for bad in ("generate_llama-7b", "generate_qwen2-0.5b_p0", "generate_qwen2-0.5b_x3"):
        with pytest.raises(UsageError, match="generat"):
            generation.parse([bad], "cpu")


def test_bench_refuses_an_unknown_generation_workload(capsys):
    assert bench.main(["--workloads", "generate_gpt5", "--torch-compile-modes", "none"]) == 2
    assert "unknown generation workload 'generate_gpt5'" in capsys.readouterr().err


def _digests(folder):
    return {f.name: hashlib.sha256(f.read_bytes()).hexdigest() for f in sorted(folder.glob("*.braze"))}


def test_strip_then_restore_gives_the_same_bytes(tmp_path):
    import braze

    lm = generation.model_for("qwen2-tiny")
    # CUDA programs hold their weights verbatim; the CPU's data tiling packs them at compile time
    # (bench/notes/57), where strip leaves them: without it the CPU programs hold them verbatim too
    dec = braze.compile_decoder(lm, batch_size=1, max_cache_len=8, cache=False,
                                pipeline="fusion-cpu-pipeline{data-tiling=off}")
    dec.program(4)
    folder = dec.save(tmp_path / "d.decoder")
    before = _digests(folder)
    zeroed, size = generation.strip(str(folder), lm)
    assert zeroed >= 2 * 2 * 7 and size > 0  # both programs: every projection of both layers (and the head)
    assert _digests(folder) != before
    entries = json.loads((folder / "strip.json").read_text())
    file, _, at, n = entries[0]
    assert (folder / file).read_bytes()[at:at + n] == bytes(n)
    assert generation.restore(str(folder), generation.model_for("qwen2-tiny")) == zeroed
    assert _digests(folder) == before and not (folder / "strip.json").exists()


@pytest.mark.slow
def test_generate_build_then_run(tmp_path):
    art = tmp_path / "art"
    assert bench.main(["build", str(art), "--device", "cpu", "--workloads", "generate_qwen2-tiny_p16_b2"]) == 0
    folder = art / "generate" / "generate_qwen2-tiny_p16_b2.decoder"
    assert (folder / "strip.json").exists()  # the weights crossed as zeros
    out = tmp_path / "r.json"
    assert bench.main(["run", str(art), "--torch-compile-modes", "default", "--json", str(out)]) == 0
    result = json.loads(out.read_text())
    assert result["workloads"] == []
    (row,) = result["generate"]
    assert (row["name"], row["batch"], row["prompt"], row["new"]) == ("generate_qwen2-tiny_p16_b2", 2, 16, 128)
    assert set(row["contenders"]) == {"eager", "compiled", "braze"}
    for name, c in row["contenders"].items():
        assert c["status"] == "ok", (name, c["error"])
        assert c["tok_s"] > 0 and c["decode_ms"] > 0 and 0 < c["roofline_fraction"] < 1
        # float32 greedy: every contender's tokens are eager's (braze's only with its weights restored)
        assert c["first_difference"] is None, name
    assert set(row["prefill_ms"]) == {"eager", "inductor", "braze"}
    assert all(v["ms"] > 0 for v in row["prefill_ms"].values())
    text = bench.table(result)
    assert "| generate_qwen2-tiny_p16_b2 | 0.4 | braze |" in text
    assert "braze vs best torch.compile" in text
    merged = bench.merge([result, result])
    assert len(merged["generate"]) == 1
    assert bench.main(["table", str(out)]) == 0


def test_first_difference_by_hand():
    import torch

    from braze.tools.bench_generate import first_difference

    ref = torch.tensor([[1, 2, 3, 4, 5], [1, 2, 3, 4, 5]])
    assert first_difference(ref.clone(), ref, 2) is None
    other = ref.clone()
    other[1, 4] = 9
    assert first_difference(other, ref, 2) == 2
    other[0, 3] = 9
    assert first_difference(other, ref, 2) == 1


def test_float32_drift_against_a_float32_generate():
    """The 16-bit criterion: each contender's first new token differing from eager float32's. Given
    float32's own tokens it is None; given bf16 eager's it is where they part, found here by
    hand; the table prints both."""
    import torch

    from braze.tools.bench_generate import _greedy, float32_drift, table

    base = generation.model_for("qwen2-tiny")
    with torch.no_grad():  # larger weights: bf16's greedy tokens part from float32's within the 48
        for p in base.parameters():
            p.mul_(4.0)
    lm = copy_in(base, torch.bfloat16)  # parameters only: buffers (RoPE's) stay float32, as in a model built in bf16
    wide = copy_in(lm, torch.float32)
    ids = generation.prompt_ids(lm.config.vocab_size, 2, 16)

    class W:
        prompt, new, name = 16, 48, "generate_qwen2-tiny_p16_b2"

    with torch.no_grad():
        f32 = wide.generate(ids, **_greedy(ids, W.new))
        bf16 = lm.generate(ids, **_greedy(ids, W.new))
    apart = (bf16 != f32).any(0).nonzero()
    assert len(apart), "bf16 and float32 agree on every token: the case tests nothing"
    drift, forced = float32_drift(lm, ids, W, {"eager": bf16, "braze": f32})
    assert drift == {"eager": int(apart[0]) - 16, "braze": None}
    assert set(forced) == {"eager"} and forced["eager"]["steps"] == 2 * W.new
    assert 0.0 < forced["eager"]["logit_error"] < float("inf")
    row = {"name": W.name, "weights_mb": 0.4, "contenders": {}, "prefill_ms": {}, "drift": drift,
           "teacher_forced": forced}
    text = "\n".join(table([row]))
    assert f"| {W.name} | {int(apart[0]) - 16} | none |" in text
    assert f"| {W.name} | {forced['eager']['misses']} of {2 * W.new} | — |" in text


class _SteppedModel:
    """A decoder stand-in (prefill/decode as braze's Decoder) that steps a transformers model on
    its own cache and lets a test change the logits of chosen steps."""

    def __init__(self, model, change=None):
        self.model, self.change, self.step = model, change or {}, 0

    def _out(self, out):
        self.cache = out.past_key_values
        logits = out.logits[:, -1].clone()
        if self.step in self.change:
            self.change[self.step](logits)
        self.step += 1
        return logits

    def prefill(self, ids):
        self.step = 0
        return self._out(self.model(ids, use_cache=True))

    def decode(self, tokens):
        return self._out(self.model(tokens.reshape(-1, 1), past_key_values=self.cache, use_cache=True))


def test_teacher_forced_counts_every_step_against_float32():
    """teacher_forced against hand-made contenders: float32 itself (no misses, no error), float32
    with one step's argmax moved to another token (one miss, that step's error alone), and a NaN
    in one step (an infinite error, not a NaN that compares as small)."""
    import torch

    from braze.tools.bench_generate import _greedy, teacher_forced

    wide = generation.model_for("qwen2-tiny")
    lm = copy_in(wide, torch.bfloat16)
    ids = generation.prompt_ids(wide.config.vocab_size, 1, 8)
    with torch.no_grad():
        reference = wide.generate(ids, **_greedy(ids, 12))
    assert teacher_forced(lm, wide, reference, 8, _SteppedModel(wide))["braze"] == \
        {"misses": 0, "steps": 12, "logit_error": 0.0}
    wrong = int(reference[0, 8 + 5]) ^ 1  # step 5's logits: another token on top by 1.0

    def move(logits):
        logits[0, wrong] = logits[0].max() + 1.0

    got = teacher_forced(lm, wide, reference, 8, _SteppedModel(wide, {5: move}))
    assert got["braze"]["misses"] == 1 and got["braze"]["steps"] == 12
    with torch.no_grad():  # float32's step 5, stepped by hand: the one step's error over 12 steps
        stepper = _SteppedModel(wide)
        stepper.prefill(reference[:, :8])
        for t in range(8, 8 + 5):
            logits = stepper.decode(reference[:, t])[0]
    by_hand = float(logits.max() + 1.0 - logits[wrong]) / float(logits.abs().max()) / 12
    assert abs(got["braze"]["logit_error"] - by_hand) <= 1e-6 * by_hand
    nan = teacher_forced(lm, wide, reference, 8, _SteppedModel(wide, {3: lambda x: x.__setitem__((0, 7), float("nan"))}))
    assert nan["braze"]["logit_error"] == float("inf")
    assert nan["eager"]["steps"] == 12 and nan["eager"]["logit_error"] > 0.0


def copy_in(model, dtype):
    """A deep copy of `model` with its parameters in `dtype` (buffers as they are)."""
    import copy

    import torch

    other = copy.deepcopy(model)
    with torch.no_grad():
        for p in other.parameters():
            p.data = p.data.to(dtype)
    return other
