"""braze's compile side: from a torch model to a CompiledModule (braze.runtime).

    stages          braze.compile and lower(): the stages in order, the cache around them
    frontend        torch.export, braze's FX rewrites (fxfix, decompositions, fx_attention),
                    torch-mlir's import into linalg
    partition       partial=True: the graph split where an op cannot be compiled
    float64_math    float64 math IREE cannot compile, expanded
    backend         IREE: flags per target, the module hooks (kernel_embed: generated kernels;
                    vulkan_workarounds), compiling (_iree_compiler: the only importer of
                    iree.compiler)
    kernel_build    Triton builds of braze's kernel templates (braze.kernels), cached on disk
    cuda_plan       the CUDA launch plan, read off IREE's HAL program
    cache, quickkey the persistent compile cache and its key
    tuning          the user's kernel-configuration cache (braze tune)
    dynamic         dynamic_shapes: the dynamic and static builds

The fusion passes themselves are braze.passes; the runtime (braze.runtime) never imports this
package.
"""

from braze.compiler.stages import ATTENTION_AS_ONE_OP, Lowered, compile, device_pipeline, lower, versions

__all__ = ["ATTENTION_AS_ONE_OP", "Lowered", "compile", "device_pipeline", "lower", "versions"]
