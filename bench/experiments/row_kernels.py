"""Row kernels against the memory roofline (issue 37: LayerNorm, RMSNorm and softmax at >= 70% of
copy bandwidth): braze's generated row kernel, IREE's dispatches for the same program
(fusion-cuda-pipeline{rows=off}), torch eager's kernel and torch.compile's (default mode), and a
copy of the input (the roofline: the same bytes read and written), kernel times by torch.profiler
in one process on the GPU host.

    here:   python bench/experiments/row_kernels.py build DIR
    there:  python3 bench/experiments/row_kernels.py run DIR

Prints per case: each contender's kernel time per call (sum of its kernels, mean of 20 calls),
the bytes the op must move (input, output and weights once) over that time, that as a fraction
of the copy's bandwidth, and each result's error against eager in float64 (braze.accuracy).
"""

import dataclasses
import json
import sys
from pathlib import Path

import torch
from transformer_kernels import kernel_table  # this folder's; the script runs from it

from braze.testing.zoo import RMSNorm

CASES = {
    # name: (model, shape, dtype) -- the transformer workloads' normalisations and a softmax
    "layernorm768_bf16_16k": ("layernorm", (32, 512, 768), "bfloat16"),      # causal_lm_block 32x512
    "layernorm768_bf16_131k": ("layernorm", (256, 512, 768), "bfloat16"),    # causal_lm_block 8x
    "layernorm768_f32_16k": ("layernorm", (32, 512, 768), "float32"),
    "layernorm768_bf16_vit": ("layernorm", (64, 197, 768), "bfloat16"),      # vit_layer batch 64
    "rmsnorm2048_bf16_2k": ("rmsnorm", (1, 2048, 2048), "bfloat16"),         # gqa_decoder 2k prefill
    "rmsnorm2048_bf16_16k": ("rmsnorm", (8, 2048, 2048), "bfloat16"),        # gqa_decoder 8x
    "softmax197_f32": ("softmax", (64 * 12, 197, 197), "float32"),           # the ViT scores
}


class Softmax(torch.nn.Module):
    def forward(self, x):
        return torch.softmax(x * 0.125, dim=-1)


def make(case: str):
    kind, shape, dtype = CASES[case]
    torch.manual_seed(0)
    dt = getattr(torch, dtype)
    if kind == "layernorm":
        model = torch.nn.LayerNorm(shape[-1])
        with torch.no_grad():
            model.weight.copy_(1 + 0.1 * torch.randn(shape[-1]))
            model.bias.copy_(0.1 * torch.randn(shape[-1]))
    elif kind == "rmsnorm":
        model = RMSNorm(shape[-1])
        with torch.no_grad():
            model.weight.copy_(1 + 0.1 * torch.randn(shape[-1]))
    else:
        model = Softmax()
    x = (torch.randn(shape) * 2 + 0.5).to(dt)
    return model.to(dt).eval(), x


def build(directory: Path) -> None:
    import braze
    from braze.passes import pipelines

    from braze.kernels import rows
    from braze.kernels.spec import tile_text
    from braze.targets import cuda_sm_count

    directory.mkdir(parents=True, exist_ok=True)
    base = pipelines.for_device("cuda", "sm_90")
    tiles = {}
    for case in CASES:
        model, x = make(case)
        for variant, pipeline in (("rows", None), ("iree", dataclasses.replace(base, rows="off").pipeline_text())):
            compiled = braze.compile(model, x, device="cuda", target="sm_90", cache=False, pipeline=pipeline)
            kernels = [k for k in compiled.report.kernels if k["generated"]]
            print(f"{case} {variant}: {[k['kernel'] for k in kernels]}", flush=True)
            compiled.save(directory / f"{case}-{variant}.braze", overwrite=True)
            if variant == "rows":  # every tile `braze tune` would try, for the cost model's next fit
                (kernel,) = kernels
                spec = _spec_of(model, x)
                tiles[case] = []
                for tile in rows.candidates(spec, cuda_sm_count("sm_90"))[1:]:
                    forced = dataclasses.replace(base, kernel_tiles=f"{kernel['signature']}={tile_text(tile)}")
                    braze.compile(model, x, device="cuda", target="sm_90", cache=False,
                                  pipeline=forced.pipeline_text()).save(
                        directory / f"{case}-tile{tile_text(tile)}.braze", overwrite=True)
                    tiles[case].append(tile_text(tile))
    (directory / "tiles.json").write_text(json.dumps(tiles))


def _spec_of(model, x):
    from braze._mlir import ir
    from braze.compiler import lower
    from braze.irutil import all_ops
    from braze.kernels.spec import ATTR, read_spec

    lowered = lower(model, x, device="cuda", target="sm_90")
    with lowered.context:
        (spec,) = [read_spec(ir.StringAttr(f.attributes[ATTR]).value)
                   for f in all_ops(lowered.module.operation, "func.func") if ATTR in f.attributes]
    return spec


def kernel_ms(fn, args, calls: int = 20) -> tuple[float, list]:
    """(kernel ms per call, the kernels largest first): transformer_kernels' profiler table."""
    table = kernel_table(fn, args, calls)
    return sum(t for _, t in table), table


def run(directory: Path) -> None:
    import braze
    from braze.accuracy import max_error

    print(torch.cuda.get_device_name(), flush=True)
    tiles = json.loads((directory / "tiles.json").read_text())
    print(f"{'case':24} {'contender':10} {'ms':>8} {'GB/s':>7} {'of copy':>8} {'error':>9}  largest kernel")
    for case in CASES:
        model, x = make(case)
        with torch.no_grad():
            want = model.double()(x.double())
        model = model.to(x.dtype)
        xc = model.cuda(), x.cuda()
        model, xg = xc
        weights = sum(p.numel() * p.element_size() for p in model.parameters())
        moved = 2 * xg.numel() * xg.element_size() + weights
        contenders = {
            "copy": lambda t: torch.empty_like(t).copy_(t),
            "braze": braze.load(directory / f"{case}-rows.braze", device="cuda"),
            "iree": braze.load(directory / f"{case}-iree.braze", device="cuda"),
            "eager": model,
            "inductor": torch.compile(model),
        }
        for tile in tiles.get(case, []):
            contenders[f"tile {tile}"] = braze.load(directory / f"{case}-tile{tile}.braze", device="cuda")
        copy_gbs = None
        for who, fn in contenders.items():
            with torch.no_grad():
                ms, table = kernel_ms(fn, (xg,))
                err = max_error(fn(xg).cpu(), want) if who != "copy" else 0.0
            bytes_ = 2 * xg.numel() * xg.element_size() if who == "copy" else moved
            gbs = bytes_ / ms / 1e6
            copy_gbs = copy_gbs or gbs
            top = f"{table[0][0][:60]} ({len(table)} kernels)" if table else ""
            print(f"{case:24} {who:12} {ms:8.4f} {gbs:7.0f} {gbs / copy_gbs:8.0%} {err:9.2e}  {top}", flush=True)


if __name__ == "__main__":
    {"build": build, "run": run}[sys.argv[1]](Path(sys.argv[2]))
