"""Attention as one op: find softmax(q k^T * c + mask) v in the exported graph and call it SDPA.

Written with plain ops (BERT, GPT-2, ViT, Whisper, transformers' eager attention), attention
imports as two batch matmuls around a softmax: IREE dispatches that write and re-read the
[L, S] score matrix. `torch.nn.functional.scaled_dot_product_attention` (SDPA) states the whole
pattern in one op; kept out of the decompositions, torch-mlir lowers it to
`tm_tensor.attention`, which braze's flash-attention kernel (CUDA) or IREE compiles as one
dispatch that keeps the scores on chip.

The rewrite runs on the torch.export graph, before decomposition, and follows the math rather
than one spelling. From each softmax over the last dimension it walks

  down  p -> [cast, dropout(p=0 or eval), alias, clone, contiguous]* -> matmul(p, v)
  up    s <- [cast, alias, clone, * c, / c, + mask, where(keep, s, fill), masked_fill]* <- matmul(q, k^T)

where c is a number (or a 0-d constant tensor, as GPT-2 divides by `torch.full([], ...)`),
the softmax may take and give another dtype (`softmax(s, dtype=torch.float32).to(q.dtype)`),
k^T is a transpose or permute of k's last two dimensions, and the matmuls are matmul or bmm.
K and v may be a grouped-query expansion (transformers' `repeat_kv`, `repeat_interleave` over
the heads): they stay as written here, and the CUDA kernel generator reads their source with
the head index divided by the group (braze/passes/gpu/generate_kernels.py) instead of copying.

Masks (one; a scale applied after it is refused, as it would scale the mask too):

- additive (`s + mask`): SDPA's float attn_mask, broadcast to [..., L, S];
- select (`where(keep, s, fill)`, `s.masked_fill(drop, fill)`) with fill <= -1e30 or -inf:
  the additive mask where(keep, 0, -1e30 or -inf), which gives the same softmax: a score plus
  -1e30 rounds to -1e30 (a row with every key masked stays uniform, as eager's), and a masked
  exp underflows to 0;
- a mask whose value is known at compile time (a buffer such as GPT-2's `bias`, or a
  triu/tril/full/arange computation without inputs) that is causal (keys j <= query i) becomes
  SDPA's is_causal, which the kernel applies by skipping tiles; one masking nothing is dropped.

Mathematically the same function. Two differences, both where torch's own SDPA makes them: the
fused op keeps the scores in f32 where eager rounded them to the input dtype (bf16), and a row
whose every key is masked with -inf gives 0 (torch's safe softmax) where the written-out
softmax gives NaN. `fuse_attention` says for every softmax why it did or did not become
attention (the compile report's 'attention' section).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import torch

aten = torch.ops.aten

_MATMULS = (aten.matmul.default, aten.bmm.default)
_SOFTMAXES = (aten.softmax.int, aten._softmax.default)
_SAME = (aten.alias.default, aten.clone.default, aten.contiguous.default, aten.detach.default)
_CASTS = (aten.to.dtype, aten._to_copy.default, aten.to.dtype_layout, aten.type_as.default)
_MULS = (aten.mul.Tensor, aten.mul.Scalar)
_DIVS = (aten.div.Tensor, aten.div.Scalar)
_FILL_LIMIT = -1e30
"""A select's fill must be at most this (or -inf) to become an additive mask: then a masked
score plus the fill rounds to the fill, and exp(fill - row max) is 0 for any score below 1e29."""
_EVAL_LIMIT = 1 << 24
"""Masks of at most this many elements known at compile time are evaluated to recognise causal ones."""


def _val(node):
    return node.meta.get("val") if isinstance(node, torch.fx.Node) else None


def _is_assert(node) -> bool:
    return node.op == "call_function" and "assert" in str(node.target)


def _users(node) -> list:
    """The node's users other than torch.export's tensor-metadata assertions."""
    return [u for u in node.users if not _is_assert(u)]


def _cast_dtype(node):
    """The dtype a cast node converts to, or None when `node` is no plain dtype cast."""
    if node.op != "call_function" or node.target not in _CASTS:
        return None
    if node.target == aten.type_as.default:
        return getattr(_val(node.args[1]), "dtype", None)
    if node.target == aten.to.dtype:
        return node.args[1] if len(node.args) > 1 else node.kwargs.get("dtype")
    if any(k not in ("dtype", "layout", "device", "memory_format", "pin_memory") for k in node.kwargs):
        return None
    return node.kwargs.get("dtype") or getattr(_val(node), "dtype", None)


def _transparent(node) -> bool:
    """An op that passes its first argument on unchanged (up to a dtype cast checked apart)."""
    if node.op != "call_function":
        return False
    if node.target in _SAME:
        return True
    if node.target == aten.dropout.default:
        p, train = (list(node.args[1:3]) + [None, None])[:2]
        return p == 0 or train is False
    return _cast_dtype(node) is not None


def _is_last_two_swap(node) -> torch.fx.Node | None:
    """The tensor a transpose/permute of the last two dimensions reads, or None."""
    if not isinstance(node, torch.fx.Node) or node.op != "call_function":
        return None
    val = _val(node)
    if val is None:
        return None
    rank = val.dim()
    if node.target == aten.transpose.int:
        a, b = (d % rank for d in node.args[1:3])
        return node.args[0] if {a, b} == {rank - 2, rank - 1} else None
    if node.target == aten.permute.default:
        perm = [d % rank for d in node.args[1]]
        return node.args[0] if perm == list(range(rank - 2)) + [rank - 1, rank - 2] else None
    return None


def _number(x) -> float | None:
    """x as a Python float: a number, or a 0-d constant tensor made in the graph (`torch.full([], c)`,
    `scalar_tensor(c)`); None otherwise."""
    if isinstance(x, bool):
        return None
    if isinstance(x, (int, float)):
        return float(x)
    if isinstance(x, torch.fx.Node) and x.op == "call_function":
        if x.target == aten.full.default and list(x.args[0]) == [] and isinstance(x.args[1], (int, float)):
            return float(x.args[1])
        if x.target == aten.scalar_tensor.default and isinstance(x.args[0], (int, float)):
            return float(x.args[0])
    return None


@dataclass
class Form:
    """One attention found: SDPA(q, k, v, attn_mask, is_causal, scale) replaces `out`."""

    out: torch.fx.Node
    q: torch.fx.Node
    k: torch.fx.Node
    v: torch.fx.Node
    scale: float
    mask: torch.fx.Node | None = None
    """An additive mask (any float dtype) broadcast to the scores."""
    keep: torch.fx.Node | None = None
    """A boolean mask (True: attend) with `fill` where False; becomes an additive mask."""
    fill: float = 0.0
    causal: bool = False
    nodes: list = field(default_factory=list)
    """The pattern's nodes, erased when the rewrite leaves them unused."""
    what: list = field(default_factory=list)
    """The form in words ('softmax in float32', 'additive mask', ...), for the report."""


def _down(softmax) -> tuple[torch.fx.Node, list] | str:
    """(the matmul(p, v) the probabilities feed, the nodes between) or why not."""
    nodes, cur = [], softmax
    while True:
        users = _users(cur)
        if len(users) != 1:
            return "the probabilities are used elsewhere too (returned or reused)" if users else "unused"
        (user,) = users
        if user.op == "call_function" and user.target in _MATMULS and user.args[0] is cur:
            return user, nodes
        if not (_transparent(user) and user.args[0] is cur):
            return f"the probabilities go to {_name(user)}, not straight to a matmul with v"
        nodes.append(user)
        cur = user


def _up(cur, what: list, scale=1.0, mask=None, keep=None, fill=0.0, nodes=()) -> tuple | str:
    """Walk from the softmax's input down to the scores matmul: (scores, scale, mask, keep,
    fill, nodes) or why not. `what` collects the form in words."""
    nodes = list(nodes)
    while True:
        if not isinstance(cur, torch.fx.Node) or cur.op != "call_function":
            return "the scores are no matmul of q and k^T"
        if cur.target in _MATMULS:
            return cur, scale, mask, keep, fill, nodes
        if len(_users(cur)) != 1:
            return f"an intermediate of the scores ({cur.name}) is used elsewhere too"
        nodes.append(cur)
        t, a = cur.target, cur.args
        if _transparent(cur):
            cur = a[0]
        elif t in _MULS + _DIVS:
            x, c = a[0], a[1]
            if t in _MULS and _number(x) is not None:
                x, c = c, x
            c = _number(c)
            if c is None or not c or not isinstance(x, torch.fx.Node):
                return f"the scores are multiplied by a tensor ({_name(cur)}), not a number"
            scale *= c if t in _MULS else 1.0 / c
            cur = x
        elif t == aten.add.Tensor and cur.kwargs.get("alpha", 1) == 1:
            if mask is not None or keep is not None:
                return "two masks"
            if scale != 1.0:
                return "a scale applied after the mask (it would scale the mask too)"
            why = None
            for x, m in ((a[0], a[1]), (a[1], a[0])):  # either operand may be the scores
                if not isinstance(m, torch.fx.Node) or not isinstance(x, torch.fx.Node):
                    continue
                if _val(m) is None or not _val(m).dtype.is_floating_point:
                    why = why or "an additive mask that is not a float tensor"
                    continue
                deeper: list = []
                found = _up(x, deeper, scale, m, keep, fill, nodes)
                if not isinstance(found, str):
                    what.extend(["additive mask"] + deeper)
                    return found
                why = why or found
            return why or "the scores plus a number"
        elif t in (aten.where.self, aten.where.ScalarOther, aten.masked_fill.Scalar, aten.masked_fill.Tensor):
            if mask is not None or keep is not None:
                return "two masks"
            if scale != 1.0:
                return "a scale applied after the mask (it would scale the mask too)"
            select = t in (aten.where.self, aten.where.ScalarOther)
            cond, x, f = a if select else (a[1], a[0], a[2])
            value = _number(f)
            if value is None or not isinstance(x, torch.fx.Node):
                return f"a select whose fill is no number ({_name(cur)})"
            if not value <= _FILL_LIMIT:
                return (f"a select with fill {value:g}: only fills <= {_FILL_LIMIT:g} or -inf give the same "
                        "softmax as a mask")
            if _val(cond) is None or _val(cond).dtype != torch.bool:
                return "a select on a non-boolean condition"
            keep, fill, cur = (cond if select else ("not", cond)), value, x
            what.append("boolean mask")
        else:
            return f"the scores go through {_name(cur)}"


def _reaches(a: torch.fx.Node, b: torch.fx.Node) -> bool:
    """Whether b is among a's inputs, transitively (a few hundred nodes at most are walked)."""
    todo, seen = [a], set()
    while todo and len(seen) < 500:
        n = todo.pop()
        if n is b:
            return True
        if n in seen:
            continue
        seen.add(n)
        todo.extend(x for x in n.all_input_nodes)
    return False


def _name(node) -> str:
    return getattr(node.target, "__name__", str(node.target)) if node.op == "call_function" else node.name


def match(softmax: torch.fx.Node, dtypes: frozenset) -> Form | str:
    """The attention a softmax node is the heart of, or why it is not one."""
    dim = softmax.args[1]
    rank = _val(softmax).dim() if _val(softmax) is not None else 0
    if rank < 3 or dim % rank != rank - 1:
        return "a softmax over another dimension than the last" if rank >= 3 else "a softmax of rank < 3"
    what = []
    out_dtype = _val(softmax).dtype
    if out_dtype != getattr(_val(softmax.args[0]), "dtype", out_dtype):
        what.append(f"softmax in {str(out_dtype).split('.')[-1]}")
    down = _down(softmax)
    if isinstance(down, str):
        return down
    out, p_nodes = down
    up = _up(softmax.args[0], what)
    if isinstance(up, str):
        return up
    scores, scale, mask, keep, fill, s_nodes = up
    if len(_users(scores)) != 1:
        return "the scores are used elsewhere too"
    q, kt = scores.args[0], scores.args[1]
    k = _is_last_two_swap(kt)
    if k is None:
        return "the scores are no product with a transpose of k (q @ k.transpose(-2, -1))"
    if len(_users(kt)) != 1:
        return "k^T is used elsewhere too"
    v = out.args[1]
    vals = [_val(x) for x in (q, k, v, out)]
    if any(x is None for x in vals):
        return "no shape known for q, k or v"
    qv, kv, vv, ov = vals
    if not (qv.dtype == kv.dtype == vv.dtype == ov.dtype):
        return f"q, k, v in {qv.dtype}, {kv.dtype}, {vv.dtype}"
    if qv.dtype not in dtypes:
        return f"attention in {str(qv.dtype).split('.')[-1]} is kept as matmul/softmax/matmul on this device"
    for x in [scores, softmax] + s_nodes + p_nodes:
        dt = getattr(_val(x), "dtype", None)
        if dt not in (qv.dtype, torch.float32):
            return f"the scores or probabilities pass through {dt}"
    if not (qv.dim() == kv.dim() == vv.dim() == rank):
        return "q, k, v of different ranks"
    if qv.shape[:-2] != kv.shape[:-2] or kv.shape[:-2] != vv.shape[:-2] or qv.shape[-1] != kv.shape[-1] \
            or kv.shape[-2] != vv.shape[-2]:
        return "q, k, v shapes that are no attention's"
    for m in (mask, keep if not isinstance(keep, tuple) else keep[1]):
        if m is not None and not _broadcasts(_val(m).shape, _val(scores).shape):
            return "a mask that does not broadcast to the scores"
    if p_nodes and any(n.target == aten.dropout.default for n in p_nodes):
        what.append("dropout p=0")
    nodes = [out] + p_nodes[::-1] + [softmax] + s_nodes + [scores, kt]
    return Form(out, q, k, v, scale, mask, keep, fill, nodes=nodes, what=what)


def _broadcasts(small, big) -> bool:
    if len(small) > len(big):
        return False
    return all(a in (1, b) for a, b in zip(reversed(list(small)), reversed(list(big))))


def _constant_value(node: torch.fx.Node, exported) -> torch.Tensor | None:
    """The value of `node` when it depends only on the program's buffers and constants (and
    ops without inputs), evaluated; None otherwise or when larger than _EVAL_LIMIT."""
    val = _val(node)
    if val is None or val.numel() > _EVAL_LIMIT:
        return None
    sig = exported.graph_signature
    held = {**sig.inputs_to_buffers, **sig.inputs_to_lifted_tensor_constants}
    order, todo, seen = [], [node], set()
    while todo:
        n = todo.pop()
        if n in seen:
            continue
        seen.add(n)
        if n.op == "placeholder":
            if n.name not in held:
                return None
        elif n.op != "call_function" or len(seen) > 200:
            return None
        order.append(n)
        todo.extend(n.all_input_nodes)
    values = {}
    try:
        for n in sorted(order, key=_position(node.graph)):
            if n.op == "placeholder":
                name = held[n.name]
                values[n] = exported.constants[name] if name in exported.constants else exported.state_dict[name]
            else:
                args, kwargs = torch.fx.node.map_arg((n.args, n.kwargs), lambda x: values[x])
                values[n] = n.target(*args, **kwargs)
    except Exception:  # an op that cannot run eagerly here: the mask stays a tensor
        return None
    out = values[node]
    return out if isinstance(out, torch.Tensor) else None


def _position(graph):
    index = {n: i for i, n in enumerate(graph.nodes)}
    return lambda n: index[n]


def _is_causal(keep: torch.Tensor, l: int, s: int) -> bool | None:
    """True when `keep` (broadcast to [..., L, S]) is keys j <= query i everywhere; None when it
    keeps everything; False otherwise."""
    if keep.dim() < 2 or keep.shape[-2] not in (1, l) or keep.shape[-1] not in (1, s):
        return False
    full = keep.expand(*keep.shape[:-2], l, s)
    if bool(full.all()):
        return None
    return l <= s and bool((full == torch.ones(l, s, dtype=torch.bool).tril()).all())


def _settle_mask(form: Form, exported) -> None:
    """Turn a mask known at compile time into is_causal (or nothing) where it is one."""
    scores = _val(form.nodes[-2])
    l, s = scores.shape[-2], scores.shape[-1]
    if form.mask is not None:
        value = _constant_value(form.mask, exported)
        if value is not None and value.is_floating_point():
            zero, masked = value == 0, value <= _FILL_LIMIT
            if bool((zero | masked).all()):
                causal = _is_causal(zero, l, s)
                if causal is None or causal:
                    form.mask, form.causal = None, bool(causal)
    elif form.keep is not None:
        negate = isinstance(form.keep, tuple)
        cond = form.keep[1] if negate else form.keep
        value = _constant_value(cond, exported)
        if value is not None:
            causal = _is_causal(~value if negate else value, l, s)
            if causal is None or causal:
                form.keep, form.causal = None, bool(causal)
    if form.causal:
        form.what.append("causal (from a mask known at compile time)")


def _fake(target, *args, **kwargs):
    """Run `target` on the fake values of the nodes in args (for a new node's meta['val'])."""
    vals = torch.fx.node.map_arg((args, kwargs), lambda x: x.meta["val"])
    return target(*vals[0], **vals[1])


def _call(graph, target, args, kwargs=None, like=None):
    node = graph.call_function(target, args, kwargs or {})
    mode = _fake_mode(like)
    with mode:
        node.meta["val"] = _fake(target, *args, **(kwargs or {}))
    if like is not None and "stack_trace" in like.meta:
        node.meta["stack_trace"] = like.meta["stack_trace"]
    return node


def _fake_mode(node):
    from torch._guards import detect_fake_mode

    return detect_fake_mode([node.meta["val"]])


def _rewrite(graph: torch.fx.Graph, form: Form) -> None:
    node = form.out
    rank = _val(form.q).dim()
    with graph.inserting_before(node):
        mask = form.mask
        if form.keep is not None:
            negate = isinstance(form.keep, tuple)
            cond = form.keep[1] if negate else form.keep
            dtype = _val(form.nodes[-2]).dtype  # the scores' dtype: the fill is exact in it
            zero = _call(graph, aten.scalar_tensor.default, (0.0,), {"dtype": torch.float32}, node)
            # -1e30, not a larger finite fill: kernels that scale the masked scores by log2(e)
            # (IREE's, for exp2) would take finfo.min to -inf, and a row with every key masked
            # would no longer be uniform as eager's is
            value = form.fill if form.fill == float("-inf") else _FILL_LIMIT
            fill = _call(graph, aten.scalar_tensor.default, (value,), {"dtype": torch.float32}, node)
            a, b = (fill, zero) if negate else (zero, fill)
            mask = _call(graph, aten.where.self, (cond, a, b), {}, node)
            if dtype != torch.float32:
                mask = _call(graph, aten._to_copy.default, (mask,), {"dtype": dtype}, node)
        if mask is not None and _val(mask).dim() < rank:  # torch-mlir's lowering wants the full rank
            shape = [1] * (rank - _val(mask).dim()) + list(_val(mask).shape)
            mask = _call(graph, aten.view.default, (mask, shape), {}, node)
        kwargs = {"scale": form.scale}
        if form.causal:
            kwargs["is_causal"] = True
        args = (form.q, form.k, form.v) + ((mask,) if mask is not None else ())
        fused = graph.call_function(aten.scaled_dot_product_attention.default, args, kwargs)
    fused.meta = dict(node.meta)
    node.replace_all_uses_with(fused)
    for dead in form.nodes:
        for user in list(dead.users):
            if _is_assert(user):
                graph.erase_node(user)
        if not dead.users:
            graph.erase_node(dead)
    for m in (form.mask, form.keep[1] if isinstance(form.keep, tuple) else form.keep):
        _erase_unused(graph, m)


def _erase_unused(graph, node) -> None:
    """Erase `node` and then its inputs while they are pure ops nothing uses (a mask the
    rewrite found causal)."""
    todo = [node]
    while todo:
        n = todo.pop()
        if not isinstance(n, torch.fx.Node) or n.op != "call_function" or n.users or n.is_impure():
            continue
        inputs = n.all_input_nodes
        graph.erase_node(n)
        todo.extend(inputs)


def fuse_attention(exported, dtypes: frozenset) -> tuple[int, list[dict]]:
    """Rewrite every attention written out in `exported` (a torch.export ExportedProgram, or
    a GraphModule: then no mask is evaluated) whose q, k, v have one of `dtypes` as one SDPA call.
    Returns (how many, one record per softmax: {'source', 'attention': bool, 'form' or 'why'})."""
    graph_module = getattr(exported, "graph_module", exported)
    graph = graph_module.graph
    count, records = 0, []
    softmaxes = [n for n in graph.nodes if n.op == "call_function" and n.target in _SOFTMAXES]
    for softmax in softmaxes:
        if softmax.graph is not graph or softmax not in softmax.graph.nodes:
            continue
        where = last_frame(softmax.meta.get("stack_trace")) or softmax.name
        found = match(softmax, dtypes)
        if isinstance(found, str):
            records.append({"source": where, "attention": False, "why": found})
            continue
        if exported is not graph_module:
            _settle_mask(found, exported)
        _rewrite(graph, found)
        records.append({"source": where, "attention": True, "form": ", ".join(found.what) or "plain"})
        count += 1
    if count:
        graph.lint()
        graph_module.recompile()
    return count, records


def last_frame(trace: str | None) -> str | None:
    """'file:line' of the innermost frame of an FX node's stack_trace, or None."""
    frames = re.findall(r'File "([^"]+)", line (\d+)', trace or "")
    return f"{frames[-1][0]}:{frames[-1][1]}" if frames else None


def masks_to_4d(graph) -> int:
    """Give every SDPA call's 2-D or 3-D attention mask the leading unit dimensions of the 4-D
    one it broadcasts as ([L, S] -> [1, 1, L, S]): the same attention, in the form torch-mlir's
    attention lowering takes (with fewer dimensions it fails and the module's attention is
    imported decomposed). Returns how many masks were reshaped."""
    count = 0
    for node in list(graph.nodes):
        if node.op != "call_function" or node.target != aten.scaled_dot_product_attention.default:
            continue
        in_args = len(node.args) > 3
        mask = node.args[3] if in_args else node.kwargs.get("attn_mask")
        query = getattr(node.args[0], "meta", {}).get("val")
        value = getattr(mask, "meta", {}).get("val") if isinstance(mask, torch.fx.Node) else None
        if value is None or query is None or query.dim() != 4 or value.dim() not in (2, 3):
            continue
        with graph.inserting_before(node):
            for _ in range(4 - value.dim()):
                mask = graph.call_function(aten.unsqueeze.default, (mask, 0))
                value = value.unsqueeze(0)
                mask.meta = {**mask.args[0].meta, "val": value}
        if in_args:
            node.args = node.args[:3] + (mask,) + node.args[4:]
        else:
            node.kwargs = {**node.kwargs, "attn_mask": mask}
        count += 1
    return count


def sdpa_calls(graph) -> dict:
    """{node: dtype} for the scaled_dot_product_attention calls in a graph (dtype None if unknown)."""
    return {n: getattr(n.meta.get("val"), "dtype", None) for n in graph.nodes
            if n.op == "call_function" and n.target == aten.scaled_dot_product_attention.default}
