"""The CUDA launch plan read off IREE's HAL program (cross-compiled here; it runs on a GPU host,
bench/launch_check.py): every zoo model gets one, with IREE's own dispatch count, kernels whose
names, block sizes and PTX come from IREE's executable (generated kernels' PTX doing the
arithmetic its spec asks: braze.kernels.precision), and a plan that survives save/load."""

import json
import re

import pytest
import torch

import braze
from braze.runtime import artifact
from braze.runtime.cuda.plan import LaunchPlan
from braze.kernels.precision import artifact_kernels, summary
from braze.testing.zoo import CASES


@pytest.fixture(scope="module")
def compiled():
    out = {}
    for case in CASES:
        model, args, kwargs = case.build()
        out[case.name] = braze.compile(model, *args, example_kwargs=kwargs, device="cuda", target="sm_90")
    return out


@pytest.mark.parametrize("name", [c.name for c in CASES])
def test_every_zoo_model_has_a_plan_with_ireees_dispatches(compiled, name):
    module = compiled[name]
    plan = module.plan
    assert plan is not None, module.report.launch_plan
    assert sum(s.op == "dispatch" for s in plan.steps) == module.report.dispatch_count
    assert len(plan.outputs) == len(module.signature.outputs)
    assert plan.inputs == len(module.signature.program_inputs)
    for executable in plan.executables:
        for kernel in executable.kernels:
            ptx = executable.ptx[kernel.module]
            assert re.search(rf"\.entry {re.escape(kernel.name)}\(", ptx), kernel.name
            assert ".target sm_90" in ptx
            assert all(b >= 1 for b in kernel.block) and kernel.block[0] * kernel.block[1] * kernel.block[2] <= 1024
    for step in plan.steps:
        if step.op == "dispatch":
            assert all(g >= 1 for g in step.grid)
            kernel = plan.executables[step.executable].kernels[step.kernel]
            # the kernel's parameters in PTX: one pointer per binding, one .b32 per constant
            params = re.search(rf"\.entry {re.escape(kernel.name)}\((.*?)\)", plan.executables[step.executable]
                               .ptx[kernel.module], re.S).group(1)
            assert params.count(".param") == kernel.bindings + kernel.constants
    assert "kernels" in module.report.launch_plan
    for k in artifact_kernels(module.vmfb):  # each generated kernel's PTX does the arithmetic its spec asks
        assert k.found == k.expected, f"{k.spec.describe()}: {summary(k.ptx)}"


def test_the_plan_survives_save_and_load(compiled, tmp_path):
    module = compiled["transformer_encoder"]
    path = module.save(tmp_path / "m.braze")
    vmfb, meta, _, files = artifact.read(path)
    assert meta["runtime"] == "auto"
    plan = LaunchPlan.from_json(json.loads(files["cuda/plan.json"]), files, vmfb)
    assert plan.to_json() == module.plan.to_json()
    assert [bytes(c) for c in plan.constants] == [bytes(c) for c in module.plan.constants]
    assert plan.executables[0].ptx == module.plan.executables[0].ptx
    # The weights and PTX are not stored twice: the plan points into the vmfb for each piece
    # IREE's program holds, so the artifact is the vmfb and some metadata, not twice the vmfb.
    assert sum(len(c) for c in module.plan.constants) > 100_000  # the small layer's float32 weights
    assert not [name for name, data in files.items() if name != "cuda/plan.json" and len(data) > 4096]
    assert path.stat().st_size < len(vmfb) + len(json.dumps(meta)) + len(files["cuda/plan.json"]) + 16384


def test_a_plan_reads_its_bulk_as_files_or_vmfb_offsets():
    """Both forms of a constant or a module's PTX: a file of its own (version 1, and bytes the
    vmfb lacks) and an offset into the vmfb; an offset past its end is a damaged plan."""
    from braze.runtime.cuda.plan import Executable

    plan = LaunchPlan([Executable([".entry k() {}"], [])], [b"abcd", b"wxyz"], [], [], 0, 0)
    vmfb = b"...abcd...//.entry k() {}\x00"
    shared = plan.shared_with(vmfb)
    assert shared == {"cuda/constant0.bin": 3, "cuda/executable0.module0.ptx": 12}
    data, blobs = plan.to_json(shared), plan.blobs(shared)
    assert set(blobs) == {"cuda/constant1.bin"}
    back = LaunchPlan.from_json(json.loads(json.dumps(data)), blobs, vmfb)
    assert [bytes(c) for c in back.constants] == [b"abcd", b"wxyz"] and back.executables[0].ptx == [".entry k() {}"]
    old = plan.to_json()
    old = dict(old, version=1, constants=[4, 4], executables=[{"kernels": [], "modules": 1}])
    back = LaunchPlan.from_json(old, plan.blobs())
    assert [bytes(c) for c in back.constants] == [b"abcd", b"wxyz"] and back.executables[0].ptx == [".entry k() {}"]
    data["constants"][0]["vmfb_offset"] = len(vmfb) - 2
    with pytest.raises(ValueError, match="constant0.bin lies outside the program"):
        LaunchPlan.from_json(data, blobs, vmfb)


def test_weights_in_the_plan_are_the_models():
    """The constant buffers are the weights' bytes (a Linear's, found inside a constant; IREE
    inlines constants up to 256 bytes into the kernels, so this bias is larger)."""
    torch.manual_seed(0)
    model = torch.nn.Linear(64, 128).eval()
    module = braze.compile(model, torch.randn(16, 64), device="cuda", target="sm_90")
    blob = b"".join(module.plan.constants)
    assert model.weight.detach().numpy().tobytes()[:256] in blob
    assert model.bias.detach().numpy().tobytes() in blob


def test_weights_in_the_plan_are_views_of_the_program():
    """The plan keeps its weights as views of the same bytes in IREE's program, not copies (a
    0.5B decoder's compile held them three times: bench/NOTES.md §52)."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 64)).eval()
    module = braze.compile(model, torch.randn(8, 256), device="cuda", target="sm_90", cache=False)
    views = [c for c in module.plan.constants if isinstance(c, memoryview)]
    assert views and all(v.obj is module.vmfb for v in views)
    blob = b"".join(module.plan.constants)
    for layer in (model[0], model[2]):
        assert layer.weight.detach().numpy().tobytes() in blob


def test_lazy_constants_slice_read_and_locate_as_bytes(monkeypatch):
    """The plan's constants before IREE's program exists (pieces of blobs read a range at a
    time) slice and read as the same bytes would, and are found in a program where their first
    bytes also occur elsewhere."""
    import random

    from braze.compiler import cuda_plan

    class Blobs:  # the reader's interface over plain bytes
        def __init__(self, blobs):
            self.blobs = blobs

        def read(self, name, start, length):
            return self.blobs[name][start:start + length]

    rng = random.Random(0)
    blobs = {n: rng.randbytes(rng.randrange(30000, 40000)) for n in "abc"}  # more than the 64 KiB head
    reader = Blobs(blobs)
    lazy = cuda_plan._Lazy.join([cuda_plan._Lazy([(reader, "a", 0, len(blobs["a"]))]), b"\x00" * 7,
                                 cuda_plan._Lazy([(reader, "b", 3, len(blobs["b"]) - 3)]),
                                 cuda_plan._Lazy([(reader, "c", 0, len(blobs["c"]))])])
    plain = blobs["a"] + b"\x00" * 7 + blobs["b"][3:] + blobs["c"]
    assert len(lazy) == len(plain) and lazy.read() == plain
    for _ in range(200):
        i, j = sorted(rng.randrange(len(plain) + 1) for _ in range(2))
        assert lazy[i:j].read() == plain[i:j] and len(lazy[i:j]) == j - i
    monkeypatch.setattr(cuda_plan, "_CHUNK", 1000)  # several chunks compared
    far = len(plain) - 5  # the head, and a difference far past it (in the last chunk compared)
    decoy = plain[:far] + bytes([plain[far] ^ 1]) + plain[far + 1:]
    program = rng.randbytes(100) + plain[:len(plain) // 2] + b"\x01" + rng.randbytes(50) + plain + rng.randbytes(9)
    assert cuda_plan._locate(program, lazy) == program.index(plain)
    assert cuda_plan._locate(decoy + rng.randbytes(10), lazy) == -1


def test_runtime_iree_compiles_no_plan_and_launch_without_one_fails():
    module = braze.compile(torch.nn.ReLU(), torch.randn(8), device="cuda", target="sm_90", runtime="iree")
    assert module.plan is None and module.report.launch_plan == ""
    with pytest.raises(braze.CompileError, match="no CUDA launch plan"):
        braze.compile(torch.nn.ReLU(), torch.randn(8), device="cuda", target="sm_90", runtime="launch",
                      output_storage=False)
    with pytest.raises(braze.InputError, match="runtime="):
        braze.compile(torch.nn.ReLU(), torch.randn(8), runtime="fast")


def test_bf16_weights_in_hex_form_make_a_plan():
    """IREE prints a bf16 weight it transposed at compile time as a hex `dense<"0x...">` inside
    a composite (with a `tensor<1x16x96xbf16>` type a type parser once misread): the plan has
    the transposed weight's exact bytes instead of falling back."""
    torch.manual_seed(0)

    class Einsum(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.randn(96, 16))

        def forward(self, x):
            return torch.einsum("nkm,fk->nfm", x, self.w)

    model = Einsum().eval().bfloat16()
    module = braze.compile(model, torch.randn(2, 16, 256).bfloat16(), device="cuda", target="sm_90", fusion=False)
    assert module.plan is not None, module.report.launch_plan
    blob = b"".join(bytes(c) for c in module.plan.constants)
    assert model.w.detach().t().contiguous().view(torch.int16).numpy().tobytes() in blob


@pytest.mark.parametrize("text,expected", [
    ('dense<"0x803F0040"> : tensor<2xbf16>', bytes.fromhex("803F0040")),
    ('dense<"0x803F"> : tensor<3xbf16>', bytes.fromhex("803F") * 3),  # a splat in hex
    ("dense<[1.0, -2.5]> : tensor<2xbf16>", torch.tensor([1.0, -2.5]).bfloat16().view(torch.int16).numpy().tobytes()),
    ("dense<0.5> : tensor<2x2xbf16>", torch.full((4,), 0.5).bfloat16().view(torch.int16).numpy().tobytes()),
    ("dense<[1.0, 0.333251953]> : tensor<2xf16>", torch.tensor([1.0, 0.333251953]).half().view(torch.int16).numpy().tobytes()),
    ("dense<[1, -2]> : tensor<2xi32>", b"\x01\x00\x00\x00\xfe\xff\xff\xff"),
])
def test_constant_literals_to_bytes(text, expected):
    from types import SimpleNamespace

    from braze.compiler._iree_compiler import iree_ir
    from braze.compiler.cuda_plan import _Interpreter

    with iree_ir.Context():
        assert _Interpreter._element_bytes(SimpleNamespace(resources={}), text) == expected


# -- dynamic builds: the plan's sizes as arithmetic on the inputs' dimensions ----------------

@pytest.mark.parametrize("op,args,expected", [
    ("divs", [-7, 2], -3), ("divs", [7, -2], -3), ("divs", [7, 2], 3), ("ceildivs", [7, 2], 4),
    ("ceildivs", [-7, 2], -3), ("ceildivs", [8, 2], 4), ("ceildivu", [1, 128], 1), ("rems", [-7, 2], -1),
    ("cmp", [2, -1, 1], 1), ("cmp", [6, -1, 1], 0),  # slt; ult: -1 is the largest unsigned value
    ("trunc", [(1 << 32) + 5, 32], 5), ("shru", [(3 << 32) + 1, 32], 3), ("select", [0, 4, 9], 9),
    ("min", [2147483647, 24 * 3], 72),
])
def test_plan_arithmetic_follows_arith_semantics(op, args, expected):
    from braze.runtime.cuda.plan import apply

    assert apply(op, args) == expected


class _Tanh(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(48, 80)

    def forward(self, x, y):
        return torch.tanh(self.lin(x)) + y.sum(), torch.cat([x, x], 0)


def test_a_dynamic_build_has_a_plan_whose_sizes_follow_each_call():
    """The dynamic CUDA build's plan keeps IREE's size arithmetic: evaluated at any batch, its
    results have eager's shapes and byte counts, every binding lies inside its buffer, and the
    plan survives its JSON form (so a saved dynamic build runs on the launcher too)."""
    torch.manual_seed(0)
    model = _Tanh().eval()
    x, y = torch.randn(5, 48), torch.randn(3)
    batch = torch.export.Dim("batch", min=1, max=512)
    module = braze.compile(model, x, y, device="cuda", target="sm_90", cache=False,
                           dynamic_shapes=({0: batch}, None), specialize="none").dynamic
    plan = module.plan
    assert plan is not None and plan.symbolic, module.report.launch_plan
    assert module.abi["output_storage"] and "expressions" in module.report.launch_plan
    again = LaunchPlan.from_json(json.loads(json.dumps(plan.to_json())), plan.blobs())
    for b in (1, 7, 64, 512):
        concrete = plan.concrete([[b, 48], [3]])
        assert not concrete.symbolic and again.concrete([[b, 48], [3]]).to_json() == concrete.to_json()
        want = model(torch.randn(b, 48), y)
        assert [o.shape for o in concrete.outputs] == [list(w.shape) for w in want]
        assert [o.nbytes for o in concrete.outputs] == [w.numel() * 4 for w in want]
        sizes = {"input": [b * 48 * 4, 12], "output": [o.nbytes for o in concrete.outputs],
                 "transient": [concrete.transient_bytes], "constant": [len(c) for c in concrete.constants]}
        dispatches = [s for s in concrete.steps if s.op == "dispatch"]
        assert dispatches and all(min(s.grid) >= 1 for s in dispatches)
        assert all(0 <= c < 1 << 32 for s in dispatches for c in s.constants)
        for s in concrete.steps:
            ranges = [(r, o, n) for r, o, n in s.bindings] if s.op == "dispatch" else \
                [(s.target, s.target_offset, s.length)] + ([(s.source, s.source_offset, s.length)] if s.source else [])
            for ref, offset, length in ranges:
                assert 0 <= offset and offset + length <= sizes[ref.kind][ref.index], (s, ref)
    grids = [[s.grid for s in plan.concrete([[b, 48], [3]]).steps if s.op == "dispatch"] for b in (64, 512)]
    assert grids[0] != grids[1]  # the grids follow the batch
