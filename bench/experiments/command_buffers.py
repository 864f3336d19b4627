"""Command buffers recorded once (IREE's memoization with indirect bindings) against per call.

    python bench/experiments/command_buffers.py build DIR   # here: needs iree-compile on PATH
    python bench/experiments/command_buffers.py run DIR     # GPU host

braze's program records a one-shot command buffer on every call: it binds the call's own
buffers (inputs, output storage, transient storage) directly, so IREE cannot memoize it.
`--iree-hal-force-indirect-command-buffers` records it once, at load, against a binding table
that each call fills (`hal.device.queue.execute.indirect`). The flag is a global LLVM option,
not a session flag, so this experiment compiles braze's final IREE input with the
iree-compile tool. Each variant is timed per call against eager, interleaved.
"""

import os
import subprocess
import sys

from braze.tools.timing import interleaved_ms

NAMES = ("transformer_encoder", "bert_layer_bf16", "gelu_mlp")
VARIANTS = {"per-call": [], "memoized": ["--iree-hal-force-indirect-command-buffers=true"]}


def build(out: str) -> None:
    import braze
    from braze.compiler import _iree_compiler, backend
    from braze.runtime import CompiledModule
    from braze.testing.zoo import WORKLOADS

    os.makedirs(out, exist_ok=True)
    captured = {}
    original = _iree_compiler.compile_module

    def capture(source, flags, *, module_hook=None):
        def hook(module):
            if module_hook:
                module_hook(module)
            captured["text"], captured["flags"] = str(module), flags
        return original(source, flags, module_hook=hook)

    backend.compile_module = capture
    try:
        for name in NAMES:
            model, args = WORKLOADS[name].build("cuda")
            m = braze.compile(model, *args, device="cuda", target="sm_90")
            src = os.path.join(out, f"{name}.mlir")
            with open(src, "w") as f:
                f.write(captured["text"])
            for variant, flags in VARIANTS.items():
                vmfb = os.path.join(out, f"{name}.{variant}.vmfb")
                subprocess.run(["iree-compile", src, "-o", vmfb, *captured["flags"], *flags], check=True)
                with open(vmfb, "rb") as f:
                    data = f.read()
                CompiledModule(data, m.target, m.signature, m.report, m.versions, abi=m.abi).save(
                    os.path.join(out, f"{name}.{variant}.braze"), overwrite=True)
                os.remove(vmfb)
            os.remove(src)
            print(f"built {name}", flush=True)
    finally:
        backend.compile_module = original


def run(out: str) -> None:
    import torch

    import braze
    from braze.testing.zoo import WORKLOADS

    print(f"{'workload':22s} {'eager ms':>9s} " + " ".join(f"{v + ' ms':>13s}" for v in VARIANTS) + "  max |memoized - eager|")
    for name in NAMES:
        model, args = WORKLOADS[name].build("cuda")
        model, args = model.cuda(), [a.cuda() for a in args]
        modules = {v: braze.load(os.path.join(out, f"{name}.{v}.braze"), device="cuda") for v in VARIANTS}
        with torch.no_grad():
            expected = model(*args)
            err = float((modules["memoized"](*args).float() - expected.float()).abs().max())
            fns = {"eager": lambda: model(*args), **{v: (lambda m=m: m(*args)) for v, m in modules.items()}}
            med = interleaved_ms(fns, pace="per-call")
        print(f"{name:22s} {med['eager']:9.3f} " + " ".join(f"{med[v]:13.3f}" for v in VARIANTS) + f"  {err:.2e}",
              flush=True)


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("build", "run"):
        sys.exit(__doc__)
    {"build": build, "run": run}[sys.argv[1]](sys.argv[2])
