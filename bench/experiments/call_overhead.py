"""Where a small braze call's time goes on CUDA (the 1024-element elementwise chain).

    python bench/experiments/call_overhead.py build chain1k.braze   # here
    python bench/experiments/call_overhead.py run chain1k.braze     # GPU host
"""

import itertools
import sys

from braze.tools.timing import per_call_ms


def build(path: str) -> None:
    import torch

    import braze

    class Chain(torch.nn.Module):
        def forward(self, x):
            return torch.sigmoid(torch.relu(x * 2 + 1)) * x - 0.5

    braze.compile(Chain(), torch.randn(1024), device="cuda", target="sm_90").save(path, overwrite=True)


def run(path: str) -> None:
    import iree.runtime as rt
    import torch

    import braze

    x = torch.randn(1024, device="cuda")
    module = braze.load(path, device="cuda")
    program = module.program
    spec_in, spec_out = program.signature.inputs[0], program.signature.outputs[0]

    def per_call(label, fn, n=500):
        print(f"{label:50s} {per_call_ms(fn, n, warmup=20) * 1e3:8.1f} us")

    transients = [program._take_transients()] if program.transient_storage else []

    def invoke(view, buffer):
        args = rt.VmVariantList(3)
        for ref in [view, buffer] + transients:
            args.push_ref(ref)
        res = rt.VmVariantList(1)
        program._context.invoke(program._fn, args, res)

    view = program._buffer_view(x, spec_in, "x", 0)
    _, buffer = program._torch_storage(spec_out, "cuda:0")
    per_call("torch eager (6 asynchronous kernel launches)", lambda: torch.sigmoid(torch.relu(x * 2 + 1)) * x - 0.5)
    per_call("braze call module(x), same x each call", lambda: module(x))
    xs = itertools.cycle([torch.randn(1024, device="cuda") for _ in range(2)])
    per_call("braze call module(x), two inputs in turn", lambda: module(next(xs)))
    per_call("invoke only, buffers imported once", lambda: invoke(view, buffer))
    per_call("invoke + importing the input (DLPack)", lambda: invoke(program._buffer_view(x, spec_in, "x"), buffer))
    per_call("invoke + fresh torch output imported", lambda: invoke(view, program._torch_storage(spec_out, "cuda:0")[1]))
    per_call("torch.cuda.current_stream().synchronize()", lambda: torch.cuda.current_stream().synchronize())
    per_call("torch.cuda.current_stream().query()", lambda: torch.cuda.current_stream().query())
    per_call("program.call_torch([x])", lambda: program.call_torch([x], ["x"]))
    per_call("program.invoke([x], storage)", lambda: program.invoke([x], ["x"], [buffer]))
    per_call("signature.flatten_call", lambda: module.signature.flatten_call((x,), {}))


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("build", "run"):
        sys.exit(__doc__)
    build(sys.argv[2]) if sys.argv[1] == "build" else run(sys.argv[2])
