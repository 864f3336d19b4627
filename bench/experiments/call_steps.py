"""The steps of one braze call on CUDA, timed one by one (what call_anatomy.py's "braze's Python" is).

    python bench/experiments/call_steps.py run ARTIFACT WORKLOAD [ARTIFACT WORKLOAD ...]   # GPU host

Replays `CompiledModule.__call__` → `Program.call_torch` → `Program.invoke` step by step for 300
calls and prints the mean µs of each step (the device synchronized at the end of each call, as
the real call does by waiting in invoke).
"""

import sys
import time


def run(pairs: list[tuple[str, str]]) -> None:
    import iree.runtime as rt
    import torch

    import braze
    from braze.testing.zoo import WORKLOADS

    for path, name in pairs:
        _, args = WORKLOADS[name].build("cuda")
        args = [a.cuda() for a in args]
        module = braze.load(path, device="cuda")
        program = module.program
        module(*args)  # names, imports and transients made once, as in steady state
        steps: dict[str, float] = {}

        def timed(label, fn):
            t = time.perf_counter_ns()
            result = fn()
            steps[label] = steps.get(label, 0.0) + (time.perf_counter_ns() - t) / 1e3
            return result

        n = 300
        for _ in range(n):
            flat = timed("flatten_call", lambda: module.signature.flatten_call(tuple(args), {}))
            values = [v for v, _ in flat]
            tensors, storage = [], []
            for spec in program.signature.outputs:
                tensor = timed("torch.empty (output)", lambda spec=spec: torch.empty(
                    spec.shape, dtype=getattr(torch, spec.dtype), device="cuda:0"))
                capsule = timed("to_dlpack (output)", lambda tensor=tensor: torch.utils.dlpack.to_dlpack(tensor))
                view = timed("from_dlpack_capsule (output)", lambda capsule=capsule: program.device.from_dlpack_capsule(capsule))
                storage.append(timed("get_buffer (output)", lambda view=view: view.get_buffer()))
                tensors.append(tensor)
            refs = timed("input views (cached)", lambda: [program._buffer_view(v, s, "x", i) for i, (v, s) in
                                                           enumerate(zip(values, program.signature.inputs))])
            refs += storage
            if program.transient_storage:
                refs.append(timed("take transients", program._take_transients))
            vm_args = timed("VmVariantList", lambda: rt.VmVariantList(len(refs)))
            timed("push_ref", lambda: [vm_args.push_ref(r) for r in refs])
            stream = timed("torch.cuda.current_stream()", torch.cuda.current_stream)
            timed("stream.synchronize()", stream.synchronize)
            results = rt.VmVariantList(len(program.signature.outputs))
            timed("context.invoke", lambda: program._context.invoke(program._fn, vm_args, results))
            if program.transient_storage:
                program._idle_transients.append(refs[-1])
            timed("results", lambda: [results.get_as_object(i, rt.HalBufferView) for i in range(len(program.signature.outputs))])
            timed("unflatten", lambda: module.signature.unflatten_outputs(tensors))
        t = time.perf_counter()
        for _ in range(n):
            module(*args)
        whole = (time.perf_counter() - t) / n * 1e6
        total = sum(steps.values()) / n
        print(f"== {name}: module(*args) {whole:.1f} us per call; the steps below sum to {total:.1f} us")
        for label, us in steps.items():
            print(f"   {label:32s} {us / n:8.1f} us")


if __name__ == "__main__":
    if len(sys.argv) < 4 or sys.argv[1] != "run" or len(sys.argv) % 2:
        sys.exit(__doc__)
    run(list(zip(sys.argv[2::2], sys.argv[3::2])))
