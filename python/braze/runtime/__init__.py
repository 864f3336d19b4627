"""braze's runtime: everything `braze.load` and a call of a compiled module need, on a host
with iree-base-runtime and numpy only (torch where the caller passes torch tensors).

    module      CompiledModule (the call path, save) and load
    dynamic     DynamicModule: a dynamic and a static build, called by shape
    decoder     Decoder: generation over step programs sharing a static KV cache (load_decoder)
    artifact    the .braze file: program, metadata, buffers, launch plan
    program     running a program with iree.runtime (CPU, CUDA, Vulkan)
    cpu         the CPU driver, threads and how callers wait (set_cpu_threads)
    cuda/       braze's CUDA launcher: the launch plan, the driver, graphs, the plan's check

It imports nothing of braze's compiler, torch-mlir, IREE's compiler or Triton
(test_load_runtime_only.py); the compiler imports it, never the reverse.
"""

from braze.runtime.dynamic import DynamicModule
from braze.runtime.module import CompiledModule, load

__all__ = ["CompiledModule", "DynamicModule", "load"]
