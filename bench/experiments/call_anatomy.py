"""Where a braze call's time goes, for any bench workload: eager, the call, IREE's invoke alone.

    python bench/experiments/call_anatomy.py run ARTIFACT WORKLOAD [ARTIFACT WORKLOAD ...]   # GPU host

Per call, each timed back to back with the device synchronized before and after
(braze.tools.timing): torch eager; `module(*args)`; the program's `invoke` alone with
every input, output buffer and transient buffer imported once (what IREE's runtime costs: it
records the command buffer, submits it and waits, so it includes the kernels); the same with
fresh output tensors imported on each call (`fresh`, as a call does); and torch's stream
synchronize that each call makes. Set BRAZE_IREE_RUNTIME_FLAGS=--cuda_use_streams=true to see
the same with streams instead of CUDA graphs. Kernel sums for the same artifacts come from ncu
(bench/experiments/layer_kernels.py, variants.py).
"""

import sys

from braze.tools.timing import per_call_ms


def run(pairs: list[tuple[str, str]]) -> None:
    import iree.runtime as rt
    import torch

    import braze
    from braze.testing.zoo import WORKLOADS

    print(f"{'workload':26s} {'eager':>8s} {'call':>8s} {'invoke':>8s} {'fresh':>8s} {'sync':>7s}   (us per call)")
    for path, name in pairs:
        model, args = WORKLOADS[name].build("cuda")
        model, args = model.cuda(), [a.cuda() for a in args]
        module = braze.load(path, device="cuda")
        program = module.program
        refs = [program._buffer_view(a, spec, f"x{i}", i) for i, (a, spec) in enumerate(zip(args, program.signature.inputs))]
        outputs = [program._torch_storage(spec, "cuda:0") for spec in program.signature.outputs] \
            if program.output_storage else []
        refs += [buffer for _, buffer in outputs]  # the tensors in `outputs` keep the buffers' memory alive
        if program.transient_storage:
            refs.append(program._take_transients())

        def invoke(fresh: bool = False):
            call_refs = refs
            if fresh:  # new output tensors, imported for this call, as module(*args) does
                new = [program._torch_storage(spec, "cuda:0") for spec in program.signature.outputs]
                n_in = len(program.signature.inputs)
                call_refs = refs[:n_in] + [buffer for _, buffer in new] + refs[n_in + len(new):]
            vm_args = rt.VmVariantList(len(call_refs))
            for ref in call_refs:
                vm_args.push_ref(ref)
            program._context.invoke(program._fn, vm_args, rt.VmVariantList(len(program.signature.outputs)))

        with torch.no_grad():
            times = {
                "eager": per_call_ms(lambda: model(*args), 200, warmup=20),
                "call": per_call_ms(lambda: module(*args), 200, warmup=20),
                "invoke": per_call_ms(invoke, 200, warmup=20),
                "fresh": per_call_ms(lambda: invoke(program.output_storage), 200, warmup=20),
                "sync": per_call_ms(lambda: torch.cuda.current_stream().synchronize(), 200, warmup=20),
            }
        print(f"{name:26s} " + " ".join(f"{times[k] * 1e3:8.1f}" for k in ("eager", "call", "invoke", "fresh"))
              + f" {times['sync'] * 1e3:7.1f}", flush=True)


if __name__ == "__main__":
    if len(sys.argv) < 4 or sys.argv[1] != "run" or len(sys.argv) % 2:
        sys.exit(__doc__)
    run(list(zip(sys.argv[2::2], sys.argv[3::2])))
