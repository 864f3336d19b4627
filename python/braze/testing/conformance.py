"""braze's own conformance suite (issue 39): small modules by op family, each run compiled and
compared with eager PyTorch, in the style of torch-mlir's e2e suite, whose cases braze failed
where the raw torch-mlir + IREE toolchain ran them.

    pooling        adaptive max/avg pooling whose output does not divide its input (1d, 2d, 3d,
                   with indices, without batch, dynamic), max/avg pooling options, unpooling
    slice_write    slice_scatter, select_scatter, slice(...).copy_(...) into an input, index_copy
    linalg         determinant and slogdet (single, batched, dynamic), matmul forms
    complex        complex64 and complex128 inputs and results
    float64        float64 inside a float32 model (accumulation, buffers) and float64 throughout
    empty          views and ops of tensors with no elements (as_strided after an empty slice)
    index          indexing: x[:, idx] (None in aten.index.Tensor's list), gather, scatter, put
    conv           convolutions 1d/2d/3d with strides, padding, dilation, groups; transposed;
                   torch-mlir's convolution_backward modules
    attention      scaled_dot_product_attention with boolean and float masks, causal, written out
    nan            NaN in the inputs: clamp, hardtanh, relu6, hardsigmoid, maximum, minimum,
                   argmax/argmin, max/min along a dimension keep or point at it as eager does
    misc           reductions, scans, normalisations and elementwise ops beside them; integer
                   floor division above 2^53; prims views; mixed-dtype results

Each Module builds its inputs from a seed of its own; `reference` says what it is compared
with: "float64" (the same function on float64 copies of the floating inputs, complex128 for
complex64; the default) or "eager" (the function as it is, for modules whose dtypes are the
point: casts, integer results). `dynamic` is a torch.export dynamic_shapes spec builder, and
`shapes` the other input shapes a dynamic module is called with. `unsupported` names the
modules the raw toolchain cannot run either: braze must refuse them with a BrazeError that
matches it, at compile time or at the first call.

Needs only torch: bench scripts on a GPU host import it too.
"""

from __future__ import annotations

import copy
import zlib
from dataclasses import dataclass, field
from typing import Callable

import torch
import torch.nn.functional as F

Inputs = Callable[[torch.Generator], tuple]


@dataclass(frozen=True)
class Module:
    name: str
    family: str
    fn: Callable
    inputs: Inputs
    reference: str = "float64"
    dynamic: Callable[[], dict] | None = None
    calls: tuple[Inputs, ...] = ()
    """More input builders a dynamic module is called with (other sizes in range)."""
    unsupported: str = ""
    """A regex the BrazeError must match where neither braze nor the raw toolchain runs it."""
    params: Callable[[], torch.nn.Module] | None = None
    """A module with parameters to call `fn(module, *inputs)` on, where the function needs one."""

    def seed(self) -> int:
        return zlib.crc32(self.name.encode())

    def example(self) -> tuple:
        return self.inputs(torch.Generator().manual_seed(self.seed()))

    def fresh(self) -> list[tuple]:
        """Inputs to call the compiled module with: new values of the example's shapes, then
        each of `calls`."""
        out = [self.inputs(torch.Generator().manual_seed(self.seed() + 1))]
        out += [make(torch.Generator().manual_seed(self.seed() + 2 + i)) for i, make in enumerate(self.calls)]
        return out

    def model(self) -> torch.nn.Module:
        return _Wrap(self.fn, self.params() if self.params else None, self.name).eval()


class _Wrap(torch.nn.Module):
    def __init__(self, fn, inner, name):
        super().__init__()
        self.fn, self.inner, self.label = fn, inner, name

    def forward(self, *args):
        return self.fn(self.inner, *args) if self.inner is not None else self.fn(*args)

    def extra_repr(self) -> str:
        return self.label


def wide(args):
    """float64 copies of the floating inputs (complex128 of complex ones), the rest as is."""
    out = []
    for a in args:
        if isinstance(a, torch.Tensor) and a.dtype.is_floating_point:
            a = a.double()
        elif isinstance(a, torch.Tensor) and a.dtype.is_complex:
            a = a.to(torch.complex128)
        out.append(a)
    return tuple(out)


# -- input builders ---------------------------------------------------------------------------


def rand(*shapes, dtype=torch.float32, low=-1.0, high=1.0) -> Inputs:
    def make(g):
        return tuple((torch.rand(s, generator=g, dtype=torch.float64) * (high - low) + low).to(dtype) for s in shapes)
    return make


def crand(*shapes, dtype=torch.complex64) -> Inputs:
    def make(g):
        return tuple(torch.complex(torch.randn(s, generator=g, dtype=torch.float64),
                                   torch.randn(s, generator=g, dtype=torch.float64)).to(dtype) for s in shapes)
    return make


def with_ints(floats: Inputs, *ints) -> Inputs:
    """`floats`' tensors, then integer tensors: each (shape, high) of random int64 in [0, high),
    or a fixed tensor."""
    def make(g):
        extra = tuple(i if isinstance(i, torch.Tensor) else torch.randint(0, i[1], i[0], generator=g) for i in ints)
        return floats(g) + extra
    return make


def dims(*per_input):
    """dynamic_shapes builder, one dict per input: dims({0: ("n", 1, 64)}, None) ->
    ({0: Dim("n", min=1, max=64)}, None); a name used twice is one Dim."""
    def build():
        made = {}
        out = []
        for axes in per_input:
            if axes is None:
                out.append(None)
                continue
            spec = {}
            for axis, (name, lo, hi) in axes.items():
                if name not in made:
                    made[name] = torch.export.Dim(name, min=lo, max=hi)
                spec[axis] = made[name]
            out.append(spec)
        return (tuple(out),)  # forward(*args): one tuple for the one *args parameter
    return build


MODULES: list[Module] = []


def add(name, family, fn, inputs, **kw) -> None:
    MODULES.append(Module(name, family, fn, inputs, **kw))


# -- pooling ----------------------------------------------------------------------------------

for n, size, out in ((1, (1, 512, 10), 7), (1, (512, 10), 7), (1, (2, 3, 9), 4), (1, (2, 3, 8), 1),
                     (2, (1, 512, 10, 9), (7, 13)), (2, (512, 10, 16), (7, 4)), (2, (1, 3, 8, 8), (3, 3)),
                     (2, (2, 3, 9, 7), (4, 5)), (2, (1, 2, 7, 7), (1, 1)), (2, (1, 2, 10, 16), (2, 3)),
                     (3, (1, 3, 9, 10, 11), (4, 3, 5)), (3, (3, 6, 6, 6), (4, 4, 4))):
    batch = "nobatch" if len(size) == n + 1 else "batch"
    tag = "x".join(map(str, size))
    maxp = getattr(F, f"adaptive_max_pool{n}d")
    avgp = getattr(F, f"adaptive_avg_pool{n}d")
    add(f"adaptive_max_pool{n}d_{batch}_{tag}", "pooling", lambda x, p=maxp, o=out: p(x, o), rand(size))
    add(f"adaptive_max_pool{n}d_indices_{tag}", "pooling",
        lambda x, p=maxp, o=out: p(x, o, return_indices=True), rand(size))
    add(f"adaptive_avg_pool{n}d_{batch}_{tag}", "pooling", lambda x, p=avgp, o=out: p(x, o), rand(size))

add("adaptive_max_pool1d_dynamic", "pooling", lambda x: F.adaptive_max_pool1d(x, 7), rand((2, 512, 10)),
    dynamic=dims({0: ("b", 2, 8), 2: ("l", 7, 64)}), calls=(rand((3, 512, 13)), rand((2, 512, 7))))
add("adaptive_max_pool2d_dynamic", "pooling", lambda x: F.adaptive_max_pool2d(x, (7, 13)), rand((1, 64, 10, 9)),
    dynamic=dims({2: ("h", 7, 64), 3: ("w", 2, 64)}), calls=(rand((1, 64, 15, 20)),))
add("adaptive_max_pool2d_dynamic_indices", "pooling",
    lambda x: F.adaptive_max_pool2d(x, (7, 13), return_indices=True), rand((1, 64, 10, 16)),
    dynamic=dims({2: ("h", 7, 64), 3: ("w", 2, 64)}), calls=(rand((1, 64, 9, 30)),))
add("adaptive_max_pool3d_dynamic", "pooling", lambda x: F.adaptive_max_pool3d(x, (5, 3, 4)), rand((2, 4, 9, 7, 10)),
    dynamic=dims({0: ("b", 2, 8), 2: ("d", 5, 32)}), calls=(rand((2, 4, 11, 7, 10)),))
add("adaptive_avg_pool2d_dynamic", "pooling", lambda x: F.adaptive_avg_pool2d(x, (3, 5)), rand((2, 8, 10, 11)),
    dynamic=dims({0: ("b", 1, 8)}), calls=(rand((5, 8, 10, 11)),))

for kw in (dict(kernel_size=3, stride=2, padding=1), dict(kernel_size=3, stride=2, ceil_mode=True),
           dict(kernel_size=2, stride=1, dilation=2), dict(kernel_size=(3, 2), stride=(2, 1), padding=(1, 0))):
    tag = "_".join(f"{k}{v}" for k, v in kw.items()).replace(" ", "").replace("(", "").replace(")", "").replace(",", "x")
    add(f"max_pool2d_{tag}", "pooling", lambda x, kw=kw: F.max_pool2d(x, **kw), rand((2, 3, 11, 10)))
    add(f"max_pool2d_indices_{tag}", "pooling", lambda x, kw=kw: F.max_pool2d(x, return_indices=True, **kw),
        rand((2, 3, 11, 10)))
for kw in (dict(kernel_size=3, stride=2, padding=1, count_include_pad=False), dict(kernel_size=3, stride=2, ceil_mode=True),
           dict(kernel_size=3, stride=1, padding=1, divisor_override=4)):
    tag = "_".join(f"{k}{v}" for k, v in kw.items())
    add(f"avg_pool2d_{tag}", "pooling", lambda x, kw=kw: F.avg_pool2d(x, **kw), rand((2, 3, 11, 10)))
add("max_pool1d", "pooling", lambda x: F.max_pool1d(x, 3, 2, 1), rand((2, 4, 17)))
add("avg_pool1d", "pooling", lambda x: F.avg_pool1d(x, 4, 3), rand((2, 4, 17)))
add("max_pool3d", "pooling", lambda x: F.max_pool3d(x, 3, 2, 1), rand((1, 2, 9, 8, 7)))
add("avg_pool3d", "pooling", lambda x: F.avg_pool3d(x, 2, 2), rand((1, 2, 8, 8, 6)))


def _unpool(x, n):
    y, i = getattr(F, f"max_pool{n}d")(x, 2, 2, return_indices=True)
    return getattr(F, f"max_unpool{n}d")(y, i, 2, 2, output_size=x.shape[-n:])


add("max_unpool2d", "pooling", lambda x: _unpool(x, 2), rand((2, 3, 8, 6)))
add("max_unpool3d", "pooling", lambda x: _unpool(x, 3), rand((1, 2, 4, 6, 4)))

# -- writes into slices -----------------------------------------------------------------------

for tag, kw, shapes in (("dim1", dict(dim=1, start=0, end=1, step=1), ((6, 8), (6, 1))),
                        ("dim0", dict(dim=0, start=0, end=1, step=1), ((6, 8), (1, 8))),
                        ("negative_end", dict(dim=0, start=3, end=-1, step=1), ((6, 8), (2, 8))),
                        ("negative_dim", dict(dim=-2, start=0, end=1, step=1), ((6, 8), (1, 8))),
                        ("step2", dict(dim=1, start=0, end=1, step=2), ((6, 8), (6, 1))),
                        ("step3_middle", dict(dim=1, start=1, end=8, step=3), ((4, 8), (4, 3)))):
    add(f"slice_scatter_{tag}", "slice_write", lambda x, s, kw=kw: torch.slice_scatter(x, s, **kw), rand(*shapes))
    add(f"slice_scatter_{tag}_then_use", "slice_write",
        lambda x, s, kw=kw: torch.slice_scatter(x, s * 2, **kw) + x, rand(*shapes))
add("slice_scatter_dynamic", "slice_write", lambda x, s: torch.slice_scatter(x, s, dim=1, start=0, end=1),
    rand((6, 8), (6, 1)), dynamic=dims({0: ("n", 2, 64)}, {0: ("n", 2, 64)}), calls=(rand((9, 8), (9, 1)),))
add("select_scatter", "slice_write", lambda x, s: torch.select_scatter(x, s, 0, 2), rand((5, 4), (4,)))
add("select_scatter_last", "slice_write", lambda x, s: torch.select_scatter(x, s, -1, -1), rand((5, 4), (5,)))


def _slice_copy(dim, start, end):
    def fn(x, y):
        torch.ops.aten.slice(x, dim, start, end, 1).copy_(y)
        return x
    return fn


for tag, args, shapes in (("basic", (0, 2, 6), ((10, 4, 4), (4, 4, 4))),
                          ("negative", (0, 2, -4), ((10, 4, 4), (4, 4, 4))),
                          ("start_past_end", (0, 100, 10), ((10, 4, 4), (0, 4, 4))),
                          ("end_past_end", (0, 2, 100), ((10, 4, 4), (8, 4, 4))),
                          ("nonzero_dim", (1, 1, 3), ((10, 4, 4), (10, 2, 4)))):
    add(f"slice_copy_{tag}", "slice_write", _slice_copy(*args), rand(*shapes))


def _setitem(x, y):
    x = x.clone()
    x[1:3, ::2] = y
    return x


def _index_copy(x, s, i):
    return x.index_copy(0, i, s)


add("setitem_strided", "slice_write", _setitem, rand((5, 6), (2, 3)))
add("narrow_copy_returns_both", "slice_write", lambda x, y: (x.narrow(1, 2, 3).copy_(y), x)[1] * 1.0,
    rand((4, 8), (4, 3)))
add("index_copy", "slice_write", _index_copy, with_ints(rand((6, 3), (2, 3)), torch.tensor([4, 1])))
add("diagonal_scatter", "slice_write", lambda x, d: torch.diagonal_scatter(x, d, 1), rand((5, 5), (4,)),
    unsupported="torch-mlir failed to lower .*torch.constant.int")

# -- linear algebra ---------------------------------------------------------------------------

for tag, shape in (("single", (4, 4)), ("batched", (3, 5, 5)), ("large", (12, 12))):
    add(f"det_{tag}", "linalg", torch.linalg.det, rand(shape))
    add(f"slogdet_{tag}", "linalg", lambda x: tuple(torch.linalg.slogdet(x)), rand(shape))
add("det_dynamic", "linalg", torch.linalg.det, rand((3, 4, 4)), dynamic=dims({0: ("b", 1, 16)}),
    calls=(rand((7, 4, 4)),))
add("slogdet_dynamic", "linalg", lambda x: tuple(torch.linalg.slogdet(x)), rand((3, 4, 4)),
    dynamic=dims({0: ("b", 1, 16)}), calls=(rand((5, 4, 4)),))
add("det_times_input", "linalg", lambda x: torch.linalg.det(x)[:, None, None] * x, rand((2, 3, 3)))
add("bmm", "linalg", torch.bmm, rand((3, 4, 5), (3, 5, 6)))
add("mm_int8", "linalg", torch.mm,
    lambda g: (torch.randint(-100, 100, (16, 4), generator=g).to(torch.int8),
               torch.randint(-100, 100, (4, 16), generator=g).to(torch.int8)), reference="eager")
add("bmm_uint8", "linalg", torch.bmm,
    lambda g: (torch.randint(0, 200, (2, 3, 4), generator=g).to(torch.uint8),
               torch.randint(0, 200, (2, 4, 5), generator=g).to(torch.uint8)), reference="eager")
add("baddbmm", "linalg", lambda a, b, c: torch.baddbmm(a, b, c, beta=0.5, alpha=2.0), rand((3, 4, 6), (3, 4, 5), (3, 5, 6)))
add("addmm", "linalg", lambda a, b, c: torch.addmm(a, b, c, beta=0.3), rand((6,), (4, 5), (5, 6)))
add("einsum_bij_bjk", "linalg", lambda a, b: torch.einsum("bij,bjk->bik", a, b), rand((2, 3, 4), (2, 4, 5)))
add("einsum_trace_outer", "linalg", lambda a, b: torch.einsum("ii,j->j", a, b), rand((4, 4), (3,)))
add("matmul_broadcast", "linalg", torch.matmul, rand((2, 1, 3, 4), (5, 4, 2)))
add("matmul_vector", "linalg", torch.matmul, rand((3, 4), (4,)))
add("vector_norm", "linalg", lambda x: torch.linalg.vector_norm(x, 3.0, dim=-1), rand((4, 7)))
add("matrix_norm_fro", "linalg", lambda x: torch.linalg.matrix_norm(x), rand((3, 4, 5)))
add("tril_triu", "linalg", lambda x: torch.tril(x, -1) + torch.triu(x, 2) * 2, rand((5, 6)))
add("cross", "linalg", lambda a, b: torch.linalg.cross(a, b), rand((4, 3), (4, 3)))

# -- complex ----------------------------------------------------------------------------------

for dt, dn in ((torch.complex64, "complex64"), (torch.complex128, "complex128")):
    add(f"{dn}_real_imag", "complex", lambda x: torch.real(x) * 2 + torch.imag(x), crand((4, 3), dtype=dt))
    add(f"{dn}_view_as_real", "complex", lambda x: torch.view_as_real(x) * 3, crand((5,), dtype=dt))
    add(f"{dn}_view_as_complex_out", "complex",
        lambda x: torch.view_as_complex(x * 2), rand((4, 2), dtype=torch.float32 if dt == torch.complex64 else torch.float64))
    add(f"{dn}_in_out", "complex", lambda x: torch.view_as_complex(torch.view_as_real(x).flip(-1)), crand((3,), dtype=dt))
    add(f"{dn}_concat", "complex", lambda a, b: torch.cat([a, b], 0), crand((2, 3), (3, 3), dtype=dt))
    add(f"{dn}_mul_add", "complex", lambda a, b: a * b + a, crand((4,), (4,), dtype=dt),
        unsupported="torch-mlir failed to lower .*'arith.muli' op .*complex")
    add(f"{dn}_abs", "complex", lambda a: torch.abs(a), crand((6,), dtype=dt),
        unsupported="torch-mlir failed to lower .*'math.absf' op .*complex")
    add(f"{dn}_conj_mul", "complex", lambda a: a * torch.conj(a), crand((3, 2), dtype=dt),
        unsupported="torch-mlir cannot lower 'aten._conj'")

add("complex128_concat_floats", "complex", lambda a, b, c, d: torch.cat([a, b, c, d], 1),
    lambda g: (crand((2, 1, 4), dtype=torch.complex128)(g)[0], *rand((2, 3, 4), dtype=torch.float64)(g),
               *rand((2, 3, 4))(g), *rand((2, 3, 4), dtype=torch.float16)(g)), reference="eager")
add("complex128_concat_ints", "complex", lambda a, b, c: torch.cat([a, b, c], 1),
    lambda g: (crand((2, 1, 4), dtype=torch.complex128)(g)[0], torch.randint(1, 10, (2, 3, 4), generator=g),
               torch.randint(1, 10, (2, 3, 4), generator=g, dtype=torch.int32)), reference="eager")
add("complex64_complex128_hstack", "complex", lambda a, b: torch.hstack([a, b]),
    lambda g: (crand((4, 6, 4, 2))(g)[0], crand((4, 3, 4, 2), dtype=torch.complex128)(g)[0]), reference="eager")
add("complex128_view_as_real_3d", "complex", torch.view_as_real, crand((10, 6, 1), dtype=torch.complex128))
add("complex128_vector_norm_keepdim", "complex", lambda a: torch.linalg.vector_norm(a, ord=3, keepdim=True),
    crand((3, 4, 5), dtype=torch.complex128))
add("complex128_vector_norm_dims", "complex", lambda a: torch.linalg.vector_norm(a, ord=3.0, dim=[0, 1]),
    crand((3, 4, 5), dtype=torch.complex128))
add("complex64_complex128_mul", "complex", torch.mul,
    lambda g: (crand((4,))(g)[0], crand((4,), dtype=torch.complex128)(g)[0]), reference="eager")

# -- float64 ----------------------------------------------------------------------------------


class _F64Buffer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("scale", torch.linspace(0.5, 2.0, 6, dtype=torch.float64))


def _f64_var(x):
    return x.double().var(dim=-1).float()


add("f64_var_in_f32", "float64", _f64_var, rand((4, 64), low=1000.0, high=1001.0), reference="eager")
add("f64_std_in_f32", "float64", lambda x: x.to(torch.float64).std().to(torch.float32),
    rand((256,), low=3000.0, high=3000.5), reference="eager")
add("f64_sum_in_f32", "float64", lambda x: (x.double().cumsum(0) - 1e6).float(),
    rand((64,), low=1e6 / 64, high=1e6 / 64 + 1), reference="eager")
add("f64_buffer_in_f32", "float64", lambda m, x: (x.double() * m.scale).float() + x, rand((3, 6)),
    params=_F64Buffer, reference="eager")
add("f64_buffer_returned", "float64", lambda m, x: (x * m.scale, x.sum()), rand((3, 6), dtype=torch.float64),
    params=_F64Buffer)
add("f64_mean_of_f32", "float64", lambda x: x.mean(-1, dtype=torch.float64), rand((5, 33)), reference="eager")
add("f64_throughout", "float64", lambda x, y: (x @ y).relu() + x.sum(), rand((4, 5), (5, 3), dtype=torch.float64))
add("f64_to_f32_mixed", "float64", lambda x, y: x.float() * y,
    lambda g: (torch.rand(4, 5, generator=g, dtype=torch.float64), torch.rand(4, 5, generator=g)), reference="eager")
add("f64_softmax_in_f32", "float64", lambda x: torch.softmax(x.double(), -1).float(), rand((3, 7)), reference="eager")

add("f64_var_dims_biased", "float64", lambda x: torch.ops.aten.var(x, dim=(0, 1), unbiased=False, keepdim=True),
    rand((3, 4, 5), dtype=torch.float64))
add("f64_var_single_dim", "float64", lambda x: torch.ops.aten.var(x, dim=(0,), keepdim=True),
    rand((3, 4, 5), dtype=torch.float64))
add("f64_var_multi_dim", "float64", lambda x: torch.ops.aten.var(x, dim=[0, 2]), rand((3, 4, 5), dtype=torch.float64))
add("f64_std_correction", "float64", lambda x: torch.std(x, dim=1, correction=2), rand((3, 6), dtype=torch.float64))
add("f64_logcumsumexp", "float64", lambda x: torch.logcumsumexp(x, 1), rand((5, 3, 6, 9), dtype=torch.float64))
add("f64_softmax_int_dim", "float64", lambda x: torch.softmax(x, 2), rand((3, 2, 4), dtype=torch.float64))
add("f32_fill_with_f64", "float64", lambda t, v: torch.ops.aten.fill_(t, v) * 1.0,
    lambda g: (torch.rand(3, 2, 4, generator=g), torch.rand((), generator=g, dtype=torch.float64)), reference="eager")
add("f32_outer_f64", "float64", torch.outer,
    lambda g: (torch.rand(4, generator=g), torch.rand(3, generator=g, dtype=torch.float64)), reference="eager")
add("f32_sum_dtype_f64", "float64", lambda x: torch.sum(x, dim=0, dtype=torch.float64), rand((3, 4, 5)), reference="eager")
add("f32_var_f64_buffer_mix", "float64", lambda m, x: torch.var(x.double() * m.scale, 1), rand((5, 6)),
    params=_F64Buffer, reference="eager")

# -- empty tensors ----------------------------------------------------------------------------

add("as_strided_after_empty_slice", "empty",
    lambda x: torch.as_strided(x[:, 3:3], (2, 2), (1, 1), 0), rand((4, 6)))
add("as_strided_after_empty_expand_slice", "empty",
    lambda x: torch.as_strided(torch.as_strided(x, (4,), (1,), 0).expand(1, 4)[1:1], (1,), (1,)), rand((8,)))
add("as_strided_after_slice_alias", "empty",
    lambda x: torch.as_strided(torch.ops.aten.alias(x[1:3]).detach(), (2, 2), (8, 1), 0), rand((3, 2, 4)))
add("as_strided_after_views", "empty",
    lambda x: torch.as_strided(x[1:3].permute(1, 0, 2), (2, 2), (12, 1)), rand((3, 2, 4)))
add("as_strided_after_diagonal", "empty", lambda x: torch.as_strided(torch.diagonal(x), (3,), (6,), 0), rand((4, 5)))
add("as_strided_after_expand", "empty", lambda x: torch.as_strided(x.expand(2, 4), (2, 3), (0, 1), 0), rand((1, 4)))
add("as_strided_after_movedim", "empty",
    lambda x: torch.as_strided(torch.movedim(x, 1, 2), (2, 4, 2), (12, 1, 4), 0), rand((2, 3, 4)))
add("as_strided_of_input", "empty", lambda x: torch.as_strided(x, (3, 2), (2, 1), 1), rand((4, 4)))
add("empty_slice_sum", "empty", lambda x: (x[2:2].sum(0), x * 2), rand((4, 3)))
add("empty_cat", "empty", lambda x, y: torch.cat([x, y], 0) + 1, rand((0, 3), (4, 3)))
add("empty_reshape", "empty", lambda x: (x.reshape(0, 2, 3), x.sum()), rand((0, 6)))
add("empty_matmul", "empty", lambda a, b: a @ b, rand((3, 0), (0, 4)))
add("empty_index_select", "empty", lambda x, i: x.index_select(0, i),
    with_ints(rand((4, 3)), torch.zeros(0, dtype=torch.int64)))
add("empty_max_keepdim", "empty", lambda x: (x.amax(1, keepdim=True), x[:, :0].mean(1)), rand((3, 5)))
add("empty_narrow_then_pad", "empty", lambda x: F.pad(x.narrow(1, 2, 0), (1, 1)), rand((2, 4)))

# -- indexing ---------------------------------------------------------------------------------

_IDX = torch.tensor([3, 0, 2, 2])
add("index_none_first", "index", lambda x: x[:, _IDX], rand((3, 5, 2)))
add("index_none_two", "index", lambda x: x[:, :, _IDX], rand((2, 3, 5)))
add("index_tensor_arg_none", "index", lambda x, i: x[:, i], with_ints(rand((3, 5)), ((4,), 5)))
add("index_none_then_two_adjacent", "index", lambda x, i, j: x[:, i, j],
    with_ints(rand((2, 4, 5, 3)), ((3,), 4), ((3,), 5)))
add("index_two_apart", "index", lambda x, i, j: x[i, :, j], with_ints(rand((4, 3, 5)), ((2, 2), 4), ((2, 2), 5)))
add("index_none_two_apart", "index", lambda x, i, j: x[:, i, :, j],
    with_ints(rand((2, 4, 3, 5)), ((3,), 4), ((3,), 5)))
add("index_bool_mask", "index", lambda x, m: x[:, m] * 2,
    lambda g: (torch.rand(3, 4, generator=g), torch.tensor([True, False, True, True])),
    unsupported="the size of 'aten.index' .* depends on the values of its input")
add("index_none_negative_arg", "index", lambda x, i: torch.ops.aten.index(x, (None, None, i)),
    lambda g: (torch.rand(1, 2, 3, 2, generator=g), torch.randint(-2, 0, (1,), generator=g)))
_NEGATIVE = torch.tensor([-1, 0, -3])
add("index_none_negative_constant", "index", lambda x: x[:, _NEGATIVE] * 2, rand((2, 4, 3)))
add("index_none_negative_made_inside", "index", lambda x: x[:, torch.tensor([-1, 0, -3])] * 2, rand((2, 4, 3)))
add("index_ellipsis", "index", lambda x: x[..., _IDX], rand((2, 2, 5)))
add("index_first", "index", lambda x, i: x[i], with_ints(rand((6, 3)), ((5,), 6)))
add("index_two_tensors", "index", lambda x, i, j: x[i, j], with_ints(rand((4, 5)), ((3,), 4), ((3,), 5)))
add("index_two_broadcast", "index", lambda x, i, j: x[i[:, None], j], with_ints(rand((4, 5)), ((3,), 4), ((2,), 5)))
add("index_window_partition", "index", lambda x: x[:, torch.tensor([[0, 1], [2, 3]])].sum(-2), rand((2, 4, 3)))
add("index_select", "index", lambda x, i: x.index_select(1, i), with_ints(rand((3, 6)), ((4,), 6)))
add("gather", "index", lambda x, i: torch.gather(x, 1, i), with_ints(rand((3, 5)), ((3, 4), 5)))
add("take_along_dim", "index", lambda x, i: torch.take_along_dim(x, i, 0), with_ints(rand((4, 3)), ((2, 3), 4)))
add("scatter", "index", lambda x, s, i: x.scatter(1, i, s),
    lambda g: (torch.rand(3, 5, generator=g), torch.rand(3, 2, generator=g),
               torch.stack([torch.randperm(5, generator=g)[:2] for _ in range(3)])))
add("scatter_add", "index", lambda x, s, i: x.scatter_add(0, i, s),
    lambda g: (torch.rand(4, 3, generator=g), torch.rand(5, 3, generator=g), torch.randint(0, 4, (5, 3), generator=g)))
add("scatter_reduce_amax", "index", lambda x, s, i: x.scatter_reduce(0, i, s, "amax"),
    lambda g: (torch.rand(4, 3, generator=g), torch.rand(5, 3, generator=g), torch.randint(0, 4, (5, 3), generator=g)))
add("index_put", "index", lambda x, v, i: torch.index_put(x, (i,), v),
    lambda g: (torch.rand(6, 3, generator=g), torch.rand(2, 3, generator=g), torch.tensor([4, 1])))
add("index_put_accumulate", "index", lambda x, v, i: torch.index_put(x, (i,), v, accumulate=True),
    lambda g: (torch.rand(6, 3, generator=g), torch.rand(4, 3, generator=g), torch.tensor([4, 1, 4, 0])))
add("index_add", "index", lambda x, v, i: x.index_add(0, i, v, alpha=2.0),
    lambda g: (torch.rand(6, 3, generator=g), torch.rand(4, 3, generator=g), torch.tensor([4, 1, 4, 0])))
add("masked_fill", "index", lambda x: x.masked_fill(x > 0.2, -1.0), rand((4, 5)))
add("where_scalar", "index", lambda x, y: torch.where(x > y, x, 0.5), rand((4, 5), (5,)))
add("embedding", "index", lambda w, i: F.embedding(i, w), with_ints(rand((10, 4)), ((3, 2), 10)))
add("one_hot_matmul", "index", lambda x, i: F.one_hot(i, 5).to(x.dtype) @ x, with_ints(rand((5, 3)), ((4,), 5)))

# -- convolutions -----------------------------------------------------------------------------

for n, size, kw in ((1, (2, 4, 20), dict(stride=2, padding=1)), (1, (2, 4, 20), dict(dilation=3)),
                    (2, (2, 4, 11, 10), dict(stride=2, padding=2)), (2, (2, 4, 11, 10), dict(groups=2, dilation=2)),
                    (2, (1, 4, 9, 9), dict(groups=4, padding=1)), (2, (2, 4, 8, 8), dict(padding="same")),
                    (3, (1, 2, 6, 7, 8), dict(stride=(1, 2, 2), padding=1))):
    tag = f"{n}d_" + "_".join(f"{k}{v}" for k, v in kw.items()).replace(" ", "").replace("(", "").replace(")", "").replace(",", "x")
    cin = size[1]
    k = 3
    wshape = (8, cin // kw.get("groups", 1)) + (k,) * n
    add(f"conv{tag}", "conv", lambda x, w, b, n=n, kw=kw: getattr(F, f"conv{n}d")(x, w, b, **kw),
        rand(size, wshape, (8,)))
add("conv_transpose2d", "conv", lambda x, w: F.conv_transpose2d(x, w, stride=2, padding=1, output_padding=1),
    rand((2, 4, 5, 6), (4, 3, 3, 3)))
add("conv_transpose1d_groups", "conv", lambda x, w: F.conv_transpose1d(x, w, stride=3, groups=2),
    rand((2, 4, 7), (4, 2, 4)))


def _conv_backward(grad, x, w):
    return tuple(torch.ops.aten.convolution_backward(grad, x, w, [6], [1, 1], [1, 1], [1, 1], False, [0, 0], 1,
                                                     [True, True, True]))


add("convolution_backward", "conv", _conv_backward, rand((2, 6, 7, 7), (2, 3, 7, 7), (6, 3, 3, 3)))
for tag, (g, x, w), kw in (
        ("2d", ((2, 2, 5, 5), (2, 2, 6, 6), (2, 2, 2, 2)), dict(bias=None, stride=[1, 1], padding=[0, 0], dilation=[1, 1], groups=1)),
        ("2d_static", ((1, 4, 64, 64), (1, 320, 64, 64), (4, 320, 3, 3)),
         dict(bias=[4], stride=[1, 1], padding=[1, 1], dilation=[1, 1], groups=1)),
        ("3d_static", ((1, 4, 16, 16, 16), (1, 32, 16, 16, 16), (4, 32, 3, 1, 3)),
         dict(bias=[4], stride=[1, 1, 1], padding=[1, 0, 1], dilation=[1, 1, 1], groups=1)),
        ("2d_padded", ((2, 2, 8, 8), (2, 2, 6, 6), (2, 2, 3, 3)), dict(bias=None, stride=[1, 1], padding=[2, 2], dilation=[1, 1], groups=1)),
        ("2d_strided", ((1, 2, 4, 4), (1, 2, 8, 8), (2, 2, 3, 3)), dict(bias=[2], stride=[2, 2], padding=[1, 1], dilation=[1, 1], groups=1)),
        ("2d_dilated", ((1, 2, 6, 6), (1, 4, 8, 8), (2, 4, 3, 3)), dict(bias=[2], stride=[1, 1], padding=[1, 1], dilation=[2, 2], groups=1)),
        ("2d_strided_padded_dilated_grouped", ((2, 16, 32, 32), (2, 128, 64, 64), (16, 32, 2, 2)),
         dict(bias=[16], stride=[2, 2], padding=[2, 2], dilation=[4, 4], groups=4))):
    add(f"convolution_backward_{tag}", "conv",
        lambda go, x, w, kw=kw: tuple(torch.ops.aten.convolution_backward(
            go, x, w, kw["bias"], kw["stride"], kw["padding"], kw["dilation"], False, [0] * len(kw["stride"]),
            kw["groups"], [True, True, kw["bias"] is not None])), rand(g, x, w))
add("conv_bias_relu_pool", "conv", lambda x, w: F.max_pool2d(F.relu(F.conv2d(x, w, padding=1)), 2),
    rand((2, 3, 8, 8), (5, 3, 3, 3)))

# -- attention --------------------------------------------------------------------------------

add("sdpa_bool_mask", "attention", lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m),
    lambda g: (*rand((2, 3, 5, 8), (2, 3, 7, 8), (2, 3, 7, 8))(g), torch.rand(5, 7, generator=g) > 0.3))
add("sdpa_float_mask", "attention", lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m),
    rand((2, 3, 5, 8), (2, 3, 7, 8), (2, 3, 7, 8), (2, 1, 5, 7)))
add("sdpa_causal_scale", "attention",
    lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=0.3), rand((1, 2, 6, 4), (1, 2, 6, 4), (1, 2, 6, 4)))
add("attention_written_out_masked", "attention",
    lambda q, k, v, m: torch.softmax((q @ k.transpose(-1, -2)) / 8 ** 0.5 + m.masked_fill(m > 0.5, float("-inf")), -1) @ v,
    rand((2, 5, 8), (2, 6, 8), (2, 6, 8), (5, 6)))

# -- beside them: reductions, scans, normalisation, elementwise ---------------------------------

for name, fn, shapes, ref in (
        ("cumsum", lambda x: torch.cumsum(x, 1), ((3, 9),), "float64"),
        ("cumprod", lambda x: torch.cumprod(x, 0), ((5, 3),), "float64"),
        ("logcumsumexp", lambda x: torch.logcumsumexp(x, 1), ((3, 6),), "float64"),
        ("argmax_keepdim", lambda x: x.argmax(1, keepdim=True), ((4, 7),), "eager"),
        ("argmin", lambda x: x.argmin(), ((4, 7),), "eager"),
        ("max_dim", lambda x: tuple(x.max(0)), ((4, 7),), "float64"),
        ("topk", lambda x: tuple(torch.topk(x, 3, dim=1)), ((4, 9),), "float64"),
        ("sort", lambda x: tuple(torch.sort(x, 1, descending=True)), ((3, 6),), "float64"),
        ("logsumexp", lambda x: torch.logsumexp(x * 20, -1), ((4, 8),), "float64"),
        ("var_mean_correction0", lambda x: torch.var_mean(x, 1, correction=0), ((4, 10),), "float64"),
        ("std_unbiased", lambda x: x.std(0), ((6, 3),), "float64"),
        ("prod", lambda x: x.prod(1), ((3, 5),), "float64"),
        ("norm_layer", lambda x: F.layer_norm(x, (8,)), ((3, 8),), "float64"),
        ("norm_group", lambda x: F.group_norm(x, 2), ((2, 4, 3, 3),), "float64"),
        ("norm_instance", lambda x: F.instance_norm(x), ((2, 3, 5, 5),), "float64"),
        ("norm_rms", lambda x: x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6), ((4, 16),), "float64"),
        ("softmax_dim0", lambda x: torch.softmax(x, 0), ((5, 3),), "float64"),
        ("log_softmax", lambda x: F.log_softmax(x, -1), ((3, 5),), "float64"),
        ("gelu_tanh", lambda x: F.gelu(x, approximate="tanh"), ((4, 6),), "float64"),
        ("silu_mul", lambda x, y: F.silu(x) * y, ((4, 6), (4, 6)), "float64"),
        ("hardswish", F.hardswish, ((4, 6),), "float64"),
        ("mish", F.mish, ((4, 6),), "float64"),
        ("elu_selu", lambda x: F.elu(x) + F.selu(x), ((4, 6),), "float64"),
        ("clamp_tensor", lambda x, lo: torch.clamp(x, min=lo).clamp(max=0.5), ((4, 6), (6,)), "float64"),
        ("remainder_floor_divide", lambda x, y: (torch.remainder(x, y + 2), torch.floor_divide(x * 5, y + 2)),
         ((4, 5), (4, 5)), "float64"),
        ("round_sign_trunc", lambda x: torch.round(x * 4) + torch.sign(x) + torch.trunc(x * 3), ((5, 4),), "float64"),
        ("atan2_hypot", lambda x, y: torch.atan2(x, y) + torch.hypot(x, y), ((4, 5), (4, 5)), "float64"),
        ("erf_erfinv", lambda x: torch.erf(x) + torch.erfinv(x * 0.9), ((4, 5),), "float64"),
        ("pow_tensor", lambda x, y: torch.pow(x.abs() + 0.1, y), ((4, 5), (4, 5)), "float64"),
        ("lerp", lambda x, y: torch.lerp(x, y, 0.3), ((4, 5), (4, 5)), "float64"),
        ("compare_logical", lambda x, y: ((x > y) & (x < 0.5)) | ~(y > 0), ((4, 5), (4, 5)), "eager"),
        ("isclose_nan_to_num", lambda x: torch.nan_to_num(torch.log(x)), ((4, 5),), "float64"),
        ("flip_roll", lambda x: torch.roll(torch.flip(x, [1]), 2, 0), ((5, 4),), "float64"),
        ("repeat_tile", lambda x: x.repeat(2, 3) + torch.tile(x, (2, 3)), ((2, 3),), "float64"),
        ("permute_contiguous", lambda x: x.permute(2, 0, 1).contiguous() * 2, ((2, 3, 4),), "float64"),
        ("unfold", lambda x: x.unfold(1, 3, 2), ((2, 9),), "float64"),
        ("pixel_shuffle", lambda x: F.pixel_shuffle(x, 2), ((1, 8, 3, 3),), "float64"),
        ("interpolate_nearest", lambda x: F.interpolate(x, scale_factor=2, mode="nearest"), ((1, 2, 3, 4),), "float64"),
        ("interpolate_bilinear", lambda x: F.interpolate(x, size=(5, 7), mode="bilinear", align_corners=False),
         ((1, 2, 3, 4),), "float64"),
        ("pad_reflect", lambda x: F.pad(x, (2, 1, 1, 2), mode="reflect"), ((1, 2, 4, 5),), "float64"),
        ("pad_replicate", lambda x: F.pad(x, (2, 1), mode="replicate"), ((2, 3, 4),), "float64"),
        ("stack_chunk", lambda x: torch.stack(torch.chunk(x, 3, 1), 0).sum(0), ((4, 9),), "float64"),
        ("split_sizes", lambda x: tuple(t * i for i, t in enumerate(torch.split(x, [1, 3, 2], 1))), ((3, 6),), "float64"),
        ("log10", lambda x: torch.log10(x.abs() + 0.01), ((4, 5),), "float64"),
        ("int_arith", lambda x: (x * 3 + 7) // 2 - x % 3, ((4, 5),), "eager"),
        ("log10_int", lambda x: torch.log10(x.abs() + 1), ((4, 5),), "eager"),
        ("bitwise", lambda x: (x & 6) | (x ^ 3), ((4, 5),), "eager"),
        ("int_to_float_mean", lambda x: x.float().mean(), ((4, 5),), "eager"),
):
    unsupported = {"atan2_hypot": "torch-mlir cannot lower 'aten.hypot'",
                   "erf_erfinv": "torch-mlir cannot lower 'aten.erfinv'",
                   "bitwise": "torch-mlir cannot lower 'aten.bitwise_xor.Scalar'"}.get(name, "")
    if name in ("int_arith", "bitwise", "int_to_float_mean", "log10_int"):
        add(name, "misc", fn, lambda g, s=shapes: tuple(torch.randint(-20, 20, sh, generator=g) for sh in s),
            reference=ref, unsupported=unsupported)
    else:
        add(name, "misc", fn, rand(*shapes) if name != "isclose_nan_to_num" else rand(*shapes, low=0.0, high=1.0),
            reference=ref, unsupported=unsupported)

# float64 math written out for the CPU (braze.passes.float64_math): wide ranges, both signs
for name, fn, low, high in (("sin", torch.sin, -1e4, 1e4), ("cos", torch.cos, -1e4, 1e4), ("tan", torch.tan, -20.0, 20.0),
                            ("atan", torch.atan, -50.0, 50.0), ("asin", torch.asin, -1.0, 1.0),
                            ("acos", torch.acos, -1.0, 1.0), ("tanh", torch.tanh, -25.0, 25.0),
                            ("log2", torch.log2, 1e-3, 1e3), ("erf", torch.erf, -7.0, 7.0)):
    add(f"f64_{name}", "float64", fn, rand((64, 33), dtype=torch.float64, low=low, high=high))
add("f64_atan2", "float64", torch.atan2, rand((40, 30), (40, 30), dtype=torch.float64, low=-3.0, high=3.0))
add("f64_polar_sin_cos", "float64", lambda r, t: (r * torch.cos(t), r * torch.sin(t)),
    rand((16, 16), (16, 16), dtype=torch.float64, low=-7.0, high=7.0))
add("f64_rsub_pi", "float64", lambda x: 3.141592653589793 / 2 - x, rand((8, 8), dtype=torch.float64))
add("f64_linspace", "float64", lambda x: x + torch.linspace(0, 3.141592653589793, 16, dtype=torch.float64),
    rand((3, 16), dtype=torch.float64))

# NaN in the inputs: eager keeps it (clamp, maximum) or points at its first place (argmax)


def with_nan(floats: Inputs) -> Inputs:
    """`floats`' tensors with NaN at about one place in seven (and at index 0 of each)."""
    def make(g):
        out = []
        for t in floats(g):
            mask = torch.rand(t.shape, generator=g) < 0.15
            mask.view(-1)[0] = True
            out.append(torch.where(mask, torch.nan, t))
        return tuple(out)
    return make


for name, fn, n, ref in (
        ("clamp", lambda x: x.clamp(-0.5, 0.5), 1, "float64"),
        ("clamp_min", lambda x: torch.clamp_min(x, -0.25), 1, "float64"),
        ("hardtanh_relu6", lambda x: F.hardtanh(x) + F.relu6(x * 8), 1, "float64"),
        ("hardsigmoid", F.hardsigmoid, 1, "float64"),
        ("maximum_minimum", lambda x, y: (torch.maximum(x, y), torch.minimum(y, x)), 2, "float64"),
        ("clamp_tensor_bounds", lambda x, lo: torch.clamp(x, min=lo, max=lo + 1), 2, "float64"),
        ("argmax_argmin", lambda x: (x.argmax(1), x.argmin(0), x.argmax()), 1, "eager"),
        ("argmax_argmin_all_keepdim", lambda x: (x.argmax(keepdim=True), x.argmin(keepdim=True)), 1, "eager"),
        ("max_min_dim", lambda x: (*x.max(1), *x.min(0, keepdim=True)), 1, "float64"),
):
    add(f"nan_{name}", "nan", fn, with_nan(rand(*[(6, 9)] * n)), reference=ref)

_BIG = torch.tensor([9223372036854775806, -9223372036854775807, 1073741824, -3, 7, -7, 123456789012345678, 0])
_DIVISORS = torch.tensor([1073741824, 3, -5, 2, -2, 7, -1000000007, -3])
add("int64_floor_divide_large", "misc",
    lambda a, b: (torch.div(a, b, rounding_mode="floor"), a // 1073741824, torch.div(a, -7, rounding_mode="floor")),
    lambda g: (_BIG, _DIVISORS), reference="eager")
add("threshold_backward_int_grad", "misc", lambda g_, x: torch.ops.aten.threshold_backward(g_, x, 0.5),
    lambda g: (torch.randint(0, 20, (4, 5), generator=g), torch.rand(4, 5, generator=g)), reference="eager")
add("isfinite", "misc", lambda x: (torch.isfinite(x), torch.isfinite(x.long())),
    lambda g: (torch.where(torch.rand(5, 6, generator=g) < 0.3, torch.tensor([torch.inf, -torch.inf, torch.nan]).repeat(10)[:30]
                           .reshape(5, 6), torch.rand(5, 6, generator=g)),), reference="eager")
add("clamp_int_to_float", "misc", lambda x: torch.clamp(x, min=-2.5, max=2.5),
    lambda g: (torch.randint(-10, 10, (3, 5), generator=g),), reference="eager")
add("prims_view_of_squeeze_split_dim", "misc",
    lambda x, y: (torch.ops.prims.view_of(x) * 2, torch.ops.prims.squeeze(y, [0, 2]), torch.ops.prims.split_dim(x, 0, 3)),
    rand((6, 5), (1, 4, 1)))
_SCALAR_AND_INT = lambda g: (torch.randn((), generator=g) * 10, torch.randint(-10, 10, (), generator=g))
add("float_plus_int_scalars", "misc", lambda x, n: float(x) + int(n), _SCALAR_AND_INT, reference="eager")
add("float_int_scalar_comparisons", "misc",
    lambda x, n: (float(x) > int(n), float(x) >= int(n), float(x) * int(n), int(n) > float(x), int(n) - float(x),
                  float(x) < int(n), float(x) <= int(n), int(n) < float(x)),
    _SCALAR_AND_INT, reference="eager")
_FLOAT_COMPARISONS = lambda x, y: (float(x) > float(y), float(x) >= float(y), float(x) < float(y),
                                   float(x) <= float(y), float(x) == float(y), float(x) != float(y))
add("float_scalar_comparisons", "misc", _FLOAT_COMPARISONS,
    lambda g: (torch.randn((), generator=g), torch.randn((), generator=g)), reference="eager")
add("float_scalar_comparisons_nan", "nan", _FLOAT_COMPARISONS,
    lambda g: (torch.tensor(float("nan")), torch.randn((), generator=g)), reference="eager")
add("float_int_scalar_comparisons_nan", "nan",
    lambda x, n: (float(x) > int(n), float(x) >= int(n), int(n) < float(x), float(x) <= int(n), float(x) > 2,
                  3 <= float(x), float(x) == 0, float(x) != 1),
    lambda g: (torch.tensor(float("nan")), torch.randint(-10, 10, (), generator=g)), reference="eager")
add("avg_pool2d_unbatched", "pooling", lambda x: F.avg_pool2d(x, (6, 8), 2), rand((4, 20, 20)))
add("conv_tbc", "conv", lambda x, w, b: torch.conv_tbc(x, w, b, 1), rand((9, 4, 5), (3, 5, 6), (6,)))

BY_NAME = {m.name: m for m in MODULES}
assert len(BY_NAME) == len(MODULES), "two conformance modules share a name"


# -- running one ------------------------------------------------------------------------------


def _all_float64(result) -> bool:
    """Whether every floating result is float64 (whose floor is 1e-13, not float32's 1e-5)."""
    from torch.utils._pytree import tree_leaves

    floats = [t for t in tree_leaves(result) if isinstance(t, torch.Tensor) and t.dtype.is_floating_point]
    return bool(floats) and all(t.dtype == torch.float64 for t in floats)


def _clones(args):
    return tuple(a.clone() if isinstance(a, torch.Tensor) else a for a in args)


def check(module: Module, compile_fn, **options) -> list[str]:
    """Compile `module` with `compile_fn(model, *example, **options)` (braze.compile) and call it
    on fresh inputs of every size it lists; compare its results, and the inputs it updates in
    place, with the reference (see the module doc). Returns what went wrong, one line each
    (empty: it conforms). A BrazeError from the compile or a call propagates."""
    from braze.accuracy import max_error, reference

    model = module.model()
    dynamic = module.dynamic() if module.dynamic else None
    compiled = compile_fn(model, *module.example(), **({"dynamic_shapes": dynamic} if dynamic else {}), **options)
    problems = []
    for args in module.fresh():
        with torch.no_grad():
            eager_args = _clones(args)
            eager = model(*eager_args)
            if module.reference == "float64":
                wide_args = wide(_clones(args))
                expected = reference(eager, copy.deepcopy(model).double()(*wide_args))
                expected_args = reference(eager_args, wide_args)
                limit = 10 * max_error(eager, expected) + (1e-13 if _all_float64(eager) else 1e-5)
            else:
                expected, expected_args, limit = eager, eager_args, 1e-5
        braze_args = _clones(args)
        got = compiled(*braze_args)
        shapes = ", ".join("x".join(map(str, a.shape)) for a in args if isinstance(a, torch.Tensor))
        error = max_error(got, expected, like=eager)
        if not error <= limit:
            problems.append(f"{module.name} ({shapes}): result error {error:.3g} > {limit:.3g}")
        error = max_error(braze_args, expected_args, like=eager_args)
        if not error <= limit:
            problems.append(f"{module.name} ({shapes}): inputs after the call differ from eager's by {error:.3g}")
    return problems
