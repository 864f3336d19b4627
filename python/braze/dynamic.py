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

import threading

from .errors import InputError

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


class DynamicModule:
    """A model compiled for sizes that change: a static build for the specialized shapes and a
    dynamic build for the rest (see the module docstring). Call it like the model."""

    def __init__(self, dynamic, static=None, policy: str = "example"):
        self.dynamic = dynamic
        """The CompiledModule with dynamic dimensions."""
        self.static = static
        """The CompiledModule for the example inputs' shapes (None with specialize='none')."""
        self.policy = policy
        self.calls = {"static": 0, "dynamic": 0}
        """Calls each build ran (counted under a lock)."""
        self._lock = threading.Lock()
        self._static_shapes = None
        if static is not None:
            self._static_shapes = [tuple(s.shape) for s in static.signature.inputs]
        self.report = dynamic.report
        self.report.extra["dynamic"] = {
            "policy": policy,
            "dims": [dict(d, at=[list(a) for a in d["at"]]) for d in dynamic.signature.dims],
            "static_shapes": [s.describe() for s in static.signature.inputs] if static is not None else [],
            "static_report": static.report.to_json() if static is not None else None,
        }

    @property
    def signature(self):
        return self.dynamic.signature

    def build_for(self, *args, **kwargs) -> str:
        """Which build a call with these arguments runs: 'static' or 'dynamic'."""
        return "static" if self._is_static(args, kwargs) else "dynamic"

    def _is_static(self, args, kwargs) -> bool:
        if self._static_shapes is None:
            return False
        flat = self.dynamic.signature.flatten_call(args, kwargs)
        if len(flat) != len(self._static_shapes):
            return False
        return all(tuple(getattr(v, "shape", ())) == shape for (v, _), shape in zip(flat, self._static_shapes))

    def __call__(self, *args, **kwargs):
        build = "static" if self._is_static(args, kwargs) else "dynamic"
        with self._lock:
            self.calls[build] += 1
        return (self.static if build == "static" else self.dynamic)(*args, **kwargs)

    def save(self, path, overwrite: bool = False):
        raise InputError("a DynamicModule is two builds: save them one by one (module.dynamic.save(path), "
                         "module.static.save(path)); braze.load gives each back")

    def __repr__(self) -> str:
        ins = ", ".join(s.describe() for s in self.dynamic.signature.inputs)
        return (f"<braze.DynamicModule {self.report.model or 'model'}({ins}) on {self.dynamic.target.describe()}, "
                f"static build for {'the example shapes' if self.static is not None else 'none'}>")


def compile_dynamic(compile_static, compile_dynamic_build, model, example_inputs, example_kwargs, dynamic_shapes,
                    specialize: str, options: dict, static_only: dict) -> DynamicModule:
    """braze.compile(dynamic_shapes=...): the dynamic build, then the static one the policy asks for."""
    if specialize not in POLICIES:
        raise InputError(f"specialize={specialize!r}: use 'example' (a static build for the example inputs' "
                         "shapes beside the dynamic build) or 'none' (the dynamic build alone)")
    dynamic = compile_dynamic_build(model, example_inputs, example_kwargs, dynamic_shapes, **options, **static_only)
    if not dynamic.signature.dims and not any(s.dynamic for s in dynamic.signature.inputs):
        raise InputError(f"dynamic_shapes={describe_dynamic_shapes(dynamic_shapes)} made no size of "
                         f"{type(model).__name__}'s inputs dynamic (torch.export specialized them all: "
                         "the model's code fixes those sizes); compile without dynamic_shapes")
    static = None
    if specialize == "example":
        static = compile_static(model, *example_inputs, example_kwargs=example_kwargs, **options, **static_only)
    return DynamicModule(dynamic, static, specialize)
