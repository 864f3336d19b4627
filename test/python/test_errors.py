"""Errors a user can cause end in a BrazeError that names the problem."""

import json
import os
import zipfile

import numpy as np
import pytest
import torch

import braze


class AddRelu(torch.nn.Module):
    def forward(self, x, y):
        return torch.relu(x + y)


@pytest.fixture(scope="module")
def add_relu():
    return braze.compile(AddRelu(), torch.randn(3, 4), torch.randn(3, 4))


class Unsupported(torch.nn.Module):
    def forward(self, x):
        y = x + 1
        return torch.special.i0e(y)  # the line the error must name


def test_unsupported_op_names_aten_op_node_and_line():
    with pytest.raises(braze.UnsupportedOpError) as info:
        braze.compile(Unsupported(), torch.randn(4))
    message = str(info.value)
    assert "aten.special_i0e" in message
    assert "FX node 'special_i0e'" in message
    assert f"{__file__}:" in message and "Unsupported" in message


def test_not_a_module():
    with pytest.raises(braze.ExportError, match="torch.nn.Module"):
        braze.compile(lambda x: x, torch.randn(2))


class DataDependent(torch.nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            return x * 2
        return x


def test_data_dependent_control_flow_is_an_export_error():
    with pytest.raises(braze.ExportError, match="torch.export could not capture DataDependent"):
        braze.compile(DataDependent(), torch.randn(3))


def test_wrong_argument_count(add_relu):
    with pytest.raises(braze.InputError, match="positional arguments: expected a tuple of 2"):
        add_relu(torch.randn(3, 4))


class Scaled(torch.nn.Module):
    def forward(self, x, k: int):
        return x * k


def test_a_baked_number_must_match():
    """A non-tensor argument is baked into the program; another value is an error, not a silent
    wrong answer (and the positional fast path of flatten_call must not skip the check)."""
    compiled = braze.compile(Scaled(), torch.randn(3), 2)
    x = torch.randn(3)
    torch.testing.assert_close(compiled(x, 2), x * 2)
    with pytest.raises(braze.InputError, match="was 2 when the model was compiled and is baked into the program; got 3"):
        compiled(x, 3)


def test_wrong_shape(add_relu):
    with pytest.raises(braze.InputError, match=r"args\[1\]: shape \[4, 3\] does not match the compiled float32\[3, 4\]"):
        add_relu(torch.randn(3, 4), torch.randn(4, 3))


def test_wrong_dtype(add_relu):
    with pytest.raises(braze.InputError, match=r"args\[0\]: dtype float64 does not match"):
        add_relu(torch.randn(3, 4, dtype=torch.float64), torch.randn(3, 4))


def test_wrong_type(add_relu):
    with pytest.raises(braze.InputError, match="expected a torch.Tensor or numpy.ndarray"):
        add_relu([1, 2], torch.randn(3, 4))


def test_numpy_in_numpy_out(add_relu):
    x, y = np.random.randn(3, 4).astype(np.float32), np.random.randn(3, 4).astype(np.float32)
    out = add_relu(x, y)
    assert isinstance(out, np.ndarray)
    np.testing.assert_allclose(out, np.maximum(x + y, 0), rtol=1e-6)


def test_unknown_device_lists_available():
    with pytest.raises(braze.DeviceError, match=r"unknown device 'tpu'.*available on this machine: cpu"):
        braze.compile(AddRelu(), torch.randn(2), torch.randn(2), device="tpu")


@pytest.mark.skipif("cuda" in braze.available_devices(), reason="a CUDA device is present")
def test_cuda_without_gpu_asks_for_target(monkeypatch):
    monkeypatch.setattr("shutil.which", lambda name: None)
    with pytest.raises(braze.DeviceError, match="target='sm_90'"):
        braze.compile(AddRelu(), torch.randn(2), torch.randn(2), device="cuda")


def test_unknown_compile_option():
    with pytest.raises(TypeError, match="unknown options: fuse"):
        braze.compile(AddRelu(), torch.randn(2), torch.randn(2), fuse=True)


def test_bad_pipeline_is_named():
    with pytest.raises(braze.PassPipelineError, match="no-such-pass"):
        braze.compile(AddRelu(), torch.randn(2), torch.randn(2), pipeline="no-such-pass")


# -- artifacts -----------------------------------------------------------------


def test_save_refuses_existing_path(add_relu, tmp_path):
    path = tmp_path / "model.braze"
    path.write_bytes(b"the user's file\x00\xff")
    with pytest.raises(FileExistsError, match="overwrite=True") as refused:
        add_relu.save(path)
    assert isinstance(refused.value, braze.ArtifactExistsError) and isinstance(refused.value, braze.BrazeError)
    assert path.read_bytes() == b"the user's file\x00\xff"
    add_relu.save(path, overwrite=True)
    assert braze.load(path).signature.inputs[0].shape == [3, 4]


def test_save_load_roundtrip(add_relu, tmp_path):
    add_relu.save(tmp_path / "m.braze")
    loaded = braze.load(tmp_path / "m.braze", device="cpu")
    x, y = torch.randn(3, 4), torch.randn(3, 4)
    torch.testing.assert_close(loaded(x, y), torch.relu(x + y))
    assert loaded.report.dispatch_count == add_relu.report.dispatch_count


def test_missing_artifact(tmp_path):
    with pytest.raises(braze.ArtifactError, match="does not exist"):
        braze.load(tmp_path / "nope.braze")


def test_garbage_artifact(tmp_path):
    path = tmp_path / "garbage.braze"
    path.write_bytes(os.urandom(1000))
    with pytest.raises(braze.ArtifactError, match="corrupt or truncated"):
        braze.load(path)


def test_truncated_artifact(add_relu, tmp_path):
    path = tmp_path / "m.braze"
    add_relu.save(path)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(braze.ArtifactError, match="corrupt or truncated"):
        braze.load(path)


def _rewrite(path, meta_fn=None, vmfb_fn=None):
    with zipfile.ZipFile(path) as z:
        meta, vmfb = json.loads(z.read("braze.json")), z.read("module.vmfb")
    meta = meta_fn(meta) if meta_fn else meta
    vmfb = vmfb_fn(vmfb) if vmfb_fn else vmfb
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("braze.json", json.dumps(meta))
        z.writestr("module.vmfb", vmfb)


def test_flipped_byte_fails_checksum(add_relu, tmp_path):
    path = tmp_path / "m.braze"
    add_relu.save(path)
    _rewrite(path, vmfb_fn=lambda b: b[:100] + bytes([b[100] ^ 0xFF]) + b[101:])
    with pytest.raises(braze.ArtifactError, match="checksum"):
        braze.load(path)


def test_iree_version_mismatch(add_relu, tmp_path):
    path = tmp_path / "m.braze"
    add_relu.save(path)

    def older(meta):
        meta["versions"]["iree_compiler"] = "3.9.0"
        return meta

    _rewrite(path, meta_fn=older)
    with pytest.raises(braze.ArtifactError, match=r"compiled by IREE 3.9.0.*iree-base-runtime==3.9.0"):
        braze.load(path)


def test_format_version_mismatch(add_relu, tmp_path):
    path = tmp_path / "m.braze"
    add_relu.save(path)

    def future(meta):
        meta["format_version"] = 99
        return meta

    _rewrite(path, meta_fn=future)
    with pytest.raises(braze.ArtifactError, match="format version 99"):
        braze.load(path)


def test_load_for_wrong_device(add_relu, tmp_path):
    add_relu.save(tmp_path / "m.braze")
    with pytest.raises(braze.DeviceError, match="compiled for cpu"):
        braze.load(tmp_path / "m.braze", device="cuda")


@pytest.mark.parametrize("output_storage", [True, False])
def test_output_storage_abi(output_storage, tmp_path):
    """Results written into braze-allocated tensors (cuda's default) equal IREE-owned results."""
    model = torch.nn.Sequential(torch.nn.Linear(6, 5), torch.nn.Sigmoid()).eval()
    x = torch.randn(4, 6)
    compiled = braze.compile(model, x, output_storage=output_storage)
    assert compiled.abi == {"output_storage": output_storage, "transient_storage": True,
                            "copy_inputs": [], "copy_outputs": [], "tied": []}
    compiled.save(tmp_path / "m.braze")
    loaded = braze.load(tmp_path / "m.braze")
    x2 = torch.randn(4, 6)
    with torch.no_grad():
        expected = model(x2)
    for module in (compiled, loaded):
        torch.testing.assert_close(module(x2), expected)
        np.testing.assert_allclose(module(x2.numpy()), expected.numpy(), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("transient_storage", [True, False])
def test_transient_storage_abi(transient_storage, tmp_path):
    """Intermediates in one reused buffer give eager's results, call after call and after load."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 64), torch.nn.GELU(), torch.nn.Linear(64, 8)).eval()
    compiled = braze.compile(model, torch.randn(5, 16), transient_storage=transient_storage)
    assert compiled.abi["transient_storage"] is transient_storage
    compiled.save(tmp_path / "m.braze")
    loaded = braze.load(tmp_path / "m.braze")
    # Linear(16, 64)'s result is the intermediate: 5 x 64 float32, at least.
    assert (loaded.program.transient_bytes >= 5 * 64 * 4) is transient_storage
    for module in (compiled, loaded):
        for _ in range(3):  # later calls reuse the storage the first one allocated
            x = torch.randn(5, 16)
            with torch.no_grad():
                expected = model(x)
            torch.testing.assert_close(module(x), expected, rtol=1e-5, atol=1e-6)


def test_transient_storage_concurrent_calls():
    """Calls from several threads at once each get their own intermediates."""
    import threading

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.Tanh(), torch.nn.Linear(256, 64)).eval()
    compiled = braze.compile(model, torch.randn(32, 64))
    inputs = [torch.randn(32, 64) for _ in range(8)]
    with torch.no_grad():
        expected = [model(x) for x in inputs]
    got, errors = [None] * len(inputs), []

    def work(i):
        try:
            for _ in range(20):
                got[i] = compiled(inputs[i])
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(inputs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for g, e in zip(got, expected):
        torch.testing.assert_close(g, e, rtol=1e-5, atol=1e-6)


def test_artifact_without_transient_key_loads(tmp_path):
    """Artifacts saved before transient storage existed ({"output_storage": ...} only) still run."""
    model = torch.nn.Sequential(torch.nn.Linear(6, 5), torch.nn.ReLU()).eval()
    compiled = braze.compile(model, torch.randn(4, 6), transient_storage=False)
    path = tmp_path / "m.braze"
    compiled.save(path)

    def old_meta(meta):
        meta["abi"] = {"output_storage": False}
        return meta

    _rewrite(path, meta_fn=old_meta)
    loaded = braze.load(path)
    assert loaded.abi == {"output_storage": False, "transient_storage": False, "copy_inputs": [], "copy_outputs": [],
                           "tied": []}
    x = torch.randn(4, 6)
    with torch.no_grad():
        torch.testing.assert_close(loaded(x), model(x))


def _in_fresh_process(code: str, env_value: str):
    import subprocess
    import sys

    env = dict(os.environ, BRAZE_IREE_RUNTIME_FLAGS=env_value)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)


RUNTIME_FLAG_SCRIPT = """
import numpy as np, torch, braze
m = braze.compile(torch.nn.ReLU(), torch.randn(4))
try:
    print(m(np.array([-1.0, 2.0, -3.0, 4.0], dtype=np.float32)))
except braze.BrazeError as e:
    print("BrazeError:", e)
"""


def test_runtime_flags_from_environment():
    ok = _in_fresh_process(RUNTIME_FLAG_SCRIPT, "--task_topology_group_count=1")
    assert "[0. 2. 0. 4.]" in ok.stdout, ok.stderr
    # braze's default (--cuda_use_streams=false) can be overridden, and neither breaks the CPU.
    streams = _in_fresh_process(RUNTIME_FLAG_SCRIPT, "--cuda_use_streams=true")
    assert "[0. 2. 0. 4.]" in streams.stdout, streams.stderr
    bad = _in_fresh_process(RUNTIME_FLAG_SCRIPT, "--no_such_flag=1")
    assert "BrazeError: BRAZE_IREE_RUNTIME_FLAGS='--no_such_flag=1' is not accepted" in bad.stdout, bad.stderr


def test_bad_iree_flag_is_a_compile_error():
    """iree_flags reach iree-compile; one it does not know is a braze error naming it."""
    model = torch.nn.ReLU()
    with pytest.raises(braze.CompileError, match="--no-such-iree-flag"):
        braze.compile(model, torch.randn(4), iree_flags=["--no-such-iree-flag=1"])
    ok = braze.compile(model, torch.randn(4), iree_flags=["--iree-opt-level=O2"])
    x = torch.randn(4)
    torch.testing.assert_close(ok(x), torch.relu(x))


def test_artifact_claiming_transient_storage_it_lacks(tmp_path):
    """Metadata that says main takes transient storage, over a program that does not: a clear error."""
    model = torch.nn.Sequential(torch.nn.Linear(6, 5), torch.nn.ReLU()).eval()
    path = tmp_path / "m.braze"
    braze.compile(model, torch.randn(4, 6), transient_storage=False).save(path)

    def claim(meta):
        meta["abi"]["transient_storage"] = True
        return meta

    _rewrite(path, meta_fn=claim)
    with pytest.raises(braze.ArtifactError, match="its program takes 1 tensors, 0 output buffers and 0 transient"):
        braze.load(path)
