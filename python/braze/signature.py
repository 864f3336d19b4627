"""Call signatures: how a model's nested inputs and outputs map to flat tensors.

torch.export flattens (args, kwargs) and the outputs into leaves. braze records that
structure as plain JSON (no torch needed to read it back), so a loaded artifact accepts
the same nested tuples/lists/dicts and returns the same structure as the model.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any

from braze.errors import InputError

DTYPES = ("float32", "float16", "bfloat16", "float64", "int64", "int32", "int16", "int8", "uint8", "bool",
          "complex64", "complex128")
"""Tensor dtypes braze can pass to and from IREE, by torch's name without 'torch.'."""


DYNAMIC = -1
"""A dimension of a dynamic build (braze.compile(dynamic_shapes=...)) whose size is known at run time."""


@dataclass
class TensorSpec:
    shape: list[int]
    """Sizes; DYNAMIC (-1) for a dimension the program takes at run time."""
    dtype: str

    def to_json(self) -> dict:
        return {"shape": list(self.shape), "dtype": self.dtype}

    def describe(self) -> str:
        return f"{self.dtype}[{', '.join('?' if d == DYNAMIC else str(d) for d in self.shape)}]"

    @property
    def dynamic(self) -> bool:
        return DYNAMIC in self.shape

    def matches(self, shape) -> bool:
        """Whether a tensor of `shape` fits: same rank, same size wherever this one is static."""
        return len(shape) == len(self.shape) and all(s == DYNAMIC or s == d for s, d in zip(self.shape, shape))

    def concrete(self, shape) -> "TensorSpec":
        """This spec with the sizes of an actual tensor (itself when it is static)."""
        return TensorSpec(list(shape), self.dtype) if self.dynamic else self


@dataclass
class Signature:
    """Input and output structure plus the flat tensor specs of each side.

    `in_tree`/`out_tree` are nested dicts: {"t": "leaf"}, {"t": "tuple"|"list", "c": [...]},
    {"t": "dict", "k": [keys], "c": [...]}, {"t": "none"}. Input leaves that were not tensors
    in the example (ints, floats, bools) were baked into the program by torch.export; they
    are kept in `in_constants` (leaf index -> value) and must match at call time.
    """

    in_tree: dict
    inputs: list[TensorSpec]
    out_tree: dict
    outputs: list[TensorSpec]
    in_constants: dict[int, Any] = field(default_factory=dict)
    input_names: list[str] = field(default_factory=list)
    state: list[str] = field(default_factory=list)
    """Buffers the program reads and writes (mutated buffers), by name: its leading arguments,
    before the user's tensors; their specs are the first entries of `program_inputs`."""
    state_specs: list[TensorSpec] = field(default_factory=list)
    mutations: list[dict] = field(default_factory=list)
    """What the program's leading outputs are, in order: {"kind": "buffer", "index": i} (the new
    value of state[i]) or {"kind": "input", "index": i} (of the user's tensor input i); the
    user's outputs follow."""
    out_scalars: dict[int, list] = field(default_factory=dict)
    """User output leaves that are not tensors: leaf index -> ["const", value] (returned as is,
    not computed) or ["int" | "float" | "bool", None] (a 0-d program output turned back into a
    Python number)."""
    dims: list[dict] = field(default_factory=list)
    """A dynamic build's symbolic sizes: {"name": torch.export's symbol, "min", "max" (None: no
    bound), "at": [[input, dimension], ...] (every user input dimension of that size)}."""

    @property
    def program_inputs(self) -> list[TensorSpec]:
        return self.state_specs + self.inputs

    @property
    def user_outputs(self) -> list[TensorSpec]:
        return self.outputs[len(self.mutations):]

    def to_json(self) -> dict:
        return {
            "in_tree": self.in_tree,
            "inputs": [t.to_json() for t in self.inputs],
            "out_tree": self.out_tree,
            "outputs": [t.to_json() for t in self.outputs],
            "in_constants": {str(k): v for k, v in self.in_constants.items()},
            "input_names": self.input_names,
            "state": self.state,
            "state_specs": [t.to_json() for t in self.state_specs],
            "mutations": self.mutations,
            "out_scalars": {str(k): list(v) for k, v in self.out_scalars.items()},
            "dims": self.dims,
        }

    @classmethod
    def from_json(cls, data: dict) -> "Signature":
        spec = lambda t: TensorSpec([int(d) for d in t["shape"]], str(t["dtype"]))  # noqa: E731
        signature = cls(
            in_tree=dict(data["in_tree"]),
            inputs=[spec(t) for t in data["inputs"]],
            out_tree=dict(data["out_tree"]),
            outputs=[spec(t) for t in data["outputs"]],
            in_constants={int(k): v for k, v in data.get("in_constants", {}).items()},
            input_names=[str(n) for n in data.get("input_names", [])],
            state=[str(n) for n in data.get("state", [])],
            state_specs=[spec(t) for t in data.get("state_specs", [])],
            mutations=[{"kind": str(m["kind"]), "index": int(m["index"])} for m in data.get("mutations", [])],
            out_scalars={int(k): [str(v[0]), v[1]] for k, v in data.get("out_scalars", {}).items()},
            dims=[{"name": str(d["name"]), "min": d.get("min"), "max": d.get("max"),
                   "at": [[int(i), int(j)] for i, j in d["at"]]} for d in data.get("dims", [])],
        )
        signature.validate()
        return signature

    def validate(self) -> None:
        """ValueError when the parts do not fit together (a damaged artifact)."""
        if any(t.dtype not in DTYPES or any(d < DYNAMIC for d in t.shape)
               for t in self.inputs + self.outputs + self.state_specs):
            raise ValueError("a tensor spec has an unknown dtype or a negative dimension")
        if len(self.state) != len(self.state_specs) or len(self.mutations) > len(self.outputs):
            raise ValueError("state or mutations do not match the program's inputs and outputs")
        for m in self.mutations:
            limit = len(self.state) if m["kind"] == "buffer" else len(self.inputs) if m["kind"] == "input" else -1
            if not 0 <= m["index"] < limit:
                raise ValueError(f"mutation {m} names no {m['kind']}")
        leaves = _count_leaves(self.out_tree)
        computed = leaves - sum(1 for kind, _ in self.out_scalars.values() if kind == "const")
        if computed != len(self.user_outputs) or any(k not in ("const", "int", "float", "bool")
                                                     for k, _ in self.out_scalars.values()):
            raise ValueError(f"the output structure has {leaves} leaves for {len(self.user_outputs)} outputs")

    def check_dims(self, values: list, names: list[str]) -> None:
        """InputError unless every symbolic size is one size within its range in this call
        (tensor inputs in program order, after any state)."""
        offset = len(values) - len(self.inputs)
        for d in self.dims:
            sizes = [(values[offset + i].shape[j], names[offset + i], j) for i, j in d["at"]]
            size, name, j = sizes[0]
            for other, other_name, k in sizes[1:]:
                if other != size:
                    raise InputError(f"{other_name} dimension {k} is {other} but {name} dimension {j} is {size}: "
                                     f"the model was compiled with both as one size ({d['name']})")
            low, high = d["min"], d["max"]
            if (low is not None and size < low) or (high is not None and size > high):
                raise InputError(f"{name} dimension {j} is {size}, outside the range the model was compiled "
                                 f"for ({d['name']} in [{low}, {high}]); recompile with a wider Dim")

    def flatten_call(self, args: tuple, kwargs: dict) -> list:
        """The tensor leaves of a call, in program order; InputError on a structure mismatch."""
        flat = self._positional_paths
        if flat is not None and not kwargs and len(args) == len(flat):
            return list(zip(args, flat))  # the common case, without walking the tree (8-12 us a call on the H200 host)
        leaves: list = []
        paths: list[str] = []
        _flatten(self.in_tree, (tuple(args), dict(kwargs)), "", leaves, paths)
        tensors = []
        for i, (leaf, path) in enumerate(zip(leaves, paths)):
            if i in self.in_constants:
                if leaf != self.in_constants[i]:
                    raise InputError(
                        f"argument {path or 'input'} was {self.in_constants[i]!r} when the model was "
                        f"compiled and is baked into the program; got {leaf!r}. Recompile with the new value."
                    )
            else:
                tensors.append((leaf, path))
        return tensors

    @functools.cached_property
    def _positional_paths(self) -> list[str] | None:
        """Leaf paths when the inputs are only positional tensors (no kwargs, nesting or constants)."""
        args_tree, kwargs_tree = self.in_tree["c"] if self.in_tree.get("t") == "tuple" else (None, None)
        plain = (args_tree is not None and args_tree["t"] == "tuple" and kwargs_tree["t"] == "dict"
                 and not kwargs_tree["k"] and all(c["t"] == "leaf" for c in args_tree["c"])
                 and not self.in_constants)
        return [f"[0][{i}]" for i in range(len(args_tree["c"]))] if plain else None

    def unflatten_outputs(self, values: list) -> Any:
        if self.out_scalars:
            values = list(values)
            leaves, it = [], iter(values)
            for i in range(_count_leaves(self.out_tree)):
                kind, constant = self.out_scalars.get(i, ("tensor", None))
                if kind == "const":
                    leaves.append(constant)
                elif kind == "tensor":
                    leaves.append(next(it))
                else:
                    value = next(it)
                    number = value.item() if hasattr(value, "item") else value
                    leaves.append({"int": int, "float": float, "bool": bool}[kind](number))
            values = leaves
        return _unflatten(self.out_tree, iter(values))


def _flatten(tree: dict, value: Any, path: str, leaves: list, paths: list) -> None:
    kind = tree["t"]
    if kind == "leaf":
        leaves.append(value)
        paths.append(path)
    elif kind == "none":
        if value is not None:
            raise InputError(f"argument {path} must be None, as in the example inputs; got {type(value).__name__}")
    elif kind in ("tuple", "list"):
        if not isinstance(value, (tuple, list)) or len(value) != len(tree["c"]):
            got = f"{type(value).__name__} of {len(value)}" if isinstance(value, (tuple, list)) else type(value).__name__
            where = "the positional arguments" if path == "[0]" else f"argument {path or 'input'}"
            raise InputError(
                f"{where}: expected a {kind} of {len(tree['c'])} items as in the example inputs, got {got}"
            )
        for i, (child, v) in enumerate(zip(tree["c"], value)):
            _flatten(child, v, f"{path}[{i}]", leaves, paths)
    elif kind == "dict":
        if not isinstance(value, dict) or set(value) != set(tree["k"]):
            have = sorted(map(str, value)) if isinstance(value, dict) else type(value).__name__
            where = "the keyword arguments" if path == "[1]" else f"argument {path}"
            raise InputError(f"{where}: expected keys {sorted(map(str, tree['k']))}, got {have}")
        for k, child in zip(tree["k"], tree["c"]):
            _flatten(child, value[k], f"{path}[{k!r}]", leaves, paths)
    else:
        raise InputError(f"unsupported input structure '{kind}' at {path}")


def _count_leaves(tree: dict) -> int:
    kind = tree.get("t") if isinstance(tree, dict) else None
    if kind == "leaf":
        return 1
    if kind == "none":
        return 0
    if kind in ("tuple", "list", "dict"):
        return sum(_count_leaves(c) for c in tree.get("c", []))
    raise ValueError(f"unknown output structure node {tree!r}")


def _unflatten(tree: dict, it) -> Any:
    kind = tree["t"]
    if kind == "leaf":
        return next(it)
    if kind == "none":
        return None
    if kind == "tuple":
        return tuple(_unflatten(c, it) for c in tree["c"])
    if kind == "list":
        return [_unflatten(c, it) for c in tree["c"]]
    if kind == "dict":
        return {k: _unflatten(c, it) for k, c in zip(tree["k"], tree["c"])}
    raise ValueError(f"unknown tree node {kind}")


def describe_path(path: str) -> str:
    """'[0][1]' -> 'args[1]', "[1]['x']" -> "kwargs['x']"."""
    if path.startswith("[0]"):
        return "args" + path[3:]
    if path.startswith("[1]"):
        return "kwargs" + path[3:]
    return path


# ---------------------------------------------------------------------------
# Building a signature from torch.export (compile side only: imports torch lazily).


def _tree_from_spec(spec) -> dict:
    if spec.is_leaf():
        return {"t": "leaf"}
    import collections

    typ = spec.type
    children = [_tree_from_spec(c) for c in (spec.children() if hasattr(spec, "children") else spec.children_specs)]
    if typ is type(None):
        return {"t": "none"}
    if typ is tuple or (isinstance(typ, type) and issubclass(typ, tuple)):
        return {"t": "tuple", "c": children}
    if typ is list:
        return {"t": "list", "c": children}
    if typ in (dict, collections.OrderedDict):
        return {"t": "dict", "k": list(spec.context), "c": children}
    raise InputError(
        f"braze does not support {getattr(typ, '__name__', typ)} in a model's inputs or outputs; "
        "use tensors in tuples, lists or dicts"
    )


def dtype_name(dtype) -> str:
    name = str(dtype).replace("torch.", "")
    if name not in DTYPES:
        raise InputError(f"dtype {name} is not supported by braze; supported: {', '.join(DTYPES)}")
    return name


def signature_from_export(exported, args: tuple, kwargs: dict, state: list = (), scalars: dict | None = None) -> Signature:
    """The call signature of an exported (and decomposed) program; `state` is the mutated
    buffers frontend.prepare_state made leading arguments, [(name, tensor, placeholder)]."""
    import torch
    from torch.export.graph_signature import InputKind, OutputKind
    from torch.utils import _pytree as pytree

    in_tree = _tree_from_spec(exported.call_spec.in_spec)
    leaves: list = []
    paths: list[str] = []
    _flatten(in_tree, (tuple(args), dict(kwargs)), "", leaves, paths)
    inputs, constants, names, tensor_index = [], {}, [], {}
    sig = exported.graph_signature
    placeholders_by_name = {n.name: n for n in exported.graph.nodes if n.op == "placeholder"}
    state_placeholders = {placeholder for _, _, placeholder in state}
    # The user's inputs, without the mutated buffers prepare_state made leading inputs.
    user_inputs = [s for s in sig.input_specs if s.kind == InputKind.USER_INPUT and s.arg.name not in state_placeholders]
    for i, (leaf, path) in enumerate(zip(leaves, paths)):
        if isinstance(leaf, torch.Tensor):
            tensor_index[i] = len(inputs)
            node = placeholders_by_name.get(user_inputs[i].arg.name) if i < len(user_inputs) else None
            val = node.meta.get("val") if node is not None else None
            shape = _spec_shape(val.shape) if isinstance(val, torch.Tensor) else list(leaf.shape)
            inputs.append(TensorSpec(shape, dtype_name(leaf.dtype)))
            names.append(describe_path(path))
        else:
            constants[i] = leaf
    state_names = [name for name, _, _ in state]
    placeholders = {placeholder for _, _, placeholder in state}
    user_specs = [s for s in sig.input_specs if s.kind == InputKind.USER_INPUT and s.arg.name not in placeholders]
    leaf_of_input = {s.arg.name: i for i, s in enumerate(user_specs)}
    out_node = next(n for n in exported.graph.nodes if n.op == "output")
    outputs, mutations = [], []
    for v, spec in zip(pytree.tree_leaves(out_node.args[0]), sig.output_specs):
        val = getattr(v, "meta", {}).get("val") if hasattr(v, "meta") else None
        if val is None or not isinstance(val, torch.Tensor):
            raise InputError(
                "braze compiles models whose outputs are tensors (in tuples, lists or dicts); "
                f"an output is {type(val).__name__ if val is not None else repr(v)}"
            )
        outputs.append(TensorSpec(_spec_shape(val.shape), dtype_name(val.dtype)))
        if spec.kind != OutputKind.USER_OUTPUT and len(outputs) - 1 != len(mutations):
            raise InputError("torch.export listed a mutation after the model's outputs; braze expects them first")
        if spec.kind == OutputKind.BUFFER_MUTATION:
            mutations.append({"kind": "buffer", "index": state_names.index(spec.target)})
        elif spec.kind == OutputKind.USER_INPUT_MUTATION:
            mutations.append({"kind": "input", "index": tensor_index[leaf_of_input[spec.target]]})
    state_specs = [TensorSpec(list(t.shape), dtype_name(t.dtype)) for _, t, _ in state]
    out_scalars = {i: [kind, value] for i, (kind, value) in (scalars or {}).items()}
    return Signature(in_tree, inputs, _tree_from_spec(exported.call_spec.out_spec), outputs, constants, names,
                     state_names, state_specs, mutations, out_scalars, _symbolic_dims(exported, user_inputs,
                                                                                      tensor_index, placeholders_by_name))


def _symbolic_dims(exported, user_inputs, tensor_index: dict, placeholders: dict) -> list[dict]:
    """Where each plain symbol of a dynamic export sits in the tensor inputs, with its range."""
    import torch

    found: dict[str, dict] = {}
    for leaf, tensor in tensor_index.items():
        node = placeholders.get(user_inputs[leaf].arg.name) if leaf < len(user_inputs) else None
        val = node.meta.get("val") if node is not None else None
        if not isinstance(val, torch.Tensor):
            continue
        for j, size in enumerate(val.shape):
            if isinstance(size, int) or not hasattr(size, "node") or not size.node.expr.is_symbol:
                continue
            expr = size.node.expr
            entry = found.setdefault(str(expr), {"name": str(expr), "min": None, "max": None, "at": []})
            bounds = exported.range_constraints.get(expr)
            if bounds is not None:
                entry["min"] = _bound(bounds.lower)
                entry["max"] = _bound(bounds.upper)
            entry["at"].append([tensor, j])
    return list(found.values())


def _bound(value):
    """A range bound as an int, None for infinity."""
    if getattr(value, "is_finite", True) is False or getattr(value, "is_infinite", False):
        return None  # torch's int_oo (a sympy infinity): no bound
    try:
        return int(value)
    except (TypeError, ValueError, OverflowError, AttributeError):
        return None


def _spec_shape(shape) -> list[int]:
    """A traced tensor's sizes, DYNAMIC where torch.export kept a size symbolic."""
    return [d if isinstance(d, int) else DYNAMIC for d in shape]
