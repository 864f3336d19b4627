"""braze under hostile and unusual use: no silent wrong answer, no user data changed or lost,
no crash. Every result is compared with eager PyTorch on random data; every refusal must be a
BrazeError naming the problem; no file the user owns changes unless they asked."""

import errno
import json
import multiprocessing
import os
import stat
import threading
import warnings
import zipfile

import numpy as np

import re

import pytest
import torch
import torch.nn.functional as F

import braze
from braze import fileutil
from braze.compiler import frontend
from braze.runtime import artifact


def M(fn, name=None):
    class Model(torch.nn.Module):
        def forward(self, *args):
            return fn(*args)

    Model.__name__ = name or fn.__name__
    return Model().eval()


# -- mutation: the model's buffers and the caller's tensors, as eager ---------------------------


class Counter(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("n", torch.zeros(1))

    def forward(self, x):
        self.n.add_(1)
        return x + self.n


def test_a_buffer_the_model_updates_is_updated_call_after_call():
    model, reference = Counter(), Counter()
    compiled = braze.compile(model, torch.randn(4))
    x = torch.randn(4)
    for _ in range(3):
        torch.testing.assert_close(compiled(x), reference(x))
    assert model.n.item() == reference.n.item() == 3
    model.n.fill_(10.0)  # the compiled module reads the model's buffer, as eager does
    torch.testing.assert_close(compiled(x), x + 11)


def test_batchnorm_in_train_mode_uses_batch_statistics_and_updates_running_ones():
    torch.manual_seed(0)
    model = torch.nn.BatchNorm1d(4).train()
    reference = torch.nn.BatchNorm1d(4).train()
    reference.load_state_dict(model.state_dict())
    with pytest.warns(braze.BrazeWarning, match="training mode"):
        compiled = braze.compile(model, torch.randn(8, 4))
    for _ in range(2):
        x = torch.randn(8, 4) * 3 + 1
        got = compiled(x)
        with torch.no_grad():
            expected = reference(x)
        assert got.shape == (8, 4)
        torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(model.running_mean, reference.running_mean)
    torch.testing.assert_close(model.running_var, reference.running_var)
    assert model.num_batches_tracked.item() == reference.num_batches_tracked.item() == 2


def test_an_input_the_model_updates_in_place_is_updated_in_the_callers_tensor():
    model = M(lambda x: (x.add_(1), x * 2)[1], "AddInPlace")
    compiled = braze.compile(model, torch.randn(4))
    x = torch.randn(4)
    expected_x = x + 1
    torch.testing.assert_close(compiled(x), expected_x * 2)
    torch.testing.assert_close(x, expected_x)
    xn = np.zeros(4, np.float32)
    np.testing.assert_allclose(compiled(xn), np.full(4, 2.0))
    np.testing.assert_allclose(xn, np.ones(4))


class CountAndAdd(torch.nn.Module):
    """Updates a buffer and its input: torch.export lists the buffer's write-back first."""

    def __init__(self):
        super().__init__()
        self.register_buffer("n", torch.zeros(1))

    def forward(self, x):
        self.n.add_(1)
        x.add_(1)
        return x * 2


@pytest.mark.parametrize("unwritable", ["read-only-numpy", "expanded-view"])
def test_an_input_that_cannot_be_updated_is_refused_before_anything_changes(unwritable):
    model = CountAndAdd().eval()
    compiled = braze.compile(model, torch.randn(4))
    if unwritable == "read-only-numpy":
        x = np.zeros(4, np.float32)
        x.setflags(write=False)
    else:
        x = torch.zeros(1).expand(4)
    with pytest.raises(braze.InputError, match=r"args\[0\]: the model updates it in place, but it cannot be written"):
        compiled(x)
    assert model.n.item() == 0, "the model's buffer was updated by a call that failed"
    assert np.asarray(x).tolist() == [0.0] * 4
    ok = torch.zeros(4)
    torch.testing.assert_close(compiled(ok), torch.full((4,), 2.0))
    assert model.n.item() == 1 and ok.tolist() == [1.0] * 4


class MutatesParameter(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.zeros(4))

    def forward(self, x):
        with torch.no_grad():
            self.w.add_(1)
        return x + self.w


def test_a_model_that_updates_a_parameter_is_refused():
    model = MutatesParameter().eval()
    with pytest.raises(braze.UnsupportedOpError, match=r"MutatesParameter produces PARAMETER_MUTATION outputs \(w\); "
                       "braze compiles inference.*register_buffer"):
        braze.compile(model, torch.randn(4))
    assert model.w.tolist() == [0.0] * 4


def test_a_joint_forward_backward_graph_is_refused():
    """torch.export's training IR (loss and parameter gradients as outputs) is not inference."""
    from torch.export.experimental import _export_forward_backward

    class Loss(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(4, 1)

        def forward(self, x):
            return (self.lin(x).sum(),)

    model = Loss()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        joint = _export_forward_backward(torch.export.export(model, (torch.randn(2, 4),)))
    with pytest.raises(braze.UnsupportedOpError,
                       match=r"Loss produces GRADIENT_TO_PARAMETER, LOSS_OUTPUT outputs \(sum_1\); braze compiles inference"):
        frontend.prepare_state(joint, model)


def test_saved_state_is_loaded_and_updated(tmp_path):
    model = Counter()
    compiled = braze.compile(model, torch.randn(4))
    compiled(torch.zeros(4))
    compiled.save(tmp_path / "counter.braze")
    loaded = braze.load(tmp_path / "counter.braze")
    torch.testing.assert_close(loaded(torch.zeros(4)), torch.full((4,), 2.0))
    torch.testing.assert_close(loaded(torch.zeros(4)), torch.full((4,), 3.0))
    assert model.n.item() == 1  # the loaded module owns its copy


# -- memory the caller owns is never shared or written ------------------------------------------


@pytest.mark.parametrize("output_storage", [False, True])
@pytest.mark.parametrize("fn", [lambda x, y: x.clone(), lambda x, y: x * 1,
                                lambda x, y: torch.slice_scatter(x, y, dim=1, start=0, end=2),
                                lambda x, y: x.clone().index_copy_(1, torch.tensor([0, 1]), y)],
                         ids=["clone", "times-one", "slice-scatter", "index-copy"])
def test_outputs_never_alias_inputs_and_inputs_are_never_written(fn, output_storage):
    x, y = torch.randn(4, 5), torch.randn(4, 2)
    compiled = braze.compile(M(fn), x, y, output_storage=output_storage)
    x2, y2 = torch.randn(4, 5), torch.randn(4, 2)
    x_before = x2.clone()
    out = compiled(x2, y2)
    torch.testing.assert_close(out, fn(x_before.clone(), y2))
    assert torch.equal(x2, x_before), "the caller's input changed"
    out.zero_()
    assert torch.equal(x2, x_before), "the output shares memory with the input"


def test_a_returned_weight_is_a_copy():
    class Weight(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.randn(3, 3))

        def forward(self, x):
            return self.w * 1, x + 1

    model = Weight().eval()
    compiled = braze.compile(model, torch.randn(3))
    w, _ = compiled(torch.randn(3))
    w.zero_()
    w2, _ = compiled(torch.randn(3))
    torch.testing.assert_close(w2, model.w.detach())


def test_an_input_changed_in_place_to_another_layout_is_imported_again():
    model = M(lambda a, b: a @ b, "MatMul")
    a, b = torch.randn(16, 16), torch.randn(16, 16)
    compiled = braze.compile(model, a, b)
    torch.testing.assert_close(compiled(a, b), a @ b)
    a.t_()  # same tensor, same memory, new strides
    torch.testing.assert_close(compiled(a, b), a @ b, rtol=1e-5, atol=1e-5)
    a.t_()
    a.resize_(16, 16)  # unchanged view: still correct
    torch.testing.assert_close(compiled(a, b), a @ b)


def test_uint8_results_are_uint8():
    model = M(lambda x: x + 200, "AddU8")
    x = torch.randint(0, 50, (100, 50), dtype=torch.uint8)
    compiled = braze.compile(model, x)
    got = compiled(x)
    assert got.dtype == torch.uint8 and torch.equal(got, x + 200)
    np.testing.assert_array_equal(compiled(x.numpy()), (x + 200).numpy())


# -- files: created whole, never replaced unless asked, never anything but a regular file --------


def _write_many(args):
    root, worker = args
    wins = []
    for i in range(40):
        try:
            artifact.write(os.path.join(root, f"m{i}.braze"), f"vmfb {worker}".encode(), {"who": worker})
            wins.append(i)
        except FileExistsError:
            pass
    return wins


def test_concurrent_saves_never_both_create_the_same_file(tmp_path):
    with multiprocessing.get_context("fork").Pool(4) as pool:
        results = pool.map(_write_many, [(str(tmp_path), w) for w in range(4)])
    wins = sorted(i for r in results for i in r)
    assert wins == list(range(40)), "each path created exactly once"
    for i in range(40):
        with zipfile.ZipFile(tmp_path / f"m{i}.braze") as z:
            assert z.read("module.vmfb").startswith(b"vmfb ")
    assert not [p for p in os.listdir(tmp_path) if not p.endswith(".braze")], "temporary files left behind"


@pytest.fixture(scope="module")
def add_one():
    return braze.compile(M(lambda x: x + 1, "AddOne"), torch.randn(4))


def test_save_refuses_what_is_not_a_regular_file(add_one, tmp_path):
    target = tmp_path / "target.bin"
    target.write_bytes(b"keep me")
    link = tmp_path / "link.braze"
    link.symlink_to(target)
    dangling = tmp_path / "dangling.braze"
    dangling.symlink_to(tmp_path / "nowhere")
    fifo = tmp_path / "fifo.braze"
    os.mkfifo(fifo)
    for path, match in ((link, "symbolic link"), (dangling, "already exists"), (fifo, "not a regular file")):
        with pytest.raises(braze.ArtifactError, match=match):
            add_one.save(path, overwrite=path != dangling)
    assert target.read_bytes() == b"keep me" and os.path.islink(link) and stat.S_ISFIFO(os.lstat(fifo).st_mode)
    with pytest.raises(braze.ArtifactExistsError, match="is a directory"):
        add_one.save(tmp_path, overwrite=True)
    (tmp_path / "file").write_text("x")
    with pytest.raises(braze.ArtifactError, match="cannot create its folder"):
        add_one.save(tmp_path / "file" / "m.braze")
    existing = tmp_path / "existing.braze"
    existing.write_bytes(b"mine\x00\xff")
    with pytest.raises(FileExistsError) as refused:  # the standard class, and braze's
        add_one.save(existing)
    assert isinstance(refused.value, braze.ArtifactExistsError) and isinstance(refused.value, braze.BrazeError)
    assert existing.read_bytes() == b"mine\x00\xff"
    add_one.save(existing, overwrite=True)
    assert braze.load(existing)(torch.zeros(4)).tolist() == [1.0] * 4


def _no_write_access(tmp_path, monkeypatch):
    """tmp_path/ro, where creating a file fails: read-only by its mode, or (as root, whom modes do
    not stop) as on a read-only filesystem, the EROFS a real one gives."""
    folder = tmp_path / "ro"
    folder.mkdir()
    (folder / "keep.txt").write_bytes(b"keep")
    if os.geteuid() == 0:
        def mkstemp(*args, **kwargs):
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), os.path.join(kwargs["dir"], ".m.braze.x.tmp"))

        monkeypatch.setattr(fileutil.tempfile, "mkstemp", mkstemp)
    else:
        folder.chmod(0o555)
    return folder


def test_save_where_nothing_can_be_written_is_an_artifact_error(add_one, tmp_path, monkeypatch):
    folder = _no_write_access(tmp_path, monkeypatch)
    try:
        with pytest.raises(braze.ArtifactError, match="cannot save to .*m.braze.*choose a path in a writable folder"):
            add_one.save(folder / "m.braze")
        assert sorted(os.listdir(folder)) == ["keep.txt"] and (folder / "keep.txt").read_bytes() == b"keep"
    finally:
        folder.chmod(0o755)


@pytest.mark.parametrize("edit", [
    lambda m: m["signature"].update(inputs=[]),
    lambda m: m["signature"]["inputs"][0].update(shape=[5]),
    lambda m: m["signature"]["inputs"][0].update(dtype="float128"),
    lambda m: m.update(target={"device": "tpu", "arch": "x"}),
    lambda m: m["signature"].update(outputs="nope"),
    lambda m: m["abi"].update(output_storage=True),
    lambda m: m.pop("signature"),
    lambda m: m["signature"].update(mutations=[{"kind": "buffer", "index": 3}]),
], ids=["no-inputs", "shape", "dtype", "device", "outputs-type", "abi", "no-signature", "mutation"])
def test_hand_edited_metadata_fails_at_load_with_an_artifact_error(add_one, tmp_path, edit):
    path = tmp_path / "m.braze"
    add_one.save(path)
    with zipfile.ZipFile(path) as z:
        meta, vmfb = json.loads(z.read("braze.json")), z.read("module.vmfb")
    edit(meta)
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("braze.json", json.dumps(meta))
        z.writestr("module.vmfb", vmfb)
    with pytest.raises(braze.ArtifactError):
        braze.load(path)


# -- bad arguments and unusual models: clear errors, right answers -------------------------------


def test_bad_compile_arguments(add_one):
    with pytest.raises(braze.InputError, match="give a list of iree-compile flags"):
        braze.compile(M(lambda x: x + 1), torch.randn(4), iree_flags="--iree-opt-level=O2")
    with pytest.raises(braze.DeviceError, match="not a CPU IREE's LLVM knows"):
        braze.compile(M(lambda x: x + 1), torch.randn(4), target="nosuchcpu")
    with pytest.raises(braze.InputError, match="sparse_coo"):
        add_one(torch.randn(4).to_sparse())


def test_inputs_that_require_grad_warn_once(add_one):
    x = torch.randn(4, requires_grad=True)
    with pytest.warns(braze.BrazeWarning, match="requires grad"):
        out = add_one(x)
    assert not out.requires_grad
    torch.testing.assert_close(out, x.detach() + 1)


def test_inputs_that_require_grad_under_no_grad_do_not_warn(add_one):
    x = torch.randn(4, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error", braze.BrazeWarning)
        with torch.no_grad():
            torch.testing.assert_close(add_one(x), x.detach() + 1)


@pytest.mark.parametrize("dtype", [torch.int8, torch.uint8, torch.int16])
@pytest.mark.parametrize("fn", [lambda x, y: x // 3, lambda x, y: x % 3, lambda x, y: x // y,
                                lambda x, y: torch.remainder(x, y), lambda x, y: torch.fmod(x, y),
                                lambda x, y: torch.div(x, 3, rounding_mode="trunc")],
                         ids=["floordiv", "mod", "floordiv-tensor", "remainder", "fmod", "trunc"])
def test_narrow_integer_division_is_exact(fn, dtype):
    """torch-mlir's lowering segfaulted or failed on these in 8 bits; braze computes them in int32."""
    low = 0 if dtype == torch.uint8 else -100
    gen = torch.Generator().manual_seed(1)
    x = torch.randint(low, 100, (64,), dtype=dtype, generator=gen)
    y = torch.randint(1, 7, (64,), dtype=dtype, generator=gen)
    if dtype != torch.uint8:
        y = y * (torch.randint(0, 2, (64,), dtype=dtype, generator=gen) * 2 - 1)
    compiled = braze.compile(M(fn, "Div"), x, y)
    assert torch.equal(compiled(x, y), fn(x, y))


def test_compiles_in_threads_at_once():
    results, errors = {}, []

    def work(i):
        try:
            model = M(lambda x: torch.tanh(x) * (i + 1), f"T{i}")
            compiled = braze.compile(model, torch.randn(8))
            x = torch.randn(8)
            results[i] = torch.allclose(compiled(x), torch.tanh(x) * (i + 1), atol=1e-6)
        except Exception as e:  # the test reports every thread's failure
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and results == {0: True, 1: True, 2: True}


@pytest.mark.parametrize("case", [
    ("float64", lambda x: torch.relu(x) * 2 + x.sum(), (torch.randn(4, 3, dtype=torch.float64),)),
    ("complex-in", lambda x, y: torch.real(x) + torch.imag(y),
     (torch.randn(4, dtype=torch.complex64), torch.randn(4, dtype=torch.complex128))),
    ("complex-out", lambda x: torch.view_as_complex(x), (torch.randn(3, 2),)),
    ("complex-in-out", lambda x: torch.view_as_complex(torch.view_as_real(x).flip(-1)), (torch.randn(3, dtype=torch.complex64),)),
    ("item", lambda x: x * x.max().item(), (torch.randn(5),)),
    ("float-of-tensor", lambda x: x + float(x.sum()), (torch.randn(5),)),
    ("int-of-tensor-arg", lambda x, i: x * int(i), (torch.randn(5), torch.tensor(3))),
    ("number-out", lambda x: (x * 2, x.sum().item(), 7, x.shape[0]), (torch.randn(5),)),
    ("zero-element", lambda x: (x[:, :0] * 2, x.new_zeros(0, 3) + 1), (torch.randn(4, 3),)),
    ("zero-element-input", lambda x, y: (x * 2, y.sum(0)), (torch.randn(0, 3), torch.randn(0, 4))),
    ("adaptive-max-pool", lambda x: F.adaptive_max_pool2d(x, (4, 4), return_indices=True), (torch.randn(1, 2, 8, 8),)),
], ids=lambda c: c[0])
def test_models_the_raw_toolchain_runs_run_and_match_eager(case):
    _, fn, args = case
    compiled = braze.compile(M(fn), *args)
    fresh = [torch.randn_like(a) if a.dtype.is_floating_point or a.dtype.is_complex else a for a in args]
    got, expected = compiled(*fresh), fn(*fresh)
    flat_got = got if isinstance(got, tuple) else (got,)
    flat_expected = expected if isinstance(expected, tuple) else (expected,)
    for g, e in zip(flat_got, flat_expected, strict=True):
        if isinstance(e, torch.Tensor):
            assert g.dtype == e.dtype and g.shape == e.shape
            torch.testing.assert_close(g, e, rtol=1e-5, atol=1e-6)
        else:
            assert type(g) is type(e) and g == pytest.approx(e, rel=1e-5, abs=1e-6)  # as the tensors: a float32 sum


def test_the_same_tensor_passed_twice_compiles_two_inputs():
    """torch.export traces f(x, x) as a program of its second argument only; braze gives it
    distinct example copies, so later calls with two tensors use both."""
    model = M(lambda a, b: a - 2 * b, "Sub")
    x = torch.randn(4)
    for examples in ((x, x), (x, x.view(4))):
        compiled = braze.compile(model, *examples)
        a, b = torch.randn(4), torch.randn(4)
        torch.testing.assert_close(compiled(a, b), a - 2 * b)


def test_a_check_that_always_fails_is_a_compile_error(monkeypatch):
    """torch-mlir's decomposition of adaptive max pooling (which braze keeps it from using, see
    frontend.BACKEND_LEGAL) lowers a size the output does not divide to a check that always fails."""
    from braze.compiler import frontend

    monkeypatch.setattr(frontend, "TORCH_TO_BACKEND", frontend._torch_to_backend(()))
    with pytest.raises(braze.UnsupportedOpError, match="fails on every call"):
        braze.compile(M(lambda x: F.adaptive_max_pool2d(x, (3, 3))), torch.randn(1, 2, 8, 8), cache=False)


def test_float64_math_the_cpu_cannot_compile_names_the_function():
    """IREE's CPU runtime has no float64 fmod (remainder's lowering); braze writes out sin & co
    (fusion-expand-f64-math), not this one."""
    with pytest.raises(braze.CompileError, match="undefined symbol: fmod"):
        braze.compile(M(lambda x: torch.remainder(x, 1.5)), torch.randn(4, dtype=torch.float64))


def test_non_persistent_buffers_are_constants():
    class Rotary(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("table", torch.randn(8), persistent=False)

        def forward(self, x):
            return x * self.table

    model = Rotary().eval()
    x = torch.randn(8)
    torch.testing.assert_close(braze.compile(model, x)(x), model(x))


def test_no_tensor_inputs_means_torch_outputs_everywhere(tmp_path):
    compiled = braze.compile(M(lambda: torch.arange(4.0) * 2, "Const"))
    assert isinstance(compiled(), torch.Tensor)
    compiled.save(tmp_path / "c.braze")
    assert isinstance(braze.load(tmp_path / "c.braze")(), torch.Tensor)
    out = braze.load(tmp_path / "c.braze", outputs="numpy")()
    assert isinstance(out, np.ndarray) and out.tolist() == [0.0, 2.0, 4.0, 6.0]


def test_a_failure_inside_iree_s_runtime_is_a_braze_error(monkeypatch):
    """A program that fails inside iree.runtime (here: a determinant compiled with the transient
    storage braze now withholds from loops that carry tensors, passes/abi.tensor_loops) raises
    ExecutionError (a BrazeError and a RuntimeError) with IREE's status line, not a raw ValueError."""
    from braze.passes import abi

    monkeypatch.setattr(abi, "tensor_loops", lambda module_op: [])
    compiled = braze.compile(M(torch.linalg.det), torch.randn(4, 4), cache=False)
    with pytest.raises(braze.ExecutionError, match="INVALID_ARGUMENT; source and target ranges overlap") as err:
        compiled(torch.randn(4, 4))
    assert isinstance(err.value, RuntimeError) and "bug in braze or IREE" in str(err.value)


def test_loops_that_carry_tensors_compile_without_transient_storage():
    x = torch.randn(3, 5, 5, dtype=torch.float64)
    compiled = braze.compile(M(torch.linalg.det), x.float(), cache=False)
    assert compiled.abi["transient_storage"] is False
    assert "a loop carries tensors" in compiled.report.extra["transient_storage"]
    assert re.search(r"transient storage +off: a loop carries tensors", str(compiled.report))
    assert (compiled(x.float()).double() - torch.linalg.det(x)).abs().max() < 1e-4


def test_a_compile_that_fails_with_channels_last_compiles_without_it():
    """IREE 3.13's channels-last preprocessing produces invalid IR for this convolution backward
    (the 320 -> 4 channel weight gradient): braze drops its own flag, compiles with IREE's
    default layout, and says so in the report."""
    def backward(go, x, w):
        return tuple(torch.ops.aten.convolution_backward(go, x, w, [4], [1, 1], [1, 1], [1, 1], False, [0, 0], 1,
                                                         [True, True, True]))

    args = (torch.randn(1, 4, 64, 64), torch.randn(1, 320, 64, 64), torch.randn(4, 320, 3, 3))
    compiled = braze.compile(M(backward), *args, pipeline="fusion-cpu-pipeline{direct-pixels=784 channels-last=on}",
                             cache=False)
    assert "left NCHW (IREE failed with channels-last" in compiled.report.cpu_codegen
    fresh = tuple(torch.randn_like(a) for a in args)
    got, want = compiled(*fresh), backward(*(a.double() for a in fresh))
    for g, w in zip(got, want):
        assert (g.double() - w).abs().max() <= 1e-4 * max(1.0, w.abs().max().item())


def test_a_lowering_that_changes_an_outputs_dtype_is_braze_bug_not_a_wrong_answer(monkeypatch):
    """frontend._check_result_types: the lowered program's result element types must be the
    dtypes torch computes. Simulated by telling the check torch computes int64 where the model
    returns float32 (what torch-mlir's threshold_backward did for an int64 gradient and a float32
    input, before braze decomposed it: braze returned int64, eager float32)."""
    real = frontend.signature_from_export

    def lying(*args, **kwargs):
        sig = real(*args, **kwargs)
        sig.outputs[0] = type(sig.outputs[0])(sig.outputs[0].shape, "int64")
        return sig

    monkeypatch.setattr(frontend, "signature_from_export", lying)
    with pytest.raises(braze.InternalError, match=r"output 0 \(computed by aten.mul.*lowers to element type f32, "
                                                  r"but torch computes int64.*bug in braze"):
        braze.compile(M(lambda x: x * 2), torch.randn(3), cache=False)


def test_threshold_backward_of_an_integer_gradient_is_float_as_in_eager():
    g, x = torch.randint(0, 20, (4, 5)), torch.rand(4, 5)
    compiled = braze.compile(M(lambda g, x: torch.ops.aten.threshold_backward(g, x, 0.5)), g, x, cache=False)
    got, want = compiled(g, x), torch.ops.aten.threshold_backward(g, x, 0.5)
    assert got.dtype == want.dtype == torch.float32 and torch.equal(got, want)
