"""Rewrites of the exported (decomposed) FX graph for ops torch-mlir lowers wrongly or not at
all, so that braze compiles them where the raw torch-mlir + IREE toolchain crashes or fails.

    8-bit integer matmul (mm, bmm, mv,       torch-mlir's lowering segfaults (AtenMmInt8Types)
    dot, addmm, baddbmm)
      ->  (a.to(int32) @ b.to(int32)).to(int8)  the same values: both wrap around modulo 256
    8-bit integer division and remainder     q = x // 3 on int8/uint8: torch-mlir's lowering
                                             segfaults (by a number) or fails (by a tensor)
      ->  q = (x.to(int32) // 3).to(int8)    the same values: |x // y| <= |x|, |x % y| < |y|
    integer fmod                             fails to lower for every integer dtype
      ->  x - trunc_div(x, y) * y            in int32 for 8-bit inputs, as above
    an op with a zero-size result, or a      x.view(...) of a zero-size x, torch.bmm on a batch
    matmul with a zero-size operand          of 0, a @ b with K = 0: torch-mlir's lowering dies
                                             of SIGFPE (a division by the zero size)
      ->  torch.zeros(result shape)          eager's result: empty, or a sum of no terms
                                             (not an empty view that as_strided reads through)
    x[:, idx], x[..., i, j]: aten.index      torch-mlir's FX importer rejects the list
    with None in its index list and a        ("Heterogeneous lists are not supported")
    constant index tensor
      ->  x.index_select(d, idx.flatten())   one index tensor (reshaped to idx's dims), else
          .view(...)                         the indexed dims permuted first and indexed with
                                             tensors only (permuted back where torch would)
    x.expand(sizes) to x's own (symbolic)    torch.matmul's decomposition on a dynamic batch:
    sizes                                    torch-mlir cannot prove the sizes equal and lowers
                                             a gather that tests each size for 1 (a broadcast),
                                             a dispatch of scalar loads per matmul operand
      ->  x                                  the same tensor

Each rewrite keeps the FX node's meaning exactly (no rounding), and gives
every new node the fake-tensor value torch-mlir's importer types it by.
"""

from __future__ import annotations

import operator

import torch

aten = torch.ops.aten
prims = torch.ops.prims

_NARROW = (torch.int8, torch.uint8)
_DIVISIONS = {aten.div.Tensor_mode, aten.div.Scalar_mode, aten.floor_divide.default, aten.remainder.Scalar,
              aten.remainder.Tensor, aten.remainder.Scalar_Tensor}
_MATMULS = {aten.mm.default, aten.bmm.default, aten.mv.default, aten.dot.default, aten.matmul.default,
            aten.addmm.default, aten.baddbmm.default}
_IN_INT32 = _DIVISIONS | _MATMULS
"""Ops torch-mlir cannot lower on 8-bit integers, computed in int32 and cast back."""
_FMODS = {aten.fmod.Scalar, aten.fmod.Tensor}


def _val(arg):
    return arg.meta.get("val") if isinstance(arg, torch.fx.Node) else arg


def _fake_mode(graph):
    from torch._subclasses.fake_tensor import FakeTensor

    for node in graph.nodes:
        val = node.meta.get("val")
        if isinstance(val, FakeTensor):
            return val.fake_mode
    return None


def _call(graph, mode, target, args, kwargs=None):
    """A new node calling `target`, with its fake value computed from its arguments' values."""
    kwargs = kwargs or {}
    node = graph.call_function(target, tuple(args), kwargs)
    with mode:
        node.meta["val"] = target(*torch.fx.node.map_aggregate(tuple(args), _val),
                                  **{k: _val(v) for k, v in kwargs.items()})
    return node


def _widen(graph, mode, arg):
    if isinstance(arg, torch.fx.Node) and getattr(_val(arg), "dtype", None) in _NARROW:
        return _call(graph, mode, prims.convert_element_type.default, (arg, torch.int32))
    return arg


def fix_narrow_integers(graph_module: torch.fx.GraphModule) -> int:
    """Rewrite 8-bit integer division/remainder and matmuls in int32 and integer fmod as a
    truncating division; returns how many nodes were rewritten."""
    graph = graph_module.graph
    mode = _fake_mode(graph)
    if mode is None:
        return 0
    count = 0
    for node in list(graph.nodes):
        if node.op != "call_function" or node.target not in _IN_INT32 | _FMODS:
            continue
        result = _val(node)
        if not isinstance(result, torch.Tensor) or result.dtype.is_floating_point or result.dtype.is_complex \
                or result.dtype == torch.bool:
            continue
        narrow = result.dtype in _NARROW
        if node.target in _IN_INT32 and not narrow:
            continue
        with graph.inserting_before(node):
            args = [_widen(graph, mode, a) for a in node.args] if narrow else list(node.args)
            if node.target in _FMODS:
                x, y = args
                quotient = _call(graph, mode, aten.div.Tensor_mode if isinstance(y, torch.fx.Node) else
                                 aten.div.Scalar_mode, (x, y), {"rounding_mode": "trunc"})
                product = _call(graph, mode, aten.mul.Tensor, (quotient, y))
                new = _call(graph, mode, aten.sub.Tensor, (x, product))
            else:
                new = _call(graph, mode, node.target, args, dict(node.kwargs))
            if _val(new).dtype != result.dtype:
                new = _call(graph, mode, prims.convert_element_type.default, (new, result.dtype))
        _replace(graph, node, new)
        count += 1
    return _finish(graph_module, count)


def replace_prims_views(graph_module: torch.fx.GraphModule) -> int:
    """prims.view_of, prims.squeeze and prims.split_dim as the aten views they are (alias,
    squeeze.dims, unflatten): torch's functionalization refuses a non-aten op whose output
    aliases its input ("Found a custom (non-ATen) operator whose output has alias
    annotations"), so a model that calls them (torch-mlir's PrimsViewOfModule, SplitDimModule)
    could not be decomposed. Runs before the decompositions."""
    graph = graph_module.graph
    count = 0
    for node in list(graph.nodes):
        if node.op != "call_function":
            continue
        if node.target == prims.view_of.default:
            target, args = aten.alias.default, node.args[:1]
        elif node.target == prims.squeeze.default:
            target, args = aten.squeeze.dims, (node.args[0], list(node.args[1]))
        elif node.target == prims.split_dim.default:
            x, dim, outer = node.args
            target, args = aten.unflatten.int, (x, dim, [outer, -1])
        else:
            continue
        with graph.inserting_before(node):
            new = graph.call_function(target, args)
        new.meta = dict(node.meta)
        node.replace_all_uses_with(new)
        graph.erase_node(node)
        count += 1
    return _finish(graph_module, count)


_COMPARISONS = {operator.gt: aten.gt.Tensor, operator.ge: aten.ge.Tensor, operator.lt: aten.lt.Tensor,
                operator.le: aten.le.Tensor, operator.eq: aten.eq.Tensor, operator.ne: aten.ne.Tensor}

SCALAR_COMPARISON = "braze_scalar_comparison"
"""Meta key of the float64 nodes fix_symbolic_floats adds (frontend.float64_origins skips them:
they hold Python floats, which are float64 in eager too)."""


def _is_float_scalar(arg) -> bool:
    return isinstance(_val(arg), (float, torch.SymFloat))


def fix_symbolic_floats(graph_module: torch.fx.GraphModule) -> int:
    """Python float arithmetic on numbers a model read with int()/float()/.item(), as torch-mlir
    imports and lowers it:
    - `torch.sym_float(n)` (an int made a float, as `float(lhs) + int(rhs)` traces) as
      `aten.Float.Scalar(n)`: torch-mlir's FX importer has no case for torch.sym_float
      ("Unimplemented call_function") but imports Float.Scalar, the op it promotes symbolic ints
      with itself (torch-mlir's AddFloatIntModule, Ge/GtFloatIntModule failed on it).
    - comparisons of two floats (`a > b`, ..., `a != b`) as the comparison of two 0-d float64
      tensors read back with item(): torch-mlir lowers aten.gt/ge/eq.float with unordered
      predicates (NaN > 1.0 came back True, NaN == 1.0 True) and has no lowering for
      aten.lt/le/ne.float; its tensor comparisons are ordered, as Python's are. Both operands
      being floats also keeps the importer off its mixed float/int path, which swaps the
      operands of lt/ge/gt to put the float first."""
    graph = graph_module.graph
    mode = _fake_mode(graph)

    def fake(dtype):
        if mode is None:
            return torch.empty((), dtype=dtype, device="meta")
        with mode:
            return torch.empty((), dtype=dtype)

    count = 0
    for node in list(graph.nodes):
        if node.op != "call_function" or node.kwargs:
            continue
        if node.target is torch.sym_float and len(node.args) == 1:
            with graph.inserting_before(node):
                new = graph.call_function(aten.Float.Scalar, node.args)
            new.meta = dict(node.meta)
        elif node.target in _COMPARISONS and len(node.args) == 2 and all(map(_is_float_scalar, node.args)):
            with graph.inserting_before(node):
                operands = []
                for arg in node.args:
                    t = graph.call_function(aten.scalar_tensor.default, (arg,), {"dtype": torch.float64})
                    t.meta = {**node.meta, "val": fake(torch.float64),
                              SCALAR_COMPARISON: True}
                    operands.append(t)
                compared = graph.call_function(_COMPARISONS[node.target], tuple(operands))
                compared.meta = {**node.meta, "val": fake(torch.bool)}
                # torch-mlir's item() returns no bool: the 0/1 as an int, made a bool again
                as_int = graph.call_function(prims.convert_element_type.default, (compared, torch.int64))
                as_int.meta = {**node.meta, "val": fake(torch.int64)}
                number = graph.call_function(aten.item.default, (as_int,))
                env = getattr(mode, "shape_env", None)
                number.meta = {**node.meta, "val": env.create_unbacked_symint() if env is not None else 0}
                new = graph.call_function(aten.Bool.int, (number,))
            new.meta = dict(node.meta)
        else:
            continue
        node.replace_all_uses_with(new)
        graph.erase_node(node)
        count += 1
    return _finish(graph_module, count)


def _replace(graph, node, new) -> None:
    """`new` takes `node`'s place: its metadata (source location) and every use."""
    new.meta = {**node.meta, "val": new.meta["val"]}
    node.replace_all_uses_with(new)
    graph.erase_node(node)


def _finish(graph_module, count: int, dead_code: bool = False) -> int:
    if count:
        if dead_code:
            graph_module.graph.eliminate_dead_code()
        graph_module.graph.lint()
        graph_module.recompile()
    return count


_CONTRACTIONS = {aten.mm.default, aten.bmm.default, aten.matmul.default}


def _read_through_by_as_strided(node) -> bool:
    """Whether an as_strided reads `node`'s storage, directly or through views of it (same
    storage): an empty slice of x is still a window onto x's elements for as_strided, which
    torch-mlir's importer resolves by following views back to their base."""
    storage = _val(node).untyped_storage()
    stack, seen = list(node.users), set()
    while stack:
        user = stack.pop()
        if user in seen:
            continue
        seen.add(user)
        if user.target == aten.as_strided.default:
            return True
        value = _val(user)
        if isinstance(value, torch.Tensor) and value.untyped_storage() is storage:
            stack.extend(user.users)
    return False


def fix_empty_tensors(graph_module: torch.fx.GraphModule) -> int:
    """Replace by zeros of its shape each op whose result has no elements (its value is its
    shape alone) and each matmul with a zero-size operand (eager's result: a sum of no terms);
    returns how many nodes were rewritten."""
    graph = graph_module.graph
    mode = _fake_mode(graph)
    if mode is None:
        return 0
    count = 0
    for node in list(graph.nodes):
        result = _val(node)
        if node.op != "call_function" or not isinstance(result, torch.Tensor) or node.target == aten.zeros.default:
            continue
        numel = result.numel()
        if not isinstance(numel, int):
            continue  # a symbolic size (a dynamic build): zero or not is known at run time only
        if numel:
            operands = [_val(a) for a in node.args[:2]]
            if node.target not in _CONTRACTIONS or all(not isinstance(o, torch.Tensor) or o.numel() for o in operands):
                continue
        elif _read_through_by_as_strided(node):
            continue  # an empty view whose storage as_strided reads: fresh zeros would have none
        with graph.inserting_before(node):
            new = _call(graph, mode, aten.zeros.default, (list(result.shape),),
                        {"dtype": result.dtype, "device": result.device})
        _replace(graph, node, new)
        count += 1
    return _finish(graph_module, count, dead_code=True)


def fix_index_with_none(graph_module: torch.fx.GraphModule, constants: frozenset = frozenset()) -> int:
    """Rewrite aten.index.Tensor whose index list holds None beside a constant index tensor
    (x[:, idx] with idx a tensor of the model's, not an input: `constants` are the names of the
    placeholders torch-mlir imports as literals) into ops torch-mlir's importer takes (see the
    module doc); returns how many were rewritten."""
    graph = graph_module.graph
    mode = _fake_mode(graph)
    if mode is None:
        return 0

    def constant(i) -> bool:
        return isinstance(i, torch.Tensor) or (isinstance(i, torch.fx.Node) and (
            i.op == "get_attr" or (i.op == "placeholder" and i.name in constants)))

    count = 0
    for node in list(graph.nodes):
        if node.op != "call_function" or node.target != aten.index.Tensor:
            continue
        x, indices = node.args[0], list(node.args[1])
        if None not in indices or not any(constant(i) for i in indices):
            continue  # the importer takes None beside index tensors the graph computes or takes
        at = [d for d, i in enumerate(indices) if i is not None]
        tensors = [indices[d] for d in at]
        values = [_val(t) for t in tensors]
        if any(not isinstance(v, torch.Tensor) or v.dtype in (torch.bool, torch.uint8) for v in values):
            continue  # boolean masks keep their (data-dependent) form
        shape = list(_val(x).shape)
        with graph.inserting_before(node):
            if len(at) == 1:
                d, index = at[0], tensors[0]
                # negative entries count from the end, as eager's indexing has them and
                # index_select does not
                negative = _call(graph, mode, aten.lt.Scalar, (index, 0))
                shifted = _call(graph, mode, aten.add.Scalar, (index, shape[d]))
                index = _call(graph, mode, aten.where.self, (negative, shifted, index))
                if values[0].dim() != 1:
                    index = _call(graph, mode, aten.reshape.default, (index, [-1]))
                new = _call(graph, mode, aten.index_select.default, (x, d, index))
                if values[0].dim() != 1:
                    new = _call(graph, mode, aten.reshape.default,
                                (new, shape[:d] + list(values[0].shape) + shape[d + 1:]))
            else:
                rest = [d for d in range(len(shape)) if d not in at]
                new = _call(graph, mode, aten.permute.default, (x, at + rest))
                new = _call(graph, mode, aten.index.Tensor, (new, tensors))
                if at == list(range(at[0], at[-1] + 1)) and at[0] > 0:
                    # adjacent indexed dims: torch puts the indexed result where they were
                    b = _val(new).dim() - len(rest)
                    order = list(range(b, b + at[0])) + list(range(b)) + list(range(b + at[0], _val(new).dim()))
                    new = _call(graph, mode, aten.permute.default, (new, order))
        _replace(graph, node, new)
        count += 1
    return _finish(graph_module, count, dead_code=True)


def drop_same_size_expands(graph_module: torch.fx.GraphModule) -> int:
    """Replace each expand to its input's own sizes (equal as ints or as the same symbol) by the
    input; returns how many nodes were removed."""
    graph = graph_module.graph
    count = 0
    for node in list(graph.nodes):
        if node.op != "call_function" or node.target != aten.expand.default:
            continue
        source, result = _val(node.args[0]), _val(node)
        if not (isinstance(source, torch.Tensor) and isinstance(result, torch.Tensor)) or \
                not _same_sizes(source.shape, result.shape):
            continue
        node.replace_all_uses_with(node.args[0])
        graph.erase_node(node)
        count += 1
    return _finish(graph_module, count)


def _same_sizes(a, b) -> bool:
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if isinstance(x, int) and isinstance(y, int):
            if x != y:
                return False
        elif isinstance(x, int) or isinstance(y, int) or x.node.expr != y.node.expr:
            return False
    return True
