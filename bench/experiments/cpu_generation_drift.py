"""bf16 drift on the CPU, several prompts (bench/NOTES.md §55): for each prompt, eager bf16's and
braze's first new greedy token differing from eager float32 on the same weights, and teacher
forcing (float32's tokens fed a step at a time: argmax misses, mean relative logit error).

    python bench/experiments/cpu_generation_drift.py [MODEL] [PROMPTS] [NEW]   (default qwen2-30m-bf16 4 48)
"""
import copy, sys, time
import torch
import braze
from braze.testing import generation as gen

model = sys.argv[1] if len(sys.argv) > 1 else "qwen2-30m-bf16"
prompts = int(sys.argv[2]) if len(sys.argv) > 2 else 4
new = int(sys.argv[3]) if len(sys.argv) > 3 else 48
plen = 32
lm = gen.model_for(model)
wide = copy.deepcopy(lm).float()
t0 = time.time()
dec = braze.compile_decoder(lm, batch_size=1, max_cache_len=plen + new + 1, device="cpu", cache=False)
dec.program(plen)
print("compiled", time.time() - t0, flush=True)

def eager_steps(m, seq, plen):
    """logits after each position >= plen-1, feeding seq one token a step after the prompt."""
    out = m(seq[:, :plen], use_cache=True)
    pkv, logits = out.past_key_values, [out.logits[:, -1]]
    for t in range(plen, seq.shape[1] - 1):
        out = m(seq[:, t:t + 1], past_key_values=pkv, use_cache=True)
        pkv = out.past_key_values
        logits.append(out.logits[:, -1])
    return torch.stack(logits, 1).float()

def braze_steps(seq, plen):
    logits = [dec.prefill(seq[:, :plen])]
    for t in range(plen, seq.shape[1] - 1):
        logits.append(dec.decode(seq[:, t]))
    return torch.stack(logits, 1).float()

def greedy_eager(m, ids):
    out = m.generate(ids, max_new_tokens=new, min_new_tokens=new, do_sample=False, pad_token_id=0,
                     attention_mask=torch.ones_like(ids))
    return out

def first_diff(a, b):
    d = (a != b).any(0).nonzero()
    return int(d[0]) - plen if len(d) else None

with torch.no_grad():
    rows = []
    for s in range(prompts):
        ids = gen.prompt_ids(lm.config.vocab_size, 1, plen, seed=s + 1)
        ref = greedy_eager(wide, ids)
        e16 = greedy_eager(lm, ids)
        b16 = dec.generate(ids, max_new_tokens=new)
        l32 = eager_steps(wide, ref, plen)
        le = eager_steps(lm, ref, plen)
        lb = braze_steps(ref, plen)
        tgt = ref[:, plen:]
        dis_e = int((le.argmax(-1) != tgt).sum()); dis_b = int((lb.argmax(-1) != tgt).sum())
        err_e = float(((le - l32).abs().amax(-1) / l32.abs().amax(-1)).mean())
        err_b = float(((lb - l32).abs().amax(-1) / l32.abs().amax(-1)).mean())
        err_eb = float(((lb - le).abs().amax(-1) / l32.abs().amax(-1)).mean())
        rows.append((s, first_diff(e16, ref), first_diff(b16, ref), dis_e, dis_b, err_e, err_b, err_eb))
        print(f"prompt {s}: first diff eager {rows[-1][1]} braze {rows[-1][2]}; teacher-forced argmax misses "
              f"eager {dis_e} braze {dis_b} of {tgt.shape[1]}; mean rel max logit err eager {err_e:.4f} "
              f"braze {err_b:.4f} (braze vs eager {err_eb:.4f})", flush=True)
