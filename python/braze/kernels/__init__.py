"""Kernels braze generates itself and embeds in IREE's program (CUDA, sm_90).

`spec` (what a kernel computes: plain data, shared with the pass that finds it), `gemm`,
`attention` and `rows` (the Triton templates and their cost model), `build` (Triton compile on a machine
without a GPU, and the on-disk kernel cache), `precision` (what arithmetic a kernel's PTX does:
3xTF32, TF32, bf16, f16, f32 FMAs, checked against its spec at build time and in a compiled
artifact). The back end's hook that embeds them is braze.compiler.kernel_embed. Compile-side
only: braze.load never imports this package.
"""


def triton_version() -> str | None:
    """Triton's version, or None where it is not installed (read from its package metadata:
    importing Triton costs ~0.1 s, which a compile-cache hit should not pay;
    here, not in `build`, whose import takes ~0.02 s)."""
    import importlib.metadata
    import importlib.util

    if importlib.util.find_spec("triton") is None:
        return None
    try:
        return importlib.metadata.version("triton")
    except importlib.metadata.PackageNotFoundError:
        import triton

        return triton.__version__
