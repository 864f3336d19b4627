"""Convolution layers in NHWC and NCHW kernels against eager in float64, layer by layer on a GPU.

    python bench/experiments/conv_layout_check.py build DIR     # here: DIR/CASE.{nhwc,nchw}.braze
    python bench/experiments/conv_layout_check.py run DIR       # GPU host
    python bench/experiments/conv_layout_check.py specs WORKLOAD   # here: each distinct NHWC conv spec of
        the workload (batch 1, no epilogue, f32 out) under Triton's interpreter against conv2d in float64
    python bench/experiments/conv_layout_check.py cpu WORKLOAD     # here: the NHWC IR on llvm-cpu (the
        pass alone, and the whole CUDA pipeline's IR) against float64, beside eager and NCHW
    python bench/experiments/conv_layout_check.py network WORKLOAD ARTIFACT...   # GPU host: whole
        networks (e.g. resnet18_bf16 built with fusion-channels-last{pools=false} or {fold=false}),
        each through braze's launcher and iree.runtime, beside eager
    python bench/experiments/conv_layout_check.py variants CASE DIR [VARIANT...]   # here: CASE's (or a
        bench workload's) NHWC build with braze's choices changed (VARIANTS below) -> DIR/CASE.VARIANT.braze
    python bench/experiments/conv_layout_check.py case CASE ARTIFACT...   # GPU host: one case's
        artifacts against float64, beside eager (through the launcher and iree.runtime)

Each case is a small model (ResNet's stem, its max pool, a 3x3 convolution with BatchNorm and
ReLU, both block kinds) in bfloat16 at ResNet's batch-8 sizes; `run` prints each variant's largest
error against the model evaluated in float64 beside eager's own, so a layer whose kernel is
wrong stands out where a whole network's output only shows a larger error.
"""

import copy
import os
import sys

import torch
import torch.nn.functional as F


def _cases():
    from braze.testing.zoo import BasicBlock, Bottleneck

    class Stem(torch.nn.Module):
        def __init__(self, pool):
            super().__init__()
            self.conv, self.bn, self.pool = torch.nn.Conv2d(3, 64, 7, 2, 3, bias=False), torch.nn.BatchNorm2d(64), pool

        def forward(self, x):
            x = F.relu(self.bn(self.conv(x)))
            return torch.nn.functional.max_pool2d(x, 3, 2, 1) if self.pool else x

    class ConvBnRelu(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv, self.bn = torch.nn.Conv2d(64, 64, 3, 1, 1, bias=False), torch.nn.BatchNorm2d(64)

        def forward(self, x):
            return F.relu(self.bn(self.conv(x)))

    class ConvPool(torch.nn.Module):  # the NHWC result's global average pool (reduced dims not innermost)
        def __init__(self):
            super().__init__()
            self.conv, self.bn = torch.nn.Conv2d(512, 512, 3, 1, 1, bias=False), torch.nn.BatchNorm2d(512)

        def forward(self, x):
            return torch.flatten(F.adaptive_avg_pool2d(F.relu(self.bn(self.conv(x))), 1), 1)

    return {
        "stem": (lambda: Stem(False), (8, 3, 224, 224)),
        "stem_pool": (lambda: Stem(True), (8, 3, 224, 224)),
        "conv3x3": (ConvBnRelu, (8, 64, 56, 56)),
        "basic": (lambda: BasicBlock(64, 64, 1), (8, 64, 56, 56)),
        "basic_down": (lambda: BasicBlock(64, 128, 2), (8, 64, 56, 56)),
        "bottleneck": (lambda: Bottleneck(256, 64, 1), (8, 256, 56, 56)),
        "conv_avgpool": (ConvPool, (8, 512, 7, 7)),
    }


def _build_case(make, shape):
    torch.manual_seed(0)
    model = make().eval()
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.running_mean.uniform_(-0.5, 0.5)
                m.running_var.uniform_(0.5, 2.0)
    x = torch.randn(shape, generator=torch.Generator().manual_seed(1))
    return model.bfloat16(), x.bfloat16()


def build(out: str) -> None:
    import braze

    os.makedirs(out, exist_ok=True)
    for name, (make, shape) in _cases().items():
        model, x = _build_case(make, shape)
        for variant, layout in (("nhwc", "on"), ("nchw", "off")):  # on: a lone convolution too
            m = braze.compile(model, x, device="cuda", target="sm_90", cache=False,
                              pipeline=f"fusion-cuda-pipeline{{target=sm_90 channels-last={layout}}}")
            m.save(os.path.join(out, f"{name}.{variant}.braze"), overwrite=True)
            print(f"{name:12s} {variant}: {m.report.dispatch_count} dispatches", flush=True)


def run(out: str) -> None:
    import braze

    print(f"{'case':12s} {'eager':>10s} {'nhwc':>10s} {'nchw':>10s} {'nhwc/iree':>10s}   (largest error against float64;"
          " nhwc/iree: the NHWC artifact through iree.runtime instead of braze's launcher)")
    for name, (make, shape) in _cases().items():
        model, x = _build_case(make, shape)
        with torch.no_grad():
            exact = copy.deepcopy(model).double()(x.double())
            model, xc = model.cuda(), x.cuda()
            errs = [float((model(xc).double().cpu() - exact).abs().max())]
            for variant, runtime in (("nhwc", None), ("nchw", None), ("nhwc", "iree")):
                kw = {"runtime": runtime} if runtime else {}
                m = braze.load(os.path.join(out, f"{name}.{variant}.braze"), device="cuda", **kw)
                errs.append(float((m(xc).double().cpu() - exact).abs().max()))
        print(f"{name:12s} " + " ".join(f"{e:10.2e}" for e in errs), flush=True)


def network(name: str, paths: list[str]) -> None:
    """Errors against float64 (launcher and iree.runtime), then ms per call (launcher) beside eager
    and, with TORCH_COMPILE_MODES=default,reduce-overhead, torch.compile's modes, in one process;
    BATCH_SCALE=N: the workload's inputs repeated N times along the batch."""
    import braze
    from braze.testing.zoo import workload
    from braze.tools.timing import interleaved_ms

    model, args = workload(name).build("cuda")
    scale = int(os.environ.get("BATCH_SCALE", "1"))  # the workload's batch times this (artifacts built so)
    args = [torch.cat([a] * scale) for a in args]
    fns = {}
    with torch.no_grad():
        exact = copy.deepcopy(model).double()(*[a.double() for a in args])
        model, args = model.cuda(), [a.cuda() for a in args]
        print(f"{name} eager: {float((model(*args).double().cpu() - exact).abs().max()):.2e} (against float64)")
        fns["eager"] = lambda: model(*args)
        for path in paths:
            for runtime in (None, "iree"):
                m = braze.load(path, device="cuda", **({"runtime": runtime} if runtime else {}))
                err = float((m(*args).double().cpu() - exact).abs().max())
                print(f"{path} ({runtime or 'launcher'}): {err:.2e}", flush=True)
                if runtime is None:
                    fns[os.path.basename(path)] = (lambda m: lambda: m(*args))(m)
        for mode in [x for x in os.environ.get("TORCH_COMPILE_MODES", "").split(",") if x]:
            compiled = torch.compile(model, mode=mode)
            compiled(*args)
            fns[f"torch.compile {mode}"] = (lambda c: lambda: c(*args))(compiled)
        for label, ms in interleaved_ms(fns, rounds=10, pace="eager").items():
            print(f"{label:48s} {ms:8.3f} ms", flush=True)


VARIANTS = {
    # the stem reads the model's NCHW input itself (default) or its NHWC transpose
    "nhwc": {},
    "nhwc-transposed-input": {"nchw_input_channels": 0},
    # the convolution tiles the cost model picks from: one small-K tile, and one without pipelining
    "nhwc-tile-64x64x32": {"conv_tiles": ((64, 64, 32, 4, 2, 1.0),)},
    "nhwc-tile-1-stage": {"conv_tiles": ((128, 64, 64, 4, 1, 1.0),)},
}


def variants(name: str, out: str, which: list[str]) -> None:
    import braze
    from braze.kernels import gemm
    from braze.passes.gpu import generate_kernels

    os.makedirs(out, exist_ok=True)
    if name in _cases():
        model, x = _build_case(*_cases()[name])
    else:  # a bench workload (e.g. resnet18_bf16)
        from braze.testing.zoo import workload

        model, (x,) = workload(name).build("cuda")
    saved = (generate_kernels.NCHW_INPUT_CHANNELS, gemm.CONV_TILES)
    for variant in which or list(VARIANTS):
        change = VARIANTS[variant]
        generate_kernels.NCHW_INPUT_CHANNELS = change.get("nchw_input_channels", saved[0])
        gemm.CONV_TILES = change.get("conv_tiles", saved[1])
        try:
            m = braze.compile(model, x, device="cuda", target="sm_90", cache=False,
                              pipeline="fusion-cuda-pipeline{target=sm_90 channels-last=on}")
        finally:
            generate_kernels.NCHW_INPUT_CHANNELS, gemm.CONV_TILES = saved
        m.save(os.path.join(out, f"{name}.{variant}.braze"), overwrite=True)
        print(f"{name}.{variant}: {m.report.dispatch_count} dispatches", flush=True)


def case(name: str, paths: list[str]) -> None:
    import braze

    make, shape = _cases()[name]
    model, x = _build_case(make, shape)
    with torch.no_grad():
        exact = copy.deepcopy(model).double()(x.double())
        model, xc = model.cuda(), x.cuda()
        print(f"{name} eager: {float((model(xc).double().cpu() - exact).abs().max()):.2e} (against float64, "
              f"values up to {float(exact.abs().max()):.1f})")
        for path in paths:
            for runtime in (None, "iree"):
                m = braze.load(path, device="cuda", **({"runtime": runtime} if runtime else {}))
                err = (m(xc).double().cpu() - exact).abs()
                off = err > 0.1
                where = ""
                if off.any() and err.dim() == 4:  # which images, channels, rows and columns are wrong
                    n, c, h, w = (off.nonzero()[:, i] for i in range(4))
                    where = (f"; off in images {sorted(set(n.tolist()))[:8]}, {len(set(c.tolist()))} channels, "
                             f"rows {int(h.min())}..{int(h.max())}, columns {int(w.min())}..{int(w.max())}; worst at "
                             f"{list(map(int, (err == err.max()).nonzero()[0]))}")
                print(f"{path} ({runtime or 'launcher'}): {float(err.max()):.2e}, "
                      f"{int(off.sum())} of {err.numel()} elements off by > 0.1{where}", flush=True)


def specs(name: str) -> None:
    import dataclasses
    import subprocess
    import tempfile
    from pathlib import Path

    from braze._mlir import ir
    from braze.compiler import lower
    from braze.irutil import all_ops
    from braze.kernels.spec import ATTR, read_spec
    from braze.testing.zoo import workload

    helper = Path(__file__).resolve().parents[2] / "test" / "python" / "helpers" / "interpret_kernel.py"
    model, args = workload(name).build("cuda")
    lowered = lower(model, *args, device="cuda", target="sm_90",
                    pipeline="fusion-cuda-pipeline{target=sm_90 channels-last=auto}")
    with lowered.context:
        found = [read_spec(ir.StringAttr(f.attributes[ATTR]).value)
                 for f in all_ops(lowered.module.operation, "func.func") if ATTR in f.attributes]
    seen = set()
    for spec in (s for s in found if s.nhwc):
        n, c, h, w, kh, kw, sh, sw, dh, dw, pt, pl, oh, ow = spec.conv
        one = dataclasses.replace(spec, inputs=(), ops=(), result="acc", out="f32", m=oh * ow,
                                  conv=(1,) + spec.conv[1:])
        if one.key() in seen:
            continue
        seen.add(one.key())
        torch.manual_seed(0)
        dt = getattr(torch, {"bf16": "bfloat16", "f16": "float16", "f32": "float32"}[spec.a])
        x, weight = torch.randn(1, c, h, w).to(dt), torch.randn(spec.n, c, kh, kw).to(dt)
        with tempfile.TemporaryDirectory() as d:
            open(f"{d}/spec.json", "w").write(one.to_json())
            torch.save([(x if spec.nchw_input else x.permute(0, 2, 3, 1)).contiguous(),
                        weight.permute(0, 2, 3, 1).reshape(spec.n, -1).contiguous()], f"{d}/in.pt")
            subprocess.run([sys.executable, str(helper), f"{d}/spec.json", f"{d}/in.pt", f"{d}/out.pt"], check=True)
            got = torch.load(f"{d}/out.pt").double().reshape(1, oh, ow, spec.n)
        want = F.conv2d(x.double(), weight.double(), stride=(sh, sw), padding=(pt, pl),
                        dilation=(dh, dw)).permute(0, 2, 3, 1)
        print(f"{one.describe()}: error {float((got - want).abs().max()):.2e} of values up to "
              f"{float(want.abs().max()):.1f}", flush=True)


def cpu(name: str) -> None:
    import braze
    from braze.testing.zoo import workload

    model, args = workload(name).build("cpu")
    args = [a[:2] for a in args]
    with torch.no_grad():
        exact = copy.deepcopy(model).double()(*[a.double() for a in args])
        print(f"eager: {float((model(*args).double() - exact).abs().max()):.2e} (against float64)")
    base = "fusion-conv-to-matmul{target=sm_90 leave=f32,bf16,f16},fusion-default-pipeline"
    for label, pipeline in (("pass alone, NCHW", base), ("pass alone, NHWC", base + ",fusion-channels-last"),
                            ("CUDA pipeline, NCHW", "fusion-cuda-pipeline{target=sm_90 channels-last=off}"),
                            ("CUDA pipeline, NHWC", "fusion-cuda-pipeline{target=sm_90 channels-last=auto}")):
        m = braze.compile(model, *args, pipeline=pipeline, cache=False)
        print(f"{label} on llvm-cpu: {float((m(*args).double() - exact).abs().max()):.2e}", flush=True)


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] in ("specs", "cpu"):
        sys.exit(specs(sys.argv[2]) if sys.argv[1] == "specs" else cpu(sys.argv[2]))
    if len(sys.argv) < 3 or sys.argv[1] not in ("build", "run", "network", "variants", "case"):
        sys.exit(__doc__)
    if sys.argv[1] == "variants":
        variants(sys.argv[2], sys.argv[3], sys.argv[4:])
    elif sys.argv[1] == "case":
        case(sys.argv[2], sys.argv[3:])
    elif sys.argv[1] == "network":
        network(sys.argv[2], sys.argv[3:])
    else:
        build(sys.argv[2]) if sys.argv[1] == "build" else run(sys.argv[2])
