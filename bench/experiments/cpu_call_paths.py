"""How a CPU call runs, measured (bench/NOTES.md §41): the figures behind braze's SCHED_BATCH wait
and its one-thread local-sync driver.

    python bench/experiments/cpu_call_paths.py iree [WORKLOAD,...]    # IREE alone
    python bench/experiments/cpu_call_paths.py braze [WORKLOAD,...]   # through braze, one thread

`iree`: each workload built without braze's ABI (backend.compile_for_target of lower(model)),
timed by iree-benchmark-module (no Python): local-task at 1 and 2 workers, each with every
thread as it is and under `chrt --batch 0`, and local-sync. Prints the median real time and the
process CPU time per call.
`braze`: one process, torch at one thread; braze's module on local-task with one worker, on
local-sync with IREE's caching allocator (braze's choice for one thread) and on local-sync
without it, beside eager, interleaved (tools/timing.py); prints each with its error against eager.
"""

import os
import subprocess
import sys
import tempfile
import warnings

warnings.filterwarnings("ignore")
mode = sys.argv[1]
names = sys.argv[2].split(",") if len(sys.argv) > 2 else ["tiny_chain", "attention", "layernorm_gelu",
                                                          "gelu_mlp", "elementwise_chain"]


def iree_alone() -> None:
    import torch

    from braze.compiler import backend
    from braze.compiler import lower
    from braze.testing.zoo import WORKLOADS

    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            model, args = WORKLOADS[name].build("cpu")
            lowered = lower(model, *args)
            plain = backend.compile_for_target(lowered.bytecode(), lowered.target, list(lowered.iree_flags),
                                               aggressive_fusion=lowered.aggressive_fusion)
            path = os.path.join(tmp, f"{name}.vmfb")
            with open(path, "wb") as f:
                f.write(plain.vmfb)
            inputs = [f"--input={'x'.join(map(str, a.shape))}x{_element(a.dtype, torch)}" for a in args]
            runs = [("local-task, 1 worker", ["--device=local-task", "--task_topology_group_count=1"], []),
                    ("local-task, 1 worker, batch", ["--device=local-task", "--task_topology_group_count=1"],
                     ["chrt", "--batch", "0"]),
                    ("local-task, 2 workers", ["--device=local-task", "--task_topology_group_count=2"], []),
                    ("local-task, 2 workers, batch", ["--device=local-task", "--task_topology_group_count=2"],
                     ["chrt", "--batch", "0"]),
                    ("local-sync", ["--device=local-sync"], [])]
            for label, flags, prefix in runs:
                out = subprocess.run(prefix + ["iree-benchmark-module", f"--module={path}", "--function=main",
                                               "--benchmark_repetitions=5", "--benchmark_min_time=0.3s"]
                                     + flags + inputs, capture_output=True, text=True).stdout
                med = [line.split() for line in out.splitlines() if "real_time_median" in line]
                text = f"{med[0][1]} {med[0][2]} real, {med[0][3]} {med[0][4]} CPU" if med else "failed"
                print(f"{name:18s} {label:30s} {text}", flush=True)


def _element(dtype, torch) -> str:
    return {torch.float32: "f32", torch.bfloat16: "bf16", torch.float16: "f16"}[dtype]


def through_braze() -> None:
    import iree.runtime as rt
    import torch

    import braze
    import braze.runtime.program as runtime
    from braze.tools.timing import interleaved_ms
    from braze.testing.zoo import WORKLOADS

    torch.set_num_threads(1)
    rt.flags.parse_flags("--task_topology_group_count=1")
    plain_sync = rt.get_driver("local-sync").create_default_device()
    for name in names:
        model, args = WORKLOADS[name].build("cpu")
        modules = {}
        # The driver is decided once per process; each module is loaded under the state it needs.
        for label, driver, device in (("local-task, 1 worker", "local-task", None),
                                      ("local-sync, caching allocator", "local-sync", None),
                                      ("local-sync, no caching", "local-sync", plain_sync)):
            runtime._CPU_IN_USE = (1, driver)
            if device is not None:
                previous, runtime._SYNC_DEVICE = runtime._SYNC_DEVICE, device
            modules[label] = braze.compile(model, *args)
            modules[label](*args)  # loads the program on that device
            if device is not None:
                runtime._SYNC_DEVICE = previous
        with torch.no_grad():
            ref = model(*args)
            times = interleaved_ms({"eager": lambda: model(*args),
                                    **{k: (lambda c=c: c(*args)) for k, c in modules.items()}}, pace="eager")
            for k, c in modules.items():
                err = float((c(*args) - ref).abs().max() / ref.abs().max())
                print(f"{name:18s} {k:30s} {times[k]:8.3f} ms  eager {times['eager']:8.3f}  "
                      f"({c.program.driver}; rel err {err:.1e})", flush=True)


iree_alone() if mode == "iree" else through_braze()
