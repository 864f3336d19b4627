"""braze's compile side: from a torch model to a CompiledModule (braze.runtime).

    stages          braze.compile and lower(): the stages in order, the cache around them
    options         CompileOptions: braze.compile's options, checked once, the cache key's part
    frontend        torch.export, braze's FX rewrites (fxfix, decompositions, fx_attention),
                    torch-mlir's import into linalg, whether IREE keeps float64
    partition       partial=True: the graph split where an op cannot be compiled
    backend         IREE: flags per target, the module hooks (kernel_embed: generated kernels,
                    built by braze.kernels.build; vulkan_workarounds), compiling
                    (_iree_compiler: the only importer of iree.compiler)
    cuda_plan       the CUDA launch plan, read off IREE's HAL program
    cache           the persistent compile cache: its keys (exact and quick) and cached_compile
    dynamic         dynamic_shapes: the dynamic and static builds

The fusion passes themselves are braze.passes; the runtime (braze.runtime) never imports this
package.
"""

from braze.compiler.stages import ATTENTION_AS_ONE_OP, Lowered, compile, device_pipeline, lower, versions

__all__ = ["ATTENTION_AS_ONE_OP", "Lowered", "compile", "device_pipeline", "lower", "versions"]
