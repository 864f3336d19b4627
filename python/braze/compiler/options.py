"""braze.compile's options as one value: checked once, passed whole through the stages (and to
the partial and dynamic compiles that compile again), and the options part of the cache key.

    opts = CompileOptions.from_call(device="cuda", precision="highest")
    opts.cache_choices()     # what of them decides the compiled program (the compile cache's key)
    opts.call_kwargs()       # the same options as braze.compile's keywords
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from braze.errors import InputError
from braze.runtime.module import RUNTIMES


@dataclass(frozen=True)
class CompileOptions:
    """Every keyword of braze.compile but the model's own (example_kwargs, dynamic_shapes,
    specialize, partial); braze.compile's docstring says what each does."""

    device: str = "cpu"
    target: str | None = None
    fusion: bool = True
    pipeline: str | None = None
    output_storage: bool | None = None
    transient_storage: bool = True
    iree_flags: tuple[str, ...] = ()
    attention: bool | None = None
    decision_limit: int | None = None
    runtime: str | None = None
    cache: bool | None = None
    precision: str | None = None
    inputs_in_place: bool = False

    @classmethod
    def from_call(cls, iree_flags=None, runtime: str | None = None, **kwargs) -> "CompileOptions":
        """The options of a braze.compile call, each checked where a wrong value would only fail
        later (an InputError naming the keyword)."""
        if iree_flags is not None and (isinstance(iree_flags, str) or not all(isinstance(f, str) for f in iree_flags)):
            raise InputError(f"iree_flags={iree_flags!r}: give a list of iree-compile flags, "
                             "e.g. iree_flags=['--iree-opt-level=O3']")
        if runtime not in (None,) + RUNTIMES:
            raise InputError(f"runtime={runtime!r}: use 'launch', 'iree' or None (the launcher where it can run)")
        return cls(iree_flags=tuple(iree_flags or ()), runtime=runtime, **kwargs)

    def cache_choices(self) -> dict:
        """The options that decide the compiled program beside the target and the pipeline's
        text, which the cache key holds apart (device, target and precision decide those; `cache`
        only whether to look)."""
        return {"fusion": self.fusion, "pipeline": self.pipeline, "output_storage": self.output_storage,
                "transient_storage": self.transient_storage, "iree_flags": list(self.iree_flags),
                "attention": self.attention, "decision_limit": self.decision_limit, "runtime": self.runtime,
                "inputs_in_place": self.inputs_in_place}

    def call_kwargs(self) -> dict:
        """braze.compile(model, *inputs, **opts.call_kwargs()) compiles with these options."""
        kwargs = asdict(self)
        kwargs["iree_flags"] = list(self.iree_flags)
        return kwargs
