"""A model compiled for sizes that change: its two builds, called by shape (braze.compile's
dynamic_shapes; braze/compiler/dynamic.py says how they are built and the policy)."""

from __future__ import annotations

import threading

from braze.errors import InputError


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
