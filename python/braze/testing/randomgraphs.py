"""Seeded random PyTorch models for differential testing: elementwise chains and DAGs,
reductions and normalizations, matmuls and Linears, convolutions (grouped and depthwise) and
pooling, reshapes, permutes, slices and concatenations, casts through 16-bit floats.

    model, inputs = random_graph(seed)       # the same model and inputs for the same seed

Needs only torch, so the GPU host rebuilds the same graphs from seeds. Values stay in ranges
where float32 is accurate (exp of clamped values, logs of |x| + 1, divisions by |x| + 1), so
any difference from eager larger than float32's rounding is a compiler bug.

A graph is a list of steps over a pool of values; each step applies one op to values from the
pool (a second operand of the same shape, or a broadcast slice of one) and adds its result.
The outputs are the last value and up to two earlier ones.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import nn

UNARY = {
    "exp": lambda a: torch.exp(torch.clamp(a, -4, 4)),
    "tanh": torch.tanh,
    "sigmoid": torch.sigmoid,
    "relu": torch.relu,
    "gelu": F.gelu,
    "silu": F.silu,
    "neg": torch.neg,
    "abs": torch.abs,
    "sqrt": lambda a: torch.sqrt(torch.abs(a) + 1e-3),
    "log": lambda a: torch.log(torch.abs(a) + 1.0),
    "affine": lambda a: a * 0.5 + 1.0,
    "clamp": lambda a: torch.clamp(a, -1.5, 2.0),
    "f16": lambda a: a.to(torch.float16).to(a.dtype),
    "bf16": lambda a: a.to(torch.bfloat16).to(a.dtype),
}
BINARY = {
    "add": torch.add,
    "mul": torch.mul,
    "sub": torch.sub,
    "div": lambda a, b: a / (torch.abs(b) + 1.0),
    "max": torch.maximum,
    "where": lambda a, b: torch.where(a > b, a, b * 2.0),
}
REDUCTIONS = ("sum", "mean", "amax", "softmax", "log_softmax", "layer_norm", "logsumexp", "cumsum")
INTEGER = {
    "iadd": lambda a: a + 3,
    "imul": lambda a, b: a * b,
    "ifloordiv": lambda a: a // 3,
    "imod": lambda a: a % 5,
    "imax": lambda a, b: torch.maximum(a, b),
    "iwhere": lambda a, b: torch.where(a > b, a, b - 1),
}
"""Ops of integer graphs (int32 or int64 inputs; results compared exactly)."""


@dataclass
class Step:
    op: str
    args: tuple
    params: dict = field(default_factory=dict)


class RandomGraph(nn.Module):
    """One random graph: steps over a pool of values that starts with the inputs."""

    def __init__(self, seed: int, input_shapes: list[tuple[int, ...]], steps: list[Step], outputs: list[int]):
        super().__init__()
        self.seed = seed
        self.input_shapes = input_shapes
        self.steps = steps
        self.outputs = outputs
        self.layers = nn.ModuleList()
        for step in steps:
            if step.op == "linear":
                step.params["layer"] = len(self.layers)
                self.layers.append(nn.Linear(step.params["k"], step.params["n"], bias=step.params["bias"]))
            elif step.op == "conv":
                step.params["layer"] = len(self.layers)
                p = step.params
                self.layers.append(nn.Conv2d(p["cin"], p["cout"], p["k"], p["stride"], p["k"] // 2,
                                             groups=p["groups"], bias=p["bias"]))
            elif step.op == "norm":
                step.params["layer"] = len(self.layers)
                self.layers.append(nn.BatchNorm2d(step.params["c"]))

    def describe(self) -> str:
        return f"seed {self.seed}: inputs {self.input_shapes}, " + " ; ".join(
            f"v{len(self.input_shapes) + i} = {s.op}{s.args}" for i, s in enumerate(self.steps))

    def forward(self, *inputs):
        values = list(inputs)
        for step in self.steps:
            values.append(_apply(self, step, values))
        outs = [values[i] for i in self.outputs]
        return outs[0] if len(outs) == 1 else tuple(outs)


def _apply(model: RandomGraph, step: Step, values: list) -> torch.Tensor:
    op, args, p = step.op, step.args, step.params
    a = values[args[0]]
    if op in UNARY:
        return UNARY[op](a)
    if op in INTEGER:
        return INTEGER[op](*[values[k] for k in args])
    if op == "mask":
        return torch.where(a > p["threshold"], a, torch.zeros_like(a))
    if op == "expand":
        return a.expand(*p["shape"]) * 1.0
    if op in BINARY:
        b = values[args[1]]
        if p.get("slice") is not None:
            b = b[p["slice"]]
        return BINARY[op](a, b)
    if op in ("sum", "mean", "amax", "logsumexp"):
        return getattr(torch, op)(a, dim=p["dim"], keepdim=p["keepdim"])
    if op == "softmax":
        return torch.softmax(a, dim=p["dim"])
    if op == "log_softmax":
        return torch.log_softmax(a, dim=p["dim"])
    if op == "cumsum":
        return torch.cumsum(a, dim=p["dim"])
    if op == "layer_norm":
        return F.layer_norm(a, a.shape[-1:])
    if op == "linear":
        return model.layers[p["layer"]](a)
    if op == "matmul":
        b = values[args[1]]
        return a @ b.transpose(-1, -2) if p["transpose"] else a @ b
    if op in ("conv", "norm"):
        return model.layers[p["layer"]](a)
    if op == "max_pool":
        return F.max_pool2d(a, 2)
    if op == "avg_pool":
        return F.avg_pool2d(a, 2)
    if op == "permute":
        return a.permute(*p["perm"])
    if op == "reshape":
        return a.reshape(*p["shape"])
    if op == "slice":
        return a.narrow(p["dim"], p["start"], p["length"])
    if op == "cat":
        return torch.cat([a, values[args[1]]], dim=p["dim"])
    if op == "unsqueeze_sum":
        return a.unsqueeze(p["dim"]).sum(dim=p["dim"])
    raise ValueError(op)


def _shape_of(shapes: list, i: int) -> tuple[int, ...]:
    return shapes[i]


def random_graph(seed: int, max_steps: int = 12) -> tuple[RandomGraph, tuple[torch.Tensor, ...]]:
    """The model (eval mode, seeded weights) and example inputs for `seed` (one in ten an
    integer graph)."""
    rng = random.Random(seed)
    if rng.random() < 0.1:
        return _integer_graph(seed, rng)
    rank = rng.choice((2, 2, 3, 4, 4))
    shape = {2: lambda: (rng.choice((3, 4, 8)), rng.choice((5, 8, 16))),
             3: lambda: (rng.choice((2, 3)), rng.choice((4, 6)), rng.choice((8, 16))),
             4: lambda: (rng.choice((1, 2)), rng.choice((4, 8)), rng.choice((6, 8)), rng.choice((6, 8)))}[rank]()
    inputs = [shape]
    if rng.random() < 0.6:
        inputs.append(shape)
    if rng.random() < 0.4:  # a broadcast operand: size 1 somewhere
        d = rng.randrange(len(shape))
        inputs.append(tuple(1 if i == d else s for i, s in enumerate(shape)))
    shapes = list(inputs)
    steps: list[Step] = []
    for _ in range(rng.randint(3, max_steps)):
        step = _random_step(rng, shapes)
        if step is None:
            continue
        steps.append(step[0])
        shapes.append(step[1])
    if not steps:
        steps.append(Step("tanh", (0,)))
        shapes.append(shapes[0])
    last = len(shapes) - 1
    extra = {rng.randrange(len(inputs), len(shapes)) for _ in range(rng.randint(0, 2))}
    outputs = sorted({last} | extra)
    torch.manual_seed(seed)
    model = RandomGraph(seed, inputs, steps, outputs).eval()
    with torch.no_grad():
        for m in model.layers:
            if isinstance(m, nn.BatchNorm2d):
                m.running_mean.uniform_(-0.5, 0.5)
                m.running_var.uniform_(0.5, 2.0)
    gen = torch.Generator().manual_seed(seed + 1)
    return model, tuple(torch.randn(s, generator=gen) for s in inputs)


def _integer_graph(seed: int, rng: random.Random) -> tuple[RandomGraph, tuple[torch.Tensor, ...]]:
    shape = (rng.choice((3, 8)), rng.choice((4, 16)))
    dtype = rng.choice((torch.int32, torch.int64))
    steps, n = [], 2
    for _ in range(rng.randint(2, 7)):
        op = rng.choice(sorted(INTEGER))
        arity = INTEGER[op].__code__.co_argcount
        steps.append(Step(op, tuple(rng.randrange(n) for _ in range(arity))))
        n += 1
    model = RandomGraph(seed, [shape, shape], steps, sorted({n - 1, rng.randrange(2, n)})).eval()
    gen = torch.Generator().manual_seed(seed + 1)
    return model, tuple(torch.randint(-20, 20, shape, generator=gen, dtype=dtype) for _ in range(2))


def _random_step(rng: random.Random, shapes: list) -> tuple[Step, tuple] | None:
    i = rng.randrange(len(shapes))
    s = shapes[i]
    kind = rng.choices(("unary", "binary", "reduce", "contract", "spatial", "shape", "mask"), (5, 6, 3, 3, 2, 3, 1))[0]
    if kind == "unary":
        return Step(rng.choice(sorted(UNARY)), (i,)), s
    if kind == "mask":
        return Step("mask", (i,), {"threshold": rng.choice((-0.5, 0.0, 0.7))}), s
    if kind == "binary":
        same = [j for j, t in enumerate(shapes) if t == s]
        j = rng.choice(same)
        if rng.random() < 0.3 and len(s) >= 2:  # broadcast: a slice of size 1 along a dim
            d = rng.randrange(len(s))
            index = tuple(slice(0, 1) if k == d else slice(None) for k in range(len(s)))
            return Step(rng.choice(sorted(BINARY)), (i, j), {"slice": index}), s
        return Step(rng.choice(sorted(BINARY)), (i, j)), s
    if kind == "reduce":
        op = rng.choice(REDUCTIONS)
        dim = rng.randrange(len(s)) - len(s)
        if op in ("softmax", "log_softmax", "cumsum"):
            return Step(op, (i,), {"dim": dim}), s
        if op == "layer_norm":
            return Step(op, (i,)), s
        keepdim = rng.random() < 0.5 or len(s) == 1
        out = tuple(1 if k == len(s) + dim else x for k, x in enumerate(s)) if keepdim else \
            tuple(x for k, x in enumerate(s) if k != len(s) + dim)
        return Step(op, (i,), {"dim": dim, "keepdim": keepdim}), out
    if kind == "contract":
        if rng.random() < 0.6 or len(s) < 2:
            n = rng.choice((4, 8, 16))
            return Step("linear", (i,), {"k": s[-1], "n": n, "bias": rng.random() < 0.7}), s[:-1] + (n,)
        # a matmul between two values: [.., M, K] @ [.., N, K]^T, or @ [.., K, N]
        partners = [j for j, t in enumerate(shapes) if len(t) == len(s) and t[:-2] == s[:-2]]
        j = rng.choice(partners)
        t = shapes[j]
        if t[-1] == s[-1]:
            return Step("matmul", (i, j), {"transpose": True}), s[:-1] + (t[-2],)
        if t[-2] == s[-1]:
            return Step("matmul", (i, j), {"transpose": False}), s[:-1] + (t[-1],)
        return None
    if kind == "spatial":
        if len(s) != 4:
            return None
        n, c, h, w = s
        choice = rng.choice(("conv", "conv", "depthwise", "grouped", "norm", "max_pool", "avg_pool"))
        if choice in ("max_pool", "avg_pool"):
            if h % 2 or w % 2:
                return None
            return Step(choice, (i,)), (n, c, h // 2, w // 2)
        if choice == "norm":
            return Step("norm", (i,), {"c": c}), s
        k, stride = rng.choice((1, 3, 3)), rng.choice((1, 1, 2))
        groups = c if choice == "depthwise" else (2 if choice == "grouped" and c % 2 == 0 else 1)
        cout = c if choice == "depthwise" else rng.choice((4, 8)) if groups == 1 else 2 * groups
        oh, ow = (h + 2 * (k // 2) - k) // stride + 1, (w + 2 * (k // 2) - k) // stride + 1
        return Step("conv", (i,), {"cin": c, "cout": cout, "k": k, "stride": stride, "groups": groups,
                                   "bias": rng.random() < 0.5}), (n, cout, oh, ow)
    # shape ops
    op = rng.choice(("permute", "reshape", "slice", "cat", "unsqueeze_sum", "expand"))
    if op == "expand":
        ones = [k for k, x in enumerate(s) if x == 1]
        if not ones:
            return None
        new = tuple(rng.choice((2, 4)) if k in ones else x for k, x in enumerate(s))
        return Step("expand", (i,), {"shape": new}), new
    if op == "permute" and len(s) >= 2:
        perm = list(range(len(s)))
        rng.shuffle(perm)
        return Step("permute", (i,), {"perm": tuple(perm)}), tuple(s[k] for k in perm)
    if op == "reshape" and len(s) >= 2:
        if rng.random() < 0.5:  # merge the last two dims
            new = s[:-2] + (s[-2] * s[-1],)
        else:  # split the first dim that is even
            even = [k for k, x in enumerate(s) if x % 2 == 0]
            if not even:
                return None
            k = even[0]
            new = s[:k] + (2, s[k] // 2) + s[k + 1:]
        return Step("reshape", (i,), {"shape": new}), new
    if op == "slice":
        dim = rng.randrange(len(s))
        if s[dim] < 2:
            return None
        start = rng.randrange(s[dim] - 1)
        length = rng.randint(1, s[dim] - start)
        return Step("slice", (i,), {"dim": dim - len(s), "start": start, "length": length}), \
            tuple(length if k == dim else x for k, x in enumerate(s))
    if op == "cat":
        dim = rng.randrange(len(s))
        partners = [j for j, t in enumerate(shapes) if len(t) == len(s)
                    and all(a == b for k, (a, b) in enumerate(zip(t, s)) if k != dim)]
        j = rng.choice(partners)
        return Step("cat", (i, j), {"dim": dim - len(s)}), \
            tuple(x + shapes[j][dim] if k == dim else x for k, x in enumerate(s))
    if op == "unsqueeze_sum":
        return Step("unsqueeze_sum", (i,), {"dim": rng.randrange(len(s) + 1)}), s
    return None


CAST_ULP = {"bf16": 2.0 ** -7, "f16": 2.0 ** -10}
"""A rounding step of a 16-bit cast, relative to the value: a float32 difference of one ulp
before the cast can flip it, so a graph with casts is allowed that much more."""


TF32_ERROR = 4e-3
"""max_error allowed a result whose float32 contractions ran in TF32 (10-bit mantissas: braze's
CUDA default for convolutions, as cuDNN's; bench/launch_check.py and bench/differential.py):
a few roundings to 2^-11 summed over K products (cuDNN's own is 0.6-0.9e-3 at ResNet-18's
shapes, bench/NOTES.md §18)."""


def tolerance(model: RandomGraph, reference_error: float) -> float:
    """Allowed max_error against float64 eager: ten times float32 eager's own error, plus the
    rounding steps of the graph's 16-bit casts."""
    casts = max((CAST_ULP[s.op] for s in model.steps if s.op in CAST_ULP), default=0.0)
    return 10 * reference_error + 1e-5 + casts
