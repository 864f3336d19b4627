"""Attention as one op: find softmax(q k^T * c) v in the exported graph and call it SDPA.

Written with plain ops (BERT-style models, braze bench's `attention`), attention imports as two
batch matmuls around a softmax: four IREE dispatches that write and re-read the [L, S] score
matrix. `torch.nn.functional.scaled_dot_product_attention` (SDPA) states the whole pattern in
one op; kept out of the decompositions, torch-mlir lowers it to `tm_tensor.attention`, and IREE
compiles that to `iree_linalg_ext.attention`: one dispatch that keeps the scores on chip.

The rewrite runs on the torch.export graph, before decomposition, where the pattern is five
nodes rather than a dozen linalg ops:

    t = transpose(k, -2, -1)          (or permute swapping the last two dimensions)
    s = matmul(q, t)                  q: [..., L, E], k: [..., S, E], same leading shape
    s = s * c    or    s = s / c      optional, c a Python number
    p = softmax(s, -1)                (aten.softmax or aten._softmax, no dtype change)
    o = matmul(p, v)                  v: [..., S, Ev]
  ->
    o = scaled_dot_product_attention(q, k, v, scale=c or 1/c or 1.0)

Only when every intermediate has exactly one user (the scores or probabilities are not
returned or reused) and q, k, v share one of the given dtypes and have rank 3 or more.
Mathematically the same function; rounding differs where eager rounded the scores to the
input dtype (bf16) and the fused op keeps them in f32.
"""

from __future__ import annotations

import torch

aten = torch.ops.aten

_MATMULS = (aten.matmul.default, aten.bmm.default)
_SOFTMAXES = (aten.softmax.int, aten._softmax.default)


def _val(node):
    return node.meta.get("val") if isinstance(node, torch.fx.Node) else None


def _single_user(node) -> bool:
    return len(node.users) == 1


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


def _scaled(node) -> tuple[torch.fx.Node, float] | None:
    """(scores, scale) for `scores * c` / `scores / c` / bare scores."""
    if node.op == "call_function" and node.target in (aten.mul.Tensor, aten.mul.Scalar, aten.div.Tensor,
                                                       aten.div.Scalar):
        x, c = node.args[0], node.args[1]
        if node.target in (aten.mul.Tensor, aten.mul.Scalar) and isinstance(x, (int, float)):
            x, c = c, x
        if not isinstance(x, torch.fx.Node) or not isinstance(c, (int, float)) or isinstance(c, bool) or not c:
            return None
        return (x, float(c)) if node.target in (aten.mul.Tensor, aten.mul.Scalar) else (x, 1.0 / float(c))
    return node, 1.0


def _match(out: torch.fx.Node, dtypes: frozenset):
    """(q, k, v, scale, nodes to drop) when `out` is the second matmul of the pattern."""
    if out.op != "call_function" or out.target not in _MATMULS:
        return None
    probs, v = out.args[0], out.args[1]
    if not isinstance(probs, torch.fx.Node) or probs.target not in _SOFTMAXES or not _single_user(probs):
        return None
    dim = probs.args[1]
    if probs.target == aten._softmax.default and probs.args[2]:
        return None  # half_to_float: a dtype change SDPA would not make
    if probs.target == aten.softmax.int and (len(probs.args) > 2 and probs.args[2] is not None
                                              or probs.kwargs.get("dtype") is not None):
        return None
    scaled = probs.args[0]
    if not isinstance(scaled, torch.fx.Node) or not _single_user(scaled):
        return None
    found = _scaled(scaled)
    if found is None:
        return None
    scores, scale = found
    if scores.op != "call_function" or scores.target not in _MATMULS or (scores is not scaled and not _single_user(scores)):
        return None
    q, kt = scores.args[0], scores.args[1]
    k = _is_last_two_swap(kt)
    if k is None or not _single_user(kt):
        return None
    vals = [_val(x) for x in (q, k, v, out)]
    if any(x is None for x in vals):
        return None
    qv, kv, vv, ov = vals
    rank = qv.dim()
    if dim % rank != rank - 1 or rank < 3 or not (qv.dim() == kv.dim() == vv.dim() == rank):
        return None
    if not (qv.dtype == kv.dtype == vv.dtype == ov.dtype) or qv.dtype not in dtypes:
        return None
    if qv.shape[:-2] != kv.shape[:-2] or kv.shape[:-2] != vv.shape[:-2] or qv.shape[-1] != kv.shape[-1] \
            or kv.shape[-2] != vv.shape[-2]:
        return None
    drop = [out, probs] + ([scaled] if scaled is not scores else []) + [scores, kt]
    return q, k, v, scale, drop


def fuse_attention(graph_module: torch.fx.GraphModule, dtypes: frozenset) -> int:
    """Rewrite every softmax(q k^T * c) v whose operands have one of `dtypes` as one SDPA call;
    returns how many."""
    graph = graph_module.graph
    count = 0
    # The nodes a rewrite erases are inputs of the node it replaces, so the walk never meets one.
    for node in list(graph.nodes):
        found = _match(node, dtypes)
        if found is None:
            continue
        q, k, v, scale, drop = found
        with graph.inserting_before(node):
            fused = graph.call_function(aten.scaled_dot_product_attention.default, (q, k, v),
                                        {"scale": scale})
        fused.meta = dict(node.meta)
        node.replace_all_uses_with(fused)
        for dead in drop:
            if not dead.users:
                graph.erase_node(dead)
        count += 1
    if count:
        graph.lint()
        graph_module.recompile()
    return count


def sdpa_calls(graph) -> dict:
    """{node: dtype} for the scaled_dot_product_attention calls in a graph (dtype None if unknown)."""
    return {n: getattr(n.meta.get("val"), "dtype", None) for n in graph.nodes
            if n.op == "call_function" and n.target == aten.scaled_dot_product_attention.default}
