"""LayerNorm + GELU on the CPU with N IREE workers (default 2), call by call (bench/NOTES.md §39):

    python bench/experiments/cpu_two_workers.py [THREADS] [WORKLOAD]

Three things in one process, interleaved over 150 rounds: braze's call with each ABI variant
(output storage and transient storage on/off), and iree.runtime calling the same program built
without braze's ABI (plain `main(inputs) -> outputs`). Prints p10/median/p90 per call and the
calling thread's CPU time per call (time.thread_time), which separates work the caller does from
work IREE's workers do. Eager's median is printed for reference.
"""

import sys
import time
import warnings

import iree.runtime as rt
import numpy as np
import torch

import braze
from braze.compiler import backend
from braze.compiler import lower
from braze.testing.zoo import WORKLOADS

warnings.filterwarnings("ignore")
threads = int(sys.argv[1]) if len(sys.argv) > 1 else 2
name = sys.argv[2] if len(sys.argv) > 2 else "layernorm_gelu"
rt.flags.parse_flags(f"--task_topology_group_count={threads}")
torch.set_num_threads(threads)

model, args = WORKLOADS[name].build("cpu")
variants = {"braze": {}, "braze, no output storage": {"output_storage": False},
            "braze, no transient storage": {"transient_storage": False},
            "braze, neither": {"output_storage": False, "transient_storage": False}}
calls = {k: (lambda c=braze.compile(model, *args, cache=False, **v): c(*args)) for k, v in variants.items()}

lowered = lower(model, *args)
plain = backend.compile_for_target(lowered.bytecode(), lowered.target, list(lowered.iree_flags),
                                   aggressive_fusion=lowered.aggressive_fusion)
config = rt.Config("local-task")
context = rt.SystemContext(vm_modules=[rt.VmModule.copy_buffer(config.vm_instance, plain.vmfb)], config=config)
device_args = [rt.asdevicearray(config.device, a.numpy()) for a in args]
main = context.modules.module["main"]
calls["iree.runtime, plain main"] = lambda: main(*device_args)
calls["eager"] = lambda: model(*args)

with torch.no_grad():
    for f in calls.values():
        for _ in range(10):
            f()
    wall = {k: [] for k in calls}
    cpu = {k: 0.0 for k in calls}
    for _ in range(150):
        for k, f in calls.items():
            c0, t0 = time.thread_time(), time.perf_counter()
            f()
            wall[k].append((time.perf_counter() - t0) * 1e3)
            cpu[k] += time.thread_time() - c0
for k, x in wall.items():
    x = np.array(x)
    print(f"{name} threads={threads} {k:30s} p10 {np.percentile(x, 10):.3f}  median {np.median(x):.3f}  "
          f"p90 {np.percentile(x, 90):.3f} ms  calling thread CPU {cpu[k] / 150 * 1e3:.3f} ms/call", flush=True)
