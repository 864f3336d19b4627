"""Front end: a torch.nn.Module and example inputs to linalg-on-tensors IR.

torch.export captures the model, torch-mlir's FX importer turns the graph into the torch
dialect, and torch-mlir's backend pipelines lower it to linalg on tensors, all in a
context that also holds the fusion dialect. Failures become braze errors that name the
aten op, the FX node and the user's source line.
"""

from __future__ import annotations

import contextlib
import logging
import re
import threading
import time
import warnings
from dataclasses import dataclass, field
from typing import Any

from braze.compiler.fx_attention import last_frame as _last_frame
from braze.errors import BrazeWarning, DependencyError, ExportError, InternalError, UnsupportedOpError
from braze.compiler.fxfix import (drop_same_size_expands, fix_empty_tensors, fix_index_with_none, fix_narrow_integers,
                    fix_symbolic_floats, replace_prims_views, SCALAR_COMPARISON)
from braze.signature import Signature, signature_from_export

try:
    import torch
except ImportError as e:  # pragma: no cover
    raise DependencyError(
        "compiling a model needs torch (`pip install torch`); running a saved artifact does not"
    ) from e

from braze.dialects.fusion import new_context

from braze._mlir import fx_importer, ir, passmanager
from braze.irutil import all_ops

BACKEND_LEGAL = ("aten.adaptive_max_pool1d", "aten.adaptive_max_pool2d")
"""Ops torch-mlir's torch-to-backend pipeline must not decompose: its decomposition of adaptive
max pooling into max_pool2d holds only where the output size divides the input size (elsewhere it
emits a cast between incompatible shapes, or a convolution-like op with an unexpected loop), while
its direct lowering (one dynamic window per output element) is right for every size."""


def _torch_to_backend(legal: tuple[str, ...]) -> str:
    return ("builtin.module(func.func(torch-match-quantized-custom-ops),"
            f"torchdynamo-export-to-torch-backend-pipeline{{ extra-library= backend-legal-ops={','.join(legal)}}})")


TORCH_TO_BACKEND = _torch_to_backend(BACKEND_LEGAL)
TORCH_TO_BACKEND_KEEP_SDPA = _torch_to_backend(BACKEND_LEGAL + ("aten.scaled_dot_product_attention",))
"""The same, with SDPA left whole: torch-mlir then lowers it to one tm_tensor.attention."""

BACKEND_TO_LINALG = (
    "builtin.module(torch-backend-to-linalg-on-tensors-backend-pipeline{allow-non-finites=true})"
)


@dataclass
class ImportedModule:
    """linalg-on-tensors IR of a model, in a context of its own, with its call signature."""

    module: ir.Module
    context: ir.Context
    signature: Signature
    exported: Any = None
    """The torch.export ExportedProgram (for error messages and reports)."""
    times: dict[str, float] = field(default_factory=dict)
    """Seconds spent in 'export' and 'import'."""
    attention: dict[str, int] = field(default_factory=dict)
    """Attention lowered as one op: {'rewritten': plain-op patterns turned into SDPA,
    'fused': SDPA calls imported as tm_tensor.attention}; empty when attention=False."""
    softmaxes: list[dict] = field(default_factory=list)
    """Every softmax of the program and whether it became attention, with the form or why not
    (braze.compiler.fx_attention.fuse_attention)."""


def _literal_hooks():
    """torch-mlir FxImporterHooks that turn the frozen program's weights into
    `torch.vtensor.literal`s from their bytes.

    torch-mlir's own path goes through `np.array(tensor.tolist())`, one Python float per
    element: for a TransformerEncoderLayer(768, 12, 3072) (7.1M weights) that took 0.6 s of a
    5.7 s compile (NOTES §32). This copies the bytes instead: the same attribute (a dense resource
    named as torch-mlir names it), the same values bit for bit, NaN payloads and -0.0 included.
    A one-element tensor (a splat), an empty or fake tensor, or a dtype without a numpy
    equivalent is left to torch-mlir's path.
    """
    import numpy as np
    from torch_mlir.extras import fx_importer as fxi

    class Hooks(fxi.FxImporterHooks):
        def __init__(self):
            self._attrs = {}  # id(tensor), or a uint8 tensor's bytes -> (tensor, attribute): a weight used twice is one constant

        def resolve_literal(self, gni, literal, info):
            if type(literal) not in (torch.Tensor, torch.nn.Parameter) or literal.numel() <= 1:
                return None
            npy = fxi.TORCH_DTYPE_TO_NPY_TYPE.get(literal.dtype)
            if npy is None or literal.is_complex() or literal.device.type == "meta":
                return None
            t = literal.detach().cpu().contiguous()
            key = id(literal)
            if t.dtype == torch.uint8:
                # torch-mlir hands a bool tensor over as a fresh uint8 copy at each use: a mask
                # read by every layer is one constant, found by its bytes
                import hashlib

                key = ("uint8", tuple(t.shape), hashlib.blake2b(t.numpy().tobytes(), digest_size=16).digest())
            if key not in self._attrs:
                if t.dtype.is_floating_point and t.element_size() < 4 and t.dtype != torch.float16:
                    raw = t.view({1: torch.uint8, 2: torch.int16}[t.element_size()]).numpy().view(npy)
                else:
                    raw = t.numpy()
                data = np.array(raw, copy=True)  # the attribute keeps this buffer, not the user's weight
                shape = "_".join(str(d) for d in t.shape)
                attr = fxi.DenseResourceElementsAttr.get_from_buffer(
                    data, f"torch_tensor_{shape}_{t.dtype}", fxi.create_mlir_tensor_type(t))
                self._attrs[key] = (literal, attr)
            return fxi.Operation.create(
                name="torch.vtensor.literal", results=[gni._cc.tensor_to_vtensor_type(literal)],
                attributes={"value": self._attrs[key][1]}).result

    return Hooks()


def _model_name(model) -> str:
    return type(model).__name__


_EXPORT_LOCK = threading.RLock()
"""torch.export and its decompositions trace with process-wide modes (`ProxyTorchDispatchMode`):
two threads compiling at once collide ("slot already occupied"), so they take turns."""


@contextlib.contextmanager
def _quiet_torch():
    """Hold the export lock; hide torch's own pytree deprecation warnings and symbolic-shape log
    lines raised inside torch.export (nothing a user can act on)."""
    shapes_log = logging.getLogger("torch.fx.experimental.symbolic_shapes")
    level = shapes_log.level
    with _EXPORT_LOCK, warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*LeafSpec.*", category=FutureWarning)
        shapes_log.setLevel(logging.ERROR)
        try:
            yield
        finally:
            shapes_log.setLevel(level)


def export(model, args: tuple, kwargs: dict, dynamic_shapes=None):
    """torch.export the model; a failure becomes an ExportError naming the model.
    dynamic_shapes: torch.export's argument (which sizes are symbolic), or None (all static)."""
    if not isinstance(model, torch.nn.Module):
        raise ExportError(
            f"braze.compile expects a torch.nn.Module, got {type(model).__name__}. "
            "Wrap a function in a Module whose forward calls it."
        )
    args, kwargs = _distinct_examples(args, kwargs)
    try:
        with _quiet_torch():
            try:
                return torch.export.export(model, tuple(args), dict(kwargs), strict=False, dynamic_shapes=dynamic_shapes)
            except Exception as e:
                if "DataDependent" not in type(e).__name__:
                    raise
            # int(t), float(t) or t.item() used as a Python number: non-strict tracing must guard
            # on its value; Dynamo's strict capture keeps it symbolic.
            return torch.export.export(model, tuple(args), dict(kwargs), strict=True, dynamic_shapes=dynamic_shapes)
    except Exception as e:  # torch.export raises many types; all mean "cannot capture"
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise ExportError(
            f"torch.export could not capture {_model_name(model)} with the given example inputs: "
            f"{type(e).__name__}: {first}. braze compiles what torch.export can capture: make "
            "forward() free of data-dependent Python control flow and pass tensors (or nested "
            "tuples/lists/dicts of tensors) as example inputs."
        ) from e


def _distinct_examples(args: tuple, kwargs: dict) -> tuple[tuple, dict]:
    """The example inputs with every tensor that shares memory with an earlier one cloned.

    torch.export traces aliased example inputs as one input: `f(x, x)` exports a program that
    reads only its second argument, which would ignore the first at every later call with two
    different tensors. The examples only give shapes and dtypes, so copies trace the same."""
    from torch.utils._pytree import tree_map

    seen: set = set()

    def distinct(value):
        if not isinstance(value, torch.Tensor) or value.layout is not torch.strided:
            return value
        key = value.untyped_storage().data_ptr() if value.untyped_storage().nbytes() else id(value)
        if key in seen:
            return value.clone()
        seen.add(key)
        return value

    return tree_map(distinct, (tuple(args), dict(kwargs)))


def import_model(model, args: tuple = (), kwargs: dict | None = None,
                 attention: frozenset = frozenset(), exported=None, dynamic_shapes=None) -> ImportedModule:
    """Export and import a model to linalg-on-tensors IR.

    attention: torch dtypes whose attention becomes one tm_tensor.attention op (see
    braze.compiler.fx_attention): softmax(q k^T * c) v written out is rewritten as SDPA, and SDPA is kept
    whole, when every SDPA call of the model has one of these dtypes (torch-mlir lowers all
    or none). Where torch-mlir cannot lower an SDPA form, the model is imported again with
    attention decomposed, as with an empty set.
    """
    kwargs = kwargs or {}
    if attention:
        try:
            return _import(model, args, kwargs, frozenset(attention), exported, dynamic_shapes)
        except _AttentionNotLowered as e:
            exported = None  # the first attempt rewrote its graph: export again
            why = "torch-mlir's attention lowering failed on it; imported decomposed" + (
                f" ({e.reason})" if e.reason else "")
            softmaxes = [{k: v for k, v in dict(r, attention=False, why=why).items() if k != "form"}
                         if r["attention"] else r for r in e.softmaxes]
            imported = _import(model, args, kwargs, frozenset(), exported, dynamic_shapes)
            imported.softmaxes = softmaxes
            return imported
    return _import(model, args, kwargs, frozenset(), exported, dynamic_shapes)


class _AttentionNotLowered(Exception):
    """torch-mlir failed on a module whose SDPA calls were kept whole (its attention lowering
    covers fewer forms than the decomposition: a 2-D mask, 2-D inputs)."""

    def __init__(self, softmaxes: list, reason: str = ""):
        super().__init__()
        self.softmaxes = softmaxes
        self.reason = reason


def _import(model, args: tuple, kwargs: dict, attention: frozenset, exported=None,
            dynamic_shapes=None) -> ImportedModule:
    """`exported`: the model's torch.export result when the caller already has it (the
    compile cache's key is made of it); this import consumes it (its graph is rewritten)."""
    times = {}
    t0 = time.perf_counter()
    if exported is None:
        exported = export(model, args, kwargs, dynamic_shapes)
    FxImporter, torch_dialect, table = fx_importer()
    from braze.compiler.decompositions import extra_decompositions
    from braze.passes.float64_math import constant_decompositions

    table = {**table, **extra_decompositions(), **constant_decompositions()}
    found, softmaxes = {}, []
    keep_sdpa = False
    if attention:
        from braze.compiler.fx_attention import fuse_attention, masks_to_4d, sdpa_calls

        written = sdpa_calls(exported.graph)  # the model's own SDPA calls, before braze adds any
        found["rewritten"], softmaxes = fuse_attention(exported, attention)
        if masks_to_4d(exported.graph):
            exported.graph_module.recompile()
        calls = sdpa_calls(exported.graph)
        # Kept only when there is one to keep: a kept-SDPA import that fails is imported again.
        keep_sdpa = bool(calls) and all(dtype in attention for dtype in calls.values())
        for n, dtype in written.items():  # the model's own calls get a record too
            record = {"source": _last_frame(n.meta.get("stack_trace")) or n.name, "attention": keep_sdpa}
            if keep_sdpa:
                record["form"] = "scaled_dot_product_attention"
            elif dtype in attention:
                record["why"] = ("decomposed with the module's other attention, in a dtype braze decomposes on "
                                 "this device (torch-mlir lowers every SDPA call of a module or none)")
            else:
                record["why"] = f"scaled_dot_product_attention in {dtype}, which braze decomposes on this device"
            softmaxes.append(record)
        found["fused"] = len(calls) if keep_sdpa else 0
        if keep_sdpa:
            table = {op: fn for op, fn in table.items() if op != torch.ops.aten.scaled_dot_product_attention.default}
    replace_prims_views(exported.graph_module)
    with _quiet_torch():
        try:
            exported = exported.run_decompositions(table)  # also functionalizes: mutations become outputs
        except Exception as e:  # torch's decomposition and functionalization raise plain errors
            first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            raise UnsupportedOpError(
                f"torch could not decompose and functionalize {_model_name(model)}'s exported program, as "
                f"braze must before torch-mlir imports it: {type(e).__name__}: {first[:300]}. Replace the op it "
                "names with standard aten ops (e.g. prims.view_of with a view or clone).") from e
    fix_narrow_integers(exported.graph_module)
    fix_empty_tensors(exported.graph_module)
    sig = exported.graph_signature
    fix_index_with_none(exported.graph_module, frozenset(
        {**sig.inputs_to_lifted_tensor_constants, **sig.inputs_to_buffers, **sig.inputs_to_parameters}))
    drop_same_size_expands(exported.graph_module)
    fix_symbolic_floats(exported.graph_module)
    _refuse_data_dependent_sizes(exported, model)
    state = prepare_state(exported, model)
    scalars = prepare_outputs(exported, model)
    signature = signature_from_export(exported, args, kwargs, state, scalars)
    times["export"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    context = new_context()
    torch_dialect.register_dialect(context)
    importer = FxImporter(context=context, hooks=_literal_hooks())
    try:
        importer.import_frozen_program(exported, func_name="main")
    except Exception as e:  # torch-mlir's importer raises plain Python errors on what it cannot import
        raise _importer_error(e, model) from None
    module = importer.module
    try:
        _run_lowering(module, context, TORCH_TO_BACKEND_KEEP_SDPA if keep_sdpa else TORCH_TO_BACKEND, exported, model)
        _run_lowering(module, context, BACKEND_TO_LINALG, exported, model)
    except UnsupportedOpError as e:
        if keep_sdpa:
            raise _AttentionNotLowered(softmaxes, str(e).strip().splitlines()[0][:200] if str(e).strip() else "") from e
        raise
    _drop_baked_arguments(module, context, model)
    _keep_nan_in_clamps(module, context)
    _check_result_types(module, context, signature, exported, model)
    times["import"] = time.perf_counter() - t0
    return ImportedModule(module, context, signature, exported, times, found, softmaxes)


def prepare_state(exported, model) -> list:
    """Get the exported program ready for torch-mlir's frozen import; return the model's state
    the program reads and writes: [(buffer name, tensor, placeholder name)], in
    program-argument order.

    A buffer the model mutates (BatchNorm's running statistics in train mode, a counter) must
    not be frozen into the program as a constant: it becomes a leading argument of `main`, and
    the call writes its new value back (torch.export lists it among the outputs). Buffers that
    are only read, and non-persistent buffers (rotary tables: `register_buffer(...,
    persistent=False)`, which torch.export keeps in `constants`), are frozen as constants.
    """
    from torch.export.graph_signature import InputKind, InputSpec, OutputKind

    sig = exported.graph_signature
    unsupported = [s for s in sig.output_specs if s.kind not in (
        OutputKind.USER_OUTPUT, OutputKind.BUFFER_MUTATION, OutputKind.USER_INPUT_MUTATION)]
    if unsupported:
        kinds = sorted({s.kind.name for s in unsupported})
        raise UnsupportedOpError(
            f"{_model_name(model)} produces {', '.join(kinds)} outputs "
            f"({unsupported[0].target or getattr(unsupported[0].arg, 'name', unsupported[0].arg)}); "
            "braze compiles inference: it runs forward() without autograd and without mutating parameters. "
            "Keep a parameter's update outside forward(), or make the tensor a buffer (register_buffer), which "
            "braze updates as eager does; compile the forward pass, not a joint forward-backward graph."
        )
    mutated = set(sig.buffers_to_mutate.values())
    state, specs = [], []
    for spec in sig.input_specs:
        if spec.kind == InputKind.BUFFER and spec.target in mutated:
            state.append((spec.target, _state_tensor(exported, spec.target), spec.arg.name))
            specs.append(InputSpec(InputKind.USER_INPUT, spec.arg, None))
        else:
            if spec.kind == InputKind.BUFFER and spec.target not in exported.state_dict:
                # torch-mlir's frozen import reads every buffer from the state dict.
                exported._state_dict[spec.target] = exported.constants[spec.target]
            specs.append(spec)
    sig.input_specs[:] = specs
    return state


SCALAR_DTYPES = {"int": torch.int64, "float": torch.float64, "bool": torch.bool}


def prepare_outputs(exported, model) -> dict:
    """Make every program output a tensor; return what the user's outputs that are not tensors
    are: {user output leaf index: ("const", value) | ("int" | "float" | "bool", None)}.

    A Python number the model returns is either a constant (`3`, `x.shape[0]` for a static
    shape: kept in the signature, not computed) or symbolic (`int(x.max())`, `t.item()`: the
    program returns it as a 0-d tensor, and the call hands back a Python number again)."""
    from torch.export.graph_signature import TensorArgument

    graph = exported.graph
    out_node = next(n for n in graph.nodes if n.op == "output")
    specs = exported.graph_signature.output_specs
    leaves = list(out_node.args[0])
    first_user = len(specs) - sum(1 for s in specs if s.kind.name == "USER_OUTPUT")
    kept, kept_specs, scalars = [], [], {}
    for position, (leaf, spec) in enumerate(zip(leaves, specs)):
        user_index = position - first_user
        if not isinstance(leaf, torch.fx.Node):
            if not isinstance(leaf, (int, float, bool, str, type(None))):
                raise UnsupportedOpError(f"{_model_name(model)} returns a {type(leaf).__name__}; braze returns "
                                         "tensors, numbers, strings and None (in tuples, lists or dicts)")
            scalars[user_index] = ("const", leaf)
            continue
        val = leaf.meta.get("val")
        kind = {torch.SymInt: "int", torch.SymFloat: "float", torch.SymBool: "bool",
                int: "int", float: "float", bool: "bool"}.get(type(val))
        if kind is not None:
            with graph.inserting_before(out_node):
                leaf = graph.call_function(torch.ops.aten.scalar_tensor.default, (leaf,),
                                           {"dtype": SCALAR_DTYPES[kind]})
            leaf.meta["val"] = _fake_scalar(graph, SCALAR_DTYPES[kind])
            spec = type(spec)(spec.kind, TensorArgument(leaf.name), spec.target)
            scalars[user_index] = (kind, None)
        kept.append(leaf)
        kept_specs.append(spec)
    if scalars:
        out_node.args = (tuple(kept),)
        specs[:] = kept_specs
        graph.lint()
        exported.graph_module.recompile()
    return scalars


def _fake_scalar(graph, dtype):
    """A 0-d fake tensor of `dtype` from the graph's own fake mode (torch-mlir types nodes by it)."""
    from torch._subclasses.fake_tensor import FakeTensor

    for node in graph.nodes:
        val = node.meta.get("val")
        if isinstance(val, FakeTensor):
            with val.fake_mode:
                return torch.empty((), dtype=dtype)
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        return torch.empty((), dtype=dtype)


def _state_tensor(exported, name: str):
    if name in exported.state_dict:
        return exported.state_dict[name]
    return exported.constants[name]


def _refuse_data_dependent_sizes(exported, model) -> None:
    """UnsupportedOpError for x[:, mask]: aten.index.Tensor with a boolean index after a None,
    whose size depends on the mask's values (torch.export gives it an unbacked size u0).
    torch-mlir 20261001's lowering of it crashes the process (a segmentation fault); other
    data-dependent sizes (nonzero, bincount, x[mask], a view sized by .item()) it lowers or
    refuses with an error of its own, and they go on to it."""
    from torch.fx.experimental.symbolic_shapes import free_unbacked_symbols

    for node in exported.graph.nodes:
        if node.op != "call_function" or node.target != torch.ops.aten.index.Tensor:
            continue
        value, indices = node.meta.get("val"), list(node.args[1])
        masks = [i for i in indices if isinstance(i, torch.fx.Node) and
                 getattr(i.meta.get("val"), "dtype", None) in (torch.bool, torch.uint8)]
        if not masks or None not in indices or not isinstance(value, torch.Tensor) or not free_unbacked_symbols(value):
            continue
        op = _aten_name(node.target)
        raise UnsupportedOpError(
            f"{_model_name(model)}: the size of '{op}' (FX node '{node.name}', "
            f"{_last_frame(node.meta.get('stack_trace')) or 'unknown source'}) depends on the values of its "
            f"input ({list(value.shape)}): boolean-mask indexing after a full slice (x[:, mask]), which "
            "torch-mlir cannot lower. Keep the shape fixed (torch.where(mask, x, 0)), index with "
            "mask.nonzero()[:, 0], or compile with partial=True to run that op in eager.", op=op, node=node.name)


def _aten_name(target) -> str:
    """An FX node's target as braze's errors name aten ops: torch.ops.aten.index.Tensor ->
    'aten.index' (braze.compiler.partition's fallbacks too)."""
    name = getattr(target, "name", None)
    text = (name() if callable(name) else str(target)).replace("::", ".")
    if "aten." in text:
        text = "aten." + text.split("aten.", 1)[1]
    parts = text.split(".")
    return ".".join(parts[:2]) if text.startswith("aten.") and len(parts) > 2 else text


def _importer_error(error: Exception, model) -> UnsupportedOpError:
    """An UnsupportedOpError naming the FX node torch-mlir's importer failed on, and its source line."""
    node = None
    tb = error.__traceback__
    while tb is not None:
        candidate = tb.tb_frame.f_locals.get("node")
        if isinstance(candidate, torch.fx.Node):
            node = candidate
        tb = tb.tb_next
    where = ""
    if node is not None:
        target = getattr(node.target, "__name__", str(node.target))
        where = f" at FX node '{node.name}' ({target}, {_last_frame(node.meta.get('stack_trace')) or 'unknown source'})"
    text = " ".join(str(error).split()) or type(error).__name__
    return UnsupportedOpError(
        f"torch-mlir's FX importer cannot import {_model_name(model)}{where}: {type(error).__name__}: {text}. "
        "This is a limitation of torch-mlir (a complex Python scalar, an unusual argument); rewrite that "
        "expression (e.g. as a tensor constant), or report it upstream at llvm/torch-mlir.",
        node=node.name if node is not None else None
    )


def _drop_baked_arguments(module, context, model) -> None:
    """Remove main's non-tensor arguments: torch.export baked their values into the program
    (the signature keeps them as in_constants, checked at each call), but the importer still
    lists them (an unused i64 for an `int` argument), which would make the program's arity
    differ from the tensors a call passes."""
    with context:
        main = next(op for op in module.body.operations if op.operation.name == "func.func"
                    and ir.StringAttr(op.operation.attributes["sym_name"]).value == "main").operation
        block = main.regions[0].blocks[0]
        drop = [i for i, arg in enumerate(block.arguments) if not isinstance(arg.type, ir.RankedTensorType)]
        if not drop:
            return
        used = [i for i in drop if list(block.arguments[i].uses)]
        if used:
            raise UnsupportedOpError(
                f"{_model_name(model)}: non-tensor argument {used[0]} of forward() is still used by the "
                "imported program; braze bakes numbers into the program. Pass it as a tensor instead."
            )
        for i in reversed(drop):
            block.erase_argument(i)
        ftype = ir.FunctionType(ir.TypeAttr(main.attributes["function_type"]).value)
        kept = [t for i, t in enumerate(ftype.inputs) if i not in drop]
        main.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get(kept, ftype.results))
        if "arg_attrs" in main.attributes:
            attrs = ir.ArrayAttr(main.attributes["arg_attrs"])
            main.attributes["arg_attrs"] = ir.ArrayAttr.get([a for i, a in enumerate(attrs) if i not in drop])


_ORDERED = {9: 2, 10: 3, 11: 4, 12: 5}
"""arith.cmpf predicates: ugt, uge, ult, ule -> ogt, oge, olt, ole."""


def _keep_nan_in_clamps(module, context) -> int:
    """torch-mlir 20261001 lowers a float clamp's bound (clamp, clamp_min/max, hardtanh, relu6,
    hardsigmoid) as `select(cmpf ult x, lo), lo, x)`: `ult` is true for NaN, so NaN became the
    bound (clamp(nan, -0.5, 0.5) gave -0.5, eager NaN). The ordered predicate keeps x, NaN
    included, and is the same comparison for every other value. Only that shape is rewritten: a
    select of the compared bound, else the compared value, whose compare has no other user."""
    count = 0
    with context:
        for select in all_ops(module.operation, "arith.select"):
            cond, chosen, other = select.operands
            cmp = cond.owner if isinstance(cond, ir.OpResult) else None
            if cmp is None or cmp.name != "arith.cmpf" or len(list(cond.uses)) != 1:
                continue
            predicate = ir.IntegerAttr(cmp.attributes["predicate"])
            if predicate.value not in _ORDERED or cmp.operands[0] != other or cmp.operands[1] != chosen:
                continue
            cmp.attributes["predicate"] = ir.IntegerAttr.get(predicate.type, _ORDERED[predicate.value])
            count += 1
    return count


_ELEMENT_TYPES = {"float64": "f64", "float32": "f32", "float16": "f16", "bfloat16": "bf16", "int64": "i64",
                  "int32": "i32", "int16": "i16", "int8": "i8", "uint8": "i8", "bool": "i1",
                  "complex64": "complex<f32>", "complex128": "complex<f64>"}


def _check_result_types(module, context, signature, exported, model) -> None:
    """Each result of the lowered `main` must have the element type torch computes for that
    output: a lowering that returns another dtype (torch-mlir's threshold_backward kept an int64
    gradient's dtype where eager promotes to float32) would hand the user a wrong result."""
    with context:
        main = next(op for op in module.body.operations if op.operation.name == "func.func"
                    and ir.StringAttr(op.operation.attributes["sym_name"]).value == "main").operation
        results = ir.FunctionType(ir.TypeAttr(main.attributes["function_type"]).value).results
        if len(results) != len(signature.outputs):
            return  # outputs braze returns without computing them: nothing to pair
        for i, (result, spec) in enumerate(zip(results, signature.outputs)):
            got = str(ir.RankedTensorType(result).element_type) if isinstance(result, ir.RankedTensorType) else str(result)
            want = _ELEMENT_TYPES.get(spec.dtype)
            if want is not None and got != want:
                out = exported.graph.find_nodes(op="output")[0].args[0]
                node = out[i] if i < len(out) and isinstance(out[i], torch.fx.Node) else None
                where = f" (computed by {_aten_name(node.target)}, FX node '{node.name}')" if node is not None else ""
                raise InternalError(
                    f"{_model_name(model)}: output {i}{where} lowers to element type {got}, but torch computes "
                    f"{spec.dtype}; braze refuses to return a result of the wrong dtype. This is a bug in braze "
                    "(its torch-mlir lowering), not in the model: please report it with the model.")


_ILLEGAL = re.compile(r"failed to legalize operation '([^']+)'")
_OPERATOR_NAME = re.compile(r'name = "torch\.(aten\.[\w.]+)"')


def _run_lowering(module, context, pipeline: str, exported, model) -> None:
    diagnostics: list[tuple[str, str]] = []

    def handler(d) -> bool:
        diagnostics.append((str(d.location), str(d.message)))
        return True

    with context:
        context.emit_error_diagnostics = True
        handle = context.attach_diagnostic_handler(handler)
        try:
            pm = passmanager.PassManager.parse(pipeline)
            pm.run(module.operation)
            failed = None
        except ir.MLIRError as e:
            failed = e
        finally:
            handle.detach()
    if failed is None:
        return
    errors = [(loc, msg) for loc, msg in diagnostics] or [("unknown", str(failed))]
    loc, msg = errors[0]
    aten = _aten_op_name(msg)
    if aten:
        node, source = _find_fx_node(exported, aten, loc)
        raise UnsupportedOpError(
            f"torch-mlir cannot lower '{aten}' (FX node '{node}', {source}) of "
            f"{_model_name(model)} to linalg. Replace it in the model with ops torch-mlir supports "
            "(or decompose it by hand), or file the op upstream at llvm/torch-mlir.", op=aten, node=node
        )
    raise UnsupportedOpError(
        f"torch-mlir failed to lower {_model_name(model)} to linalg at {loc}: {msg.splitlines()[0]}"
    )


def _aten_op_name(message: str) -> str | None:
    m = _OPERATOR_NAME.search(message)
    if m:
        return m.group(1)
    m = _ILLEGAL.search(message)
    if m and m.group(1).startswith("torch.aten."):
        return m.group(1)[len("torch."):]
    return None


def _find_fx_node(exported, aten: str, loc: str) -> tuple[str, str]:
    """The FX node calling `aten` (e.g. 'aten.special_i0e') and its user source line."""
    m = re.search(r'"([^"]+)":(\d+)', loc)
    file, line = (m.group(1), int(m.group(2))) if m else (None, None)
    short = aten.split(".", 1)[1]
    candidates = []
    for node in exported.graph.nodes:
        if node.op != "call_function":
            continue
        target = getattr(node.target, "__name__", str(node.target))
        if target.split(".")[0] == short:
            candidates.append(node)
    for node in candidates:
        trace = node.meta.get("stack_trace") or ""
        if file and f'{file}", line {line}' in trace:
            return node.name, f"{file}:{line}"
    if candidates:
        node = candidates[0]
        return node.name, _last_frame(node.meta.get("stack_trace")) or (f"{file}:{line}" if file else "unknown source")
    return "unknown", f"{file}:{line}" if file else "unknown source"


NORMALIZATIONS = ("aten.native_layer_norm", "aten.native_group_norm")
"""Ops whose statistics eager's CPU kernels accumulate in float32 for float32 inputs (var, std,
var_mean and batch norm's statistics accumulate in float64 there)."""


def float64_origins(exported) -> dict[str, list[str]]:
    """Where a program's 64-bit floats come from, each as 'op (file:line)', read off the exported
    program's FX nodes: 'own', the model's own float64 or complex128 values (x.double(), a
    float64 buffer); 'statistics', var/std/var_mean/std_mean ops, which torch-mlir computes in
    float64 (its variance decomposition upcasts a 32-bit input); 'normalization', those of them
    that a LayerNorm or GroupNorm decomposed into."""
    found: dict[str, list[str]] = {"own": [], "statistics": [], "normalization": []}
    for node in exported.graph.nodes:
        if node.meta.get(SCALAR_COMPARISON):
            continue  # Python floats compared as 0-d float64 tensors (fxfix): float64 in eager too
        where = _last_frame(node.meta.get("stack_trace")) or "no source line"
        what = node.name if node.op == "placeholder" else getattr(node.target, "__name__", str(node.target))
        if getattr(node.meta.get("val"), "dtype", None) in (torch.float64, torch.complex128):
            found["own"].append(f"{what} ({where})")
        elif node.op == "call_function" and re.match(r"aten\.(var|std)(_mean)?\.", str(node.target)):
            origin = str(node.meta.get("original_aten", ""))
            kind = "normalization" if origin.startswith(NORMALIZATIONS) else "statistics"
            found[kind].append(f"{origin.split('.')[1] if kind == 'normalization' else what} ({where})")
    return found


def keeps_float64(imported, tgt, name: str, report) -> tuple[bool, str]:
    """Whether IREE keeps the program's 64-bit floats (backend._common_flags), and where a kept
    float64 is only inside the program: which ops, for the warning if IREE cannot compile them.

    IREE demotes f64 and complex<f64> to 32 bits by default. That returned float64 and complex128
    results as 32-bit ones, and Var of values near 100 as 0.1995 for 0.0834 (torch-mlir takes
    var/std's statistics in float64; in float32 a sum of 8M values near 100 loses its mean).
    braze keeps float64 where eager computes in it: the model's float64 and complex128 values,
    and on the CPU the statistics of var/std/var_mean (eager's CPU kernels accumulate them in
    float64). Demoted: a LayerNorm's or GroupNorm's statistics, which eager's CPU kernels
    accumulate in float32 (kept, they cost the LayerNorm a second dispatch: IREE forms the
    float32 mean and the float64 variance apart), and everything on CUDA and Vulkan, where
    IREE 3.13 cannot compile a float64 reduction ("failed to distribute"; Vulkan: shared memory
    over the limit) and eager's kernels accumulate var/std in float32; there the model's own
    float64 is demoted with a warning."""
    from braze.irutil import float64_ops, short_location

    sig = imported.signature
    visible = [s.dtype for s in sig.program_inputs + sig.outputs if s.dtype in ("float64", "complex128")]
    if visible:
        report.extra["float64"] = f"kept: the model takes or returns {visible[0]}"
        return True, ""
    with imported.context:
        # float64 constants alone (Python scalars the program rounds to float32) are the same
        # demoted; so are empty tensors
        ops = [op for op in float64_ops(imported.module.operation)
               if op.name not in ("arith.constant", "tensor.empty")]
        if not ops:
            return False, ""
        located = [(op.name, short_location(str(op.location))) for op in ops]
    where = "{} at {}".format(*next((o for o in located if o[1] != "unknown"), located[0]))
    origins = float64_origins(imported.exported)

    def listed(items: list[str]) -> str:
        return ", ".join(items[:3]) + (f" and {len(items) - 3} more" if len(items) > 3 else "")

    own, statistics = origins["own"], origins["statistics"]
    if tgt.device != "cpu":
        report.extra["float64"] = f"demoted to float32 for {tgt.describe()} (first: {where})"
        if own:
            warnings.warn(
                f"braze.compile: {name} computes in float64 inside ({listed(own)}), but IREE cannot compile "
                f"float64 reductions for {tgt.describe()}: braze lets IREE demote that float64 to float32, and "
                "results can differ from eager's where float32 loses precision. Compile for the CPU, which "
                "keeps float64, or compute in float32 to say so.", BrazeWarning, stacklevel=6)
        return False, ""
    if not own and not statistics and origins["normalization"]:
        report.extra["float64"] = ("demoted to float32: only normalization statistics, which eager accumulates "
                                   f"in float32 too ({listed(origins['normalization'])})")
        return False, ""
    inside = listed(own + statistics) or where
    report.extra["float64"] = f"kept: the program computes in float64 inside ({inside})"
    return True, inside
