"""braze as a torch.compile backend.

    model = torch.compile(model, backend="braze")                       # the CPU
    model = torch.compile(model, backend="braze", options={"device": "cuda", "fusion": True})

Registered through the `torch_dynamo_backends` entry point (pyproject.toml), so the string
"braze" works once braze is installed. Dynamo captures forward() as FX graphs, splitting it at
what it cannot trace (print, data-dependent Python, calls into other libraries: graph breaks);
this backend compiles each graph with `braze.compile(graph, *example_inputs, **options)` for
inference and returns the compiled module as the graph's code. `options` are braze.compile's
keyword arguments (device, target, fusion, attention, runtime, iree_flags, ...).

A graph runs in eager instead, with one BrazeWarning saying why, when:
- it needs autograd (grad mode on and an input or parameter that requires grad: braze computes
  no gradients), so training under torch.compile(backend="braze") stays correct;
- it takes a symbolic size that is no input tensor's dimension, or a dimension that is an
  expression of others (braze's dynamic builds take each symbol from a tensor dimension);
- braze cannot compile it at all (the warning says why).
A graph Dynamo made dynamic (its second size of an input: automatic dynamic shapes, or
torch.compile(dynamic=True)) takes its symbolic sizes as inputs; braze compiles it at its first
call as braze.compile(..., dynamic_shapes=...) does (braze.compiler.dynamic: one dynamic build for every
size, a static one for that first call's shapes), reading each size off the tensor dimension
Dynamo traced it from. A graph with ops torch-mlir cannot lower is compiled in pieces around them (braze.compiler.partition;
options={"partial": False} turns that off): those ops run in eager, listed in the graph's
report (`fallbacks`) and in one warning.
`braze.dynamo.graphs()` lists every graph this process handed braze, compiled or not, with its
report or the reason it runs in eager.
"""

from __future__ import annotations

import inspect
import threading
import warnings
from dataclasses import dataclass, field

from braze.errors import BrazeError, BrazeWarning, InputError


@dataclass
class Graph:
    """One FX graph Dynamo handed braze."""

    name: str
    ops: int
    compiled: bool
    reason: str = ""
    report: object | None = None
    calls: int = field(default=0, compare=False)


_GRAPHS: list[Graph] = []
_LOCK = threading.Lock()


def graphs() -> list[Graph]:
    """Every graph handed to the braze backend in this process, in order."""
    with _LOCK:
        return list(_GRAPHS)


def reset() -> None:
    """Forget the graphs listed by graphs() (torch._dynamo.reset() calls this)."""
    with _LOCK:
        _GRAPHS.clear()


def _compile_options() -> set[str]:
    from braze.compiler import compile as braze_compile

    params = inspect.signature(braze_compile).parameters
    return {n for n, p in params.items() if p.kind == p.KEYWORD_ONLY} - {"example_kwargs"}


def _output_structure(gm):
    """The pytree spec of what the graph returns, and whether every leaf is a tensor node."""
    import torch.utils._pytree as pytree

    out = next(n for n in gm.graph.nodes if n.op == "output")
    leaves, spec = pytree.tree_flatten(out.args[0])
    return spec, all(hasattr(leaf, "op") for leaf in leaves)


def _needs_autograd(gm, example_inputs) -> bool:
    import torch

    if not torch.is_grad_enabled():
        return False
    tensors = [t for t in example_inputs if isinstance(t, torch.Tensor)]
    tensors += list(gm.parameters()) + [b for b in gm.buffers()]
    return any(t.requires_grad for t in tensors)


def _eager(gm, graph: Graph, why: str):
    graph.compiled, graph.reason = False, why
    warnings.warn(BrazeWarning(f"torch.compile(backend='braze'): {graph.name} ({graph.ops} ops) runs in eager: {why}"),
                  stacklevel=2)
    return gm.forward


def backend(gm, example_inputs, *, options: dict | None = None, mode: str | None = None):
    """The torch.compile backend: a compiled callable for one FX graph (or its eager forward)."""
    import torch
    import torch.utils._pytree as pytree

    from braze.compiler import compile as braze_compile

    options = dict(options or {})
    unknown = sorted(set(options) - _compile_options())
    if unknown:
        raise InputError(f"torch.compile(backend='braze', options=...): unknown option(s) {', '.join(unknown)}; "
                         f"braze takes {', '.join(sorted(_compile_options()))}")
    ops = sum(1 for n in gm.graph.nodes if n.op in ("call_function", "call_method", "call_module"))
    with _LOCK:
        graph = Graph(name=f"graph {len(_GRAPHS)}", ops=ops, compiled=False)
        _GRAPHS.append(graph)
    if mode not in (None, "default"):
        warnings.warn(BrazeWarning(f"torch.compile(backend='braze'): mode={mode!r} is Inductor's; braze ignores it"),
                      stacklevel=2)
    if ops == 0:
        graph.reason = "nothing to compile"
        return gm.forward
    if _needs_autograd(gm, example_inputs):
        return _eager(gm, graph, "it needs autograd (grad mode is on and a tensor requires grad); braze compiles "
                                 "for inference: call it under torch.no_grad() or torch.inference_mode()")
    dynamic = None
    if not all(isinstance(t, torch.Tensor) for t in example_inputs):
        dynamic = _dynamic_sizes(gm, example_inputs)
        if isinstance(dynamic, str):
            return _eager(gm, graph, dynamic)
    spec, all_tensors = _output_structure(gm)
    if not all_tensors:
        return _eager(gm, graph, "it returns values that are not tensors")
    if "device" not in options:
        devices = {t.device.type for t in example_inputs if isinstance(t, torch.Tensor)}
        options["device"] = "cuda" if "cuda" in devices else "cpu"
    options.setdefault("partial", True)
    if dynamic is not None:
        return _lazy_dynamic(gm, graph, example_inputs, dynamic, spec, options)
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*training mode.*", category=BrazeWarning)
            warnings.filterwarnings("ignore", message=".*op\\(s\\) in eager.*", category=BrazeWarning)
            compiled = braze_compile(gm, *example_inputs, **options)
    except BrazeError as e:
        first = str(e).splitlines()[0] if str(e) else type(e).__name__
        return _eager(gm, graph, f"braze could not compile it ({type(e).__name__}: {first})")
    graph.compiled, graph.report = True, compiled.report
    fallbacks = getattr(compiled.report, "fallbacks", None)
    if fallbacks:
        ops = ", ".join(sorted({f["op"] for f in fallbacks}))
        graph.reason = f"{len(fallbacks)} op(s) in eager ({ops}) between {len(compiled.report.pieces)} compiled piece(s)"
        warnings.warn(BrazeWarning(f"torch.compile(backend='braze'): {graph.name} runs {graph.reason}"), stacklevel=2)

    def run(*args):
        graph.calls += 1
        result = compiled(*args)
        leaves = list(result) if isinstance(result, (tuple, list)) else [result]
        return pytree.tree_unflatten(leaves, spec)

    run.braze_module = compiled
    return run


def _lazy_dynamic(gm, graph: Graph, example_inputs, dynamic, spec, options: dict):
    """A graph with dynamic sizes is compiled at its first call (braze.compile(dynamic_shapes=...)
    on that call's tensors: torch.export inside Dynamo's own compile of the frame breaks Dynamo's
    guards), then runs as a DynamicModule; if braze cannot compile it, it runs in eager."""
    import torch
    import torch.utils._pytree as pytree

    from braze.compiler import compile as braze_compile

    tensors = [i for i, t in enumerate(example_inputs) if isinstance(t, torch.Tensor)]
    wrapper, shapes = dynamic
    options = {k: v for k, v in options.items() if k != "partial"}  # a dynamic build compiles the graph whole
    state: dict = {}
    lock = threading.Lock()
    graph.compiled, graph.reason = True, "dynamic sizes: compiled at its first call"

    def run(*args):
        with lock:
            if not state:
                try:
                    with warnings.catch_warnings():
                        warnings.filterwarnings("ignore", message=".*training mode.*", category=BrazeWarning)
                        state["module"] = braze_compile(wrapper, *[args[i] for i in tensors],
                                                        dynamic_shapes=shapes, **options)
                    graph.report = state["module"].report
                    graph.reason = "dynamic sizes: a dynamic build and a static one for the first call's shapes"
                except BrazeError as e:
                    first = str(e).splitlines()[0] if str(e) else type(e).__name__
                    state["module"] = None
                    _eager(gm, graph, f"braze could not compile it with dynamic sizes ({type(e).__name__}: {first})")
        graph.calls += 1
        module = state["module"]
        if module is None:
            return gm.forward(*args)
        result = module(*[args[i] for i in tensors])
        leaves = list(result) if isinstance(result, (tuple, list)) else [result]
        return pytree.tree_unflatten(leaves, spec)

    return run


def _sizes_from_tensors(gm, order: list):
    """A module calling a Dynamo graph that takes its symbolic sizes as inputs (SymInt
    placeholders) with only its tensors: `order` says, per placeholder, ("tensor", None) or
    ("size", (tensor, dimension)), the tensor dimension Dynamo traced that size from."""
    import torch

    class SizesFromTensors(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.graph_module = gm

        def forward(self, *tensors):
            args, it = [], iter(tensors)
            for kind, where in order:
                args.append(next(it) if kind == "tensor" else tensors[where[0]].shape[where[1]])
            return self.graph_module(*args)

    return SizesFromTensors()


def _dynamic_sizes(gm, example_inputs):
    """(a module taking the graph's tensors alone, their dynamic_shapes) for a graph Dynamo made
    dynamic, or why braze runs it in eager."""
    import torch
    from torch.export import Dim

    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    if len(placeholders) != len(example_inputs):
        return "its inputs do not match its placeholders"
    # Per symbol: the first tensor dimension of that size, and one Dim every such dimension shares.
    sources, dims_of, shapes = {}, {}, []
    for node, value in zip(placeholders, example_inputs):
        if not isinstance(value, torch.Tensor):
            continue
        fake = node.meta.get("example_value", node.meta.get("val"))
        dims = {}
        for j, size in enumerate(getattr(fake, "shape", ())):
            if isinstance(size, torch.SymInt):
                expr = size.node.expr
                if not expr.is_symbol:
                    return (f"a size of its input {node.name} is an expression of others ({expr}), which "
                            "braze's dynamic builds do not take yet: torch.compile(..., dynamic=False)")
                sources.setdefault(str(expr), (len(shapes), j))
                dims[j] = dims_of.setdefault(str(expr), Dim(f"{node.name}_{j}"))
        shapes.append(dims or None)
    order = []
    for node, value in zip(placeholders, example_inputs):
        if isinstance(value, torch.Tensor):
            order.append(("tensor", None))
            continue
        fake = node.meta.get("example_value", value)
        expr = getattr(getattr(fake, "node", None), "expr", None)
        if expr is None or str(expr) not in sources:
            return (f"it takes a {type(value).__name__} input ({node.name}) that is no input tensor's size, which "
                    "braze's dynamic builds do not take yet: torch.compile(..., dynamic=False)")
        order.append(("size", sources[str(expr)]))
    return _sizes_from_tensors(gm, order), (tuple(shapes),)


def _reset_hook() -> None:
    """torch._dynamo.reset() calls a backend's `reset` attribute."""
    reset()


backend.reset = _reset_hook
