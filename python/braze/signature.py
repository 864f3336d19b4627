"""Call signatures: how a model's nested inputs and outputs map to flat tensors.

torch.export flattens (args, kwargs) and the outputs into leaves. braze records that
structure as plain JSON (no torch needed to read it back), so a loaded artifact accepts
the same nested tuples/lists/dicts and returns the same structure as the model.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any

from .errors import InputError

DTYPES = ("float32", "float16", "bfloat16", "float64", "int64", "int32", "int16", "int8", "uint8", "bool")
"""Tensor dtypes braze can pass to and from IREE, by torch's name without 'torch.'."""


@dataclass
class TensorSpec:
    shape: list[int]
    dtype: str

    def to_json(self) -> dict:
        return {"shape": list(self.shape), "dtype": self.dtype}

    def describe(self) -> str:
        return f"{self.dtype}[{', '.join(str(d) for d in self.shape)}]"


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

    def to_json(self) -> dict:
        return {
            "in_tree": self.in_tree,
            "inputs": [t.to_json() for t in self.inputs],
            "out_tree": self.out_tree,
            "outputs": [t.to_json() for t in self.outputs],
            "in_constants": {str(k): v for k, v in self.in_constants.items()},
            "input_names": self.input_names,
        }

    @classmethod
    def from_json(cls, data: dict) -> "Signature":
        return cls(
            in_tree=data["in_tree"],
            inputs=[TensorSpec(list(t["shape"]), t["dtype"]) for t in data["inputs"]],
            out_tree=data["out_tree"],
            outputs=[TensorSpec(list(t["shape"]), t["dtype"]) for t in data["outputs"]],
            in_constants={int(k): v for k, v in data.get("in_constants", {}).items()},
            input_names=list(data.get("input_names", [])),
        )

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
        it = iter(values)
        result = _unflatten(self.out_tree, it)
        return result


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


def signature_from_export(exported, args: tuple, kwargs: dict) -> Signature:
    import torch
    from torch.utils import _pytree as pytree

    in_tree = _tree_from_spec(exported.call_spec.in_spec)
    leaves: list = []
    paths: list[str] = []
    _flatten(in_tree, (tuple(args), dict(kwargs)), "", leaves, paths)
    inputs, constants, names = [], {}, []
    for i, (leaf, path) in enumerate(zip(leaves, paths)):
        if isinstance(leaf, torch.Tensor):
            inputs.append(TensorSpec(list(leaf.shape), dtype_name(leaf.dtype)))
            names.append(describe_path(path))
        else:
            constants[i] = leaf
    out_node = next(n for n in exported.graph.nodes if n.op == "output")
    outputs = []
    for v in pytree.tree_leaves(out_node.args[0]):
        val = getattr(v, "meta", {}).get("val") if hasattr(v, "meta") else None
        if val is None or not isinstance(val, torch.Tensor):
            raise InputError(
                "braze compiles models whose outputs are tensors (in tuples, lists or dicts); "
                f"an output is {type(val).__name__ if val is not None else repr(v)}"
            )
        outputs.append(TensorSpec(list(val.shape), dtype_name(val.dtype)))
    return Signature(in_tree, inputs, _tree_from_spec(exported.call_spec.out_spec), outputs, constants, names)
