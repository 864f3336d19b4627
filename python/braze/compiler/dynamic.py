"""Models whose sizes change from call to call: `braze.compile(..., dynamic_shapes=...)`.

    dim = torch.export.Dim("batch", min=1, max=64)
    fast = braze.compile(model, x, dynamic_shapes={"x": {0: dim}})   # two builds, whatever the batch
    fast(torch.randn(3, 128, 768))                                     # the dynamic build
    fast(x)                                                            # the example's shape: the static build

The policy (`specialize=`):
- the dynamic build: torch.export with the user's `dynamic_shapes`, imported with those sizes
  as IREE dynamic dimensions. braze's passes leave an op whose sizes are dynamic to IREE (its
  groups, tiles and generated kernels need static shapes); IREE compiles every dispatch for
  any size. On CUDA it runs on braze's launcher: the launch plan keeps IREE's size arithmetic
  (grids, offsets, push constants, the results' shapes and the transient buffer's size as
  functions of the inputs' dimensions), evaluated once per input shape, and the results land
  in torch tensors. Elsewhere (or where IREE's program cannot be planned) it runs on
  iree.runtime, its results in IREE's own buffers and its intermediates in one buffer the
  module keeps (IREE's query gives each call's size; the buffer grows to the largest seen).
  Every call whose sizes are in range and not specialized runs it.
- the static build ('example', the default): the example inputs' shapes compiled as braze.compile
  always does (every pass, generated kernels, the CUDA launch plan). A call with exactly those
  shapes runs it. 'none' leaves only the dynamic build.
So a model called with batch sizes 1 to 64 is compiled twice (once with specialize='none'),
each build through the compile cache like any other compile.

A size out of the Dim's range, or two inputs that the export tied to one size disagreeing, is
an InputError naming the input and dimension.
"""

from __future__ import annotations


from braze.errors import InputError
from braze.runtime.dynamic import DynamicModule

POLICIES = ("example", "none")


def describe_dynamic_shapes(dynamic_shapes) -> str:
    """dynamic_shapes as stable text (for cache keys): each Dim by name and range."""
    def text(value) -> str:
        if isinstance(value, dict):
            return "{" + ", ".join(f"{k!r}: {text(v)}" for k, v in sorted(value.items(), key=lambda kv: repr(kv[0]))) + "}"
        if isinstance(value, (list, tuple)):
            return "[" + ", ".join(text(v) for v in value) + "]"
        if hasattr(value, "__name__") and hasattr(value, "min"):
            return f"Dim({value.__name__}, {getattr(value, 'min', None)}, {getattr(value, 'max', None)})"
        return repr(value)

    return text(dynamic_shapes)


def compile_dynamic(compile_static, compile_dynamic_build, model, example_inputs, example_kwargs, dynamic_shapes,
                    specialize: str, opts) -> DynamicModule:
    """braze.compile(dynamic_shapes=...): the dynamic build, then the static one the policy asks for,
    both with the call's CompileOptions `opts`."""
    if specialize not in POLICIES:
        raise InputError(f"specialize={specialize!r}: use 'example' (a static build for the example inputs' "
                         "shapes beside the dynamic build) or 'none' (the dynamic build alone)")
    dynamic = compile_dynamic_build(model, example_inputs, example_kwargs, dynamic_shapes, opts)
    if not dynamic.signature.dims and not any(s.dynamic for s in dynamic.signature.inputs):
        raise InputError(f"dynamic_shapes={describe_dynamic_shapes(dynamic_shapes)} made no size of "
                         f"{type(model).__name__}'s inputs dynamic (torch.export specialized them all: "
                         "the model's code fixes those sizes); compile without dynamic_shapes")
    static = None
    if specialize == "example":
        static = compile_static(model, *example_inputs, example_kwargs=example_kwargs, **opts.call_kwargs())
    return DynamicModule(dynamic, static, specialize)
