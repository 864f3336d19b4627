"""Compile variants of bench workloads side by side: per-call time against eager, and kernels.

    python bench/experiments/variants.py build DIR [SET]     # here: DIR/WORKLOAD.VARIANT/m.braze, its
                                      # weight matrices zeroed (put back from the seeded model there)
    python bench/experiments/variants.py run DIR             # GPU host: interleaved timing
    python bench/experiments/variants.py calls DIR [eager,iree]   # GPU host: per call against kernel sum
    ncu --clock-control none --metrics gpu__time_duration.sum --csv \\
        python bench/experiments/variants.py kernels DIR > k.csv   # GPU host: one call each
                                      # (EAGER_KERNELS=1: torch's, NCHW and channels-last, first)
    python bench/experiments/variants.py table k.csv

SET names a group of (workload, variant, compile options) below. `run` interleaves eager and
every variant of a workload in rounds (braze.tools.timing), checks each against
eager, and prints ms per call; `calls` prints each variant's per-call time of back-to-back calls
against the summed GPU time of its kernels (torch's profiler), as bench/launch_check.py does; `kernels` makes one call of each variant between two marker
kernels (1-element torch fills), after a first unmarked call, and `table` lists the kernels
between each pair of markers under the variant's name (the order of DIR/kernels-order.txt).
"""

import copy
import os
import sys

from braze.tools.timing import interleaved_ms, ncu_kernels, profiled_kernel_ms

IM2COL = ["--iree-global-opt-use-im2col-for-convs"]
NO_CONV_PASS = "fusion-default-pipeline,fusion-configure-kernels{target=sm_90}"
PAD_COPY = ("fusion-conv-to-matmul{target=sm_90 read-padding=false},fusion-default-pipeline,"
            "fusion-pad-matmuls{target=sm_90},fusion-split-k{target=sm_90},fusion-configure-kernels{target=sm_90}")
NO_SPLIT = ("fusion-conv-to-matmul{target=sm_90},fusion-default-pipeline,fusion-pad-matmuls{target=sm_90},"
            "fusion-split-k{target=sm_90 split=1},fusion-configure-kernels{target=sm_90}")
AGGRESSIVE = ["--iree-dispatch-creation-enable-aggressive-fusion=true"]
PAD_FUSION = ["--iree-dispatch-creation-enable-fuse-padding-into-linalg-consumer-ops"]
NO_PAD_FUSION = [PAD_FUSION[0] + "=false"]  # braze passes the flag itself where a pool reads a pad: a later flag wins
NHWC = "fusion-cuda-pipeline{target=sm_90 channels-last=auto}"


def _without(pass_name: str) -> str:
    """braze's CUDA pipeline for sm_90 with fusion-default-pipeline written out, less one pass."""
    from braze.passes import pipelines

    default = pipelines.DefaultPipeline().expand()
    assert pass_name + "," in default, default
    return pipelines.for_device("cuda", "sm_90").expand().replace(
        "fusion-default-pipeline", default.replace(pass_name + ",", ""))


SETS = {
    # bench/NOTES.md §22: IREE's aggressive dispatch fusion (a reduction and the elementwise
    # consumers of its broadcast result in one dispatch: a LayerNorm in one kernel, not two or three).
    "aggressive": [
        (name, variant, {"iree_flags": AGGRESSIVE} if variant == "aggressive" else {})
        for name in ("layernorm_gelu", "layernorm_gelu_bf16", "transformer_encoder", "transformer_encoder_bf16",
                     "bert_layer", "bert_layer_bf16")
        for variant in ("default", "aggressive")
    ],
    # bench/NOTES.md §12: attention as one op (compile(attention=...)).
    "attention": [
        (name, variant, {"attention": variant == "one-op"})
        for name in ("attention", "attention_bf16", "transformer_encoder", "bert_layer",
                     "transformer_encoder_bf16", "bert_layer_bf16")
        for variant in ("decomposed", "one-op")
    ],
    # bench/NOTES.md §13: convolutions as im2col + matmul. direct: braze without
    # fusion-conv-to-matmul (IREE's convolution kernels); iree-im2col: IREE's own im2col rewrite
    # (both kernels on IREE's defaults); braze: the default, fusion-conv-to-matmul and tiles.
    "conv": [
        (name, variant, options)
        for name in ("conv_bn_relu", "resnet18")
        for variant, options in (("direct", {"pipeline": NO_CONV_PASS}),
                                 ("iree-im2col", {"pipeline": NO_CONV_PASS, "iree_flags": IM2COL}),
                                 ("braze", {}))
    ],
    # bench/NOTES.md §13: the im2col copy reading Conv2d's zero padding itself, or a padded copy.
    "padding": [
        (name, variant, {"pipeline": PAD_COPY} if variant == "pad-copy" else {})
        for name in ("conv_bn_relu", "resnet18")
        for variant in ("pad-copy", "braze")
    ],
    # bench/NOTES.md §14: split-K (fusion-split-k) on and off.
    # bench/NOTES.md §49: convolutions in NHWC (fusion-channels-last) against NCHW kernels.
    "layout": [
        (name, variant, {"pipeline": f"fusion-cuda-pipeline{{target=sm_90 channels-last={'off' if variant == 'nchw' else 'auto'}}}"})
        for name in ("resnet18", "resnet18_bf16", "resnet50", "resnet50_bf16", "resnet50_bf16@8x")
        for variant in ("nchw", "nhwc")
    ],
    # §49: the max pool's -inf pad fused into the pool's dispatch by IREE (no pad copy).
    "layout-pad": [
        (name, variant, {"pipeline": NHWC, "iree_flags": PAD_FUSION if variant == "nhwc-padfuse" else NO_PAD_FUSION})
        for name in ("resnet18_bf16", "resnet50_bf16")
        for variant in ("nhwc", "nhwc-padfuse")
    ],
    # §54: fusion-fold-concat (rotate_half's cat(-x2, x1) as one generic) against the pipeline without it.
    "fold-concat": [
        (name, variant, {} if variant == "fold" else {"pipeline": _without("fusion-fold-concat")})
        for name in ("gqa_decoder_bf16",)
        for variant in ("no-fold", "fold")
    ],
    # §54: the max pool's -inf pad fused into the NCHW pool's dispatch (the default's pool, after the
    # NCHW stem) against a fill and a slow_memcpy copy of its own.
    "pool-pad": [
        (name, variant, {"iree_flags": NO_PAD_FUSION} if variant == "pad-copy" else {})
        for name in ("resnet18", "resnet50_bf16")
        for variant in ("pad-copy", "padfuse")
    ],
    "splitk": [
        (name, variant, {"pipeline": NO_SPLIT} if variant == "no-split" else {})
        for name in ("gelu_mlp", "resnet18")
        for variant in ("no-split", "split")
    ],
}


def _workload(name: str):
    """Model and inputs of a bench workload; 'attention_bf16' is braze bench's attention in bfloat16."""
    import torch

    from braze.testing.zoo import WORKLOADS, workload

    if name == "attention_bf16":
        model, args = WORKLOADS["attention"].build("cuda")
        return model.to(torch.bfloat16), [a.to(torch.bfloat16) for a in args]
    return workload(name).build("cuda")


def build(out: str, sets: list[str]) -> None:
    import braze
    from braze.testing import generation

    os.makedirs(out, exist_ok=True)
    manifest = []
    for set_name in sets or list(SETS):
        for name, variant, options in SETS[set_name]:
            model, args = _workload(name)
            m = braze.compile(model, *args, device="cuda", target="sm_90", **options)
            folder = os.path.join(out, f"{name}.{variant}")
            os.makedirs(folder, exist_ok=True)
            m.save(os.path.join(folder, "m.braze"), overwrite=True)
            generation.strip(folder, model)  # the weights travel as zeros (64 MiB a call)
            manifest.append(f"{name} {variant}")
            print(f"{name:26s} {variant:12s} {m.report.dispatch_count:3d} dispatches", flush=True)
    with open(os.path.join(out, "manifest.txt"), "w") as f:
        f.write("\n".join(manifest) + "\n")


def _load(out: str, name: str, variant: str, model, **kwargs):
    """The variant's module, its weights put back from `model` (the seeded CPU model) first."""
    import braze
    from braze.testing import generation

    folder = os.path.join(out, f"{name}.{variant}")
    if not os.path.isdir(folder):  # a folder of whole artifacts, NAME.VARIANT.braze (older scripts link them)
        return braze.load(folder + ".braze", device="cuda", **kwargs)
    generation.restore(folder, model)
    return braze.load(os.path.join(folder, "m.braze"), device="cuda", **kwargs)


def _manifest(out: str) -> dict[str, list[str]]:
    by_name: dict[str, list[str]] = {}
    for line in open(os.path.join(out, "manifest.txt")):
        name, variant = line.split()
        by_name.setdefault(name, []).append(variant)
    return by_name


def run(out: str) -> None:
    """Per-call ms against eager, and each contender's largest error against eager and against
    the same model evaluated in float64 (which of two 16-bit results is closer to the exact one)."""
    import torch

    print(f"{'workload':26s} {'variant':12s} {'ms':>8s} {'vs eager':>9s} {'max |err|':>10s} {'vs f64':>10s}")
    for name, variants in _manifest(out).items():
        model, args = _workload(name)
        modules = {v: _load(out, name, v, model) for v in variants}
        model, args = model.cuda(), [a.cuda() for a in args]
        with torch.no_grad():
            exact = copy.deepcopy(model).double()(*[a.double() for a in args])
            expected = model(*args).float()
            outs = {v: m(*args).float() for v, m in modules.items()}
            fns = {"eager": lambda: model(*args)}
            fns.update({v: (lambda m=m: m(*args)) for v, m in modules.items()})
            med = interleaved_ms(fns, pace=variants[0])
        f64 = lambda t: float((t.double() - exact).abs().max())  # noqa: E731
        print(f"{name:26s} {'eager':12s} {med['eager']:8.3f} {'':9s} {'':10s} {f64(expected):10.2e}", flush=True)
        for v in variants:
            err = float((outs[v] - expected).abs().max())
            print(f"{name:26s} {v:12s} {med[v]:8.3f} {med['eager'] / med[v]:8.2f}x {err:10.2e} {f64(outs[v]):10.2e}",
                  flush=True)


def calls(out: str, company: list[str]) -> None:
    """Per call against the kernel sum; `company` adds contenders to the interleaved rounds
    ('eager': the model, pacing the blocks as bench/launch_check.py does; 'iree': each variant
    through iree.runtime too), to see what the launcher's figure depends on."""
    import torch

    label = "+".join(["braze"] + company)
    print(f"{'workload':26s} {'variant':12s} {'rounds':14s} {'per call ms':>11s} {'kernels ms':>10s} {'ratio':>6s}")
    for name, variants in _manifest(out).items():
        model, args = _workload(name)
        modules = {v: _load(out, name, v, model) for v in variants}
        model, args = model.cuda(), [a.cuda() for a in args]
        fns = {v: (lambda m=m: m(*args)) for v, m in modules.items()}
        if "eager" in company:
            fns = {"eager": lambda: model(*args), **fns}
        if "iree" in company:
            for v in variants:
                m = _load(out, name, v, None, runtime="iree")
                fns[v + " (iree)"] = lambda m=m: m(*args)
        with torch.no_grad():
            med = interleaved_ms(fns, pace="eager" if "eager" in company else None)
            for v, m in modules.items():
                k = profiled_kernel_ms(lambda m=m: m(*args))
                print(f"{name:26s} {v:12s} {label:14s} {med[v]:11.4f} {k:10.4f} {med[v] / k:5.2f}x", flush=True)


def kernels(out: str) -> None:
    import torch

    marker = torch.empty(1, device="cuda")
    order = []
    for name, variants in _manifest(out).items():
        model, args = _workload(name)
        modules = {v: _load(out, name, v, model) for v in variants}  # weights put back from the CPU model
        model, args = model.cuda(), [a.cuda() for a in args]
        if os.environ.get("EAGER_KERNELS"):  # torch's own kernels (cuDNN's convolutions) beside them
            last = copy.deepcopy(model).to(memory_format=torch.channels_last)
            cl_args = [a.to(memory_format=torch.channels_last) if a.dim() == 4 else a for a in args]
            for label, fn in (("eager", lambda: model(*args)), ("eager-channels-last", lambda: last(*cl_args))):
                with torch.no_grad():
                    fn()
                    torch.cuda.synchronize()
                    marker.fill_(1.0)
                    fn()
                    marker.fill_(2.0)
                    torch.cuda.synchronize()
                order.append(f"{name} {label}")
        for v in variants:
            order.append(f"{name} {v}")
            m = modules[v]
            m(*args)  # load and first-call work outside the marked call
            torch.cuda.synchronize()
            marker.fill_(1.0)  # opens the variant's kernels
            m(*args)
            marker.fill_(2.0)  # closes them
            torch.cuda.synchronize()
    with open(os.path.join(out, "kernels-order.txt"), "w") as f:
        f.write("\n".join(order) + "\n")


def table(path: str, order: str) -> None:
    labels = iter(line.strip() for line in open(order) if line.strip())
    part, total = None, 0.0
    for name, us in ncu_kernels(path):
        if "FillFunctor" in name and us < 5:
            if part is None:
                part, total = next(labels), 0.0
                print(f"-- {part}")
            else:
                print(f"   {total:9.1f} us of kernels")
                part = None
        elif part is not None:
            total += us
            print(f"{us:9.1f} us  {name[:110]}")


if __name__ == "__main__":
    if len(sys.argv) < 3 or sys.argv[1] not in ("build", "run", "calls", "kernels", "table"):
        sys.exit(__doc__)
    if sys.argv[1] == "build":
        build(sys.argv[2], sys.argv[3:])
    elif sys.argv[1] == "run":
        run(sys.argv[2])
    elif sys.argv[1] == "calls":
        calls(sys.argv[2], sys.argv[3].split(",") if len(sys.argv) > 3 else [])
    elif sys.argv[1] == "kernels":
        kernels(sys.argv[2])
    else:
        table(sys.argv[2], sys.argv[3])
