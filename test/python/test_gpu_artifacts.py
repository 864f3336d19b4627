"""--gpu-build / --gpu-run (gpu_artifacts.py) on the CPU: a cuda-marked test that compiles for
device='cpu' is built in one pytest and replayed in another, where torch-mlir and IREE's
compiler cannot be imported: every call keyed in order, a DynamicModule's two builds, a
compile error replayed for pytest.raises, and a changed model, an extra call, a missing call
or another target each failing with a message that says so."""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

HERE = Path(__file__).parent

BLOCKER = textwrap.dedent(
    """
    import importlib.abc, sys
    class Block(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] == "torch_mlir" or name.startswith("iree.compiler"):
                raise ImportError(f"{name} is blocked: the GPU host has no compiler")
    sys.meta_path.insert(0, Block())
    import pytest
    sys.exit(pytest.main(sys.argv[1:]))
    """
)

FAKE = textwrap.dedent(
    """
    import os

    import pytest
    import torch

    import braze


    # where the CPU data-tiles a matmul, IREE packs its weight at compile time: without data
    # tiling the artifacts hold the weights verbatim, so their stripping is seen
    WHOLE_WEIGHTS = "fusion-cpu-pipeline{data-tiling=off}"


    def _model():
        torch.manual_seed(int(os.environ.get("FAKE_SEED", "0")))
        return torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.GELU(), torch.nn.Linear(128, 4)).eval()


    @pytest.mark.cuda
    def test_compiles_then_the_gpu(request):
        model = _model()
        x = torch.randn(5, 64)
        first = braze.compile(model, x, device="cpu", pipeline=WHOLE_WEIGHTS)
        with pytest.raises(braze.DeviceError, match="unknown vulkan target 'hopper'"):
            braze.compile(model, x, device="vulkan", target="hopper")
        if os.environ.get("FAKE_FEWER"):
            return
        batch = torch.export.Dim("batch", min=1, max=16)
        dynamic = braze.compile(model, x, device="cpu", dynamic_shapes=({0: batch},), pipeline=WHOLE_WEIGHTS)
        if request.config.getoption("--gpu-build"):
            assert braze.targets.detect_vulkan_target() == "ampere"  # as the GPU host answers
            torch.ones(1, device="cuda")  # the GPU: the build stops here
            raise AssertionError("not reached")
        assert "--gpu-run" in first._source  # loaded, not compiled
        with torch.no_grad():
            torch.testing.assert_close(first(x), model(x))
            y = torch.randn(3, 64)
            torch.testing.assert_close(dynamic(y), model(y))
            torch.testing.assert_close(dynamic(x), model(x))
        assert dynamic.calls == {"static": 1, "dynamic": 1}
        if os.environ.get("FAKE_EXTRA"):
            braze.compile(model, x, device="cpu", pipeline=WHOLE_WEIGHTS)


    @pytest.mark.vulkan
    def test_the_gpu_before_compile():
        x = torch.randn(4, device="cuda")
        braze.compile(torch.nn.ReLU(), x, device="vulkan")
    """
)


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    root = tmp_path_factory.mktemp("gpu-artifacts")
    (root / "pytest.ini").write_text("[pytest]\nmarkers =\n    cuda: x\n    vulkan: x\n")
    (root / "test_fake.py").write_text(FAKE)
    (root / "test_needs_the_compiler.py").write_text("import torch_mlir\n\ndef test_compiler():\n    pass\n")
    return root


def _pytest(project, *args, blocked=False, **env):
    """pytest in the project with the plugin (-p gpu_artifacts); blocked: without the compiler."""
    environ = {**os.environ, **env, "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")])}
    command = [sys.executable] + (["-c", BLOCKER] if blocked else ["-m", "pytest"])
    result = subprocess.run(command + ["-p", "gpu_artifacts", "-p", "no:cacheprovider", "-rs", *args],
                            cwd=project, env=environ, capture_output=True, text=True, timeout=600, check=False)
    return result.returncode, result.stdout + result.stderr


@pytest.fixture(scope="module")
def built(project):
    rc, out = _pytest(project, "--gpu-build", "art", "-m", "cuda or vulkan", "-k", "compiles_then")
    assert rc == 0, out
    assert "1 skipped" in out and "built 3 artifact(s) in 3 compile(s)" in out, out
    assert "stopped at the first use of the GPU (torch's CUDA)" in out, out
    (record,) = [json.loads(p.read_text()) for p in (project / "art").glob("*.json")]
    return project, record


def test_build_records_every_call_in_order(built):
    project, record = built
    assert record["nodeid"] == "test_fake.py::test_compiles_then_the_gpu"
    first, error, dynamic = record["calls"]
    assert list(first["artifacts"]) == ["module"] and first["built"] == ["cpu", "host"]
    assert error["error"]["class"] == "braze.errors.DeviceError" and "artifacts" not in error
    assert sorted(dynamic["artifacts"]) == ["dynamic", "static"] and dynamic["policy"] == "example"
    assert first["model"] == error["model"] == dynamic["model"] and first["inputs"] == dynamic["inputs"]
    # the first Linear's weight (32 KiB) leaves every artifact, to come back from the run's model
    assert [name for name, _ in first["stripped"]["module"]] == ["0:0.weight"], first["stripped"]
    assert all([n for n, _ in s] == ["0:0.weight"] for s in dynamic["stripped"].values()), dynamic["stripped"]
    assert "dynamic_shapes" in dynamic["options"] and set(first["options"]) == {"pipeline"}
    assert all((project / "art" / name).is_file() for c in record["calls"] for name in c.get("artifacts", {}).values())


def test_run_replays_without_the_compiler(built):
    project, _ = built
    rc, out = _pytest(project, "--gpu-run", "art", "-m", "cuda or vulkan", "-k", "compiles_then", blocked=True)
    assert rc == 0 and "1 passed" in out, out  # test_needs_the_compiler.py is not collected
    assert "--gpu-run: 1 of the 1 tests recorded in art selected here" in out, out


@pytest.mark.parametrize("env,message", [
    ({"FAKE_SEED": "1"}, "braze.compile call 1: not the model the build compiled"),
    ({"FAKE_EXTRA": "1"}, ("braze.compile call 4 of test_fake.py::test_compiles_then_the_gpu was not recorded: the "
                           "build recorded 3 (the build stopped at the first use of the GPU: torch's CUDA)")),
    ({"FAKE_FEWER": "1"}, "called braze.compile 2 time(s), the build 3: the test took another path"),
], ids=["changed-model", "extra-call", "missing-call"])
def test_run_refuses_what_the_build_did_not_make(built, env, message):
    project, _ = built
    rc, out = _pytest(project, "--gpu-run", "art", "-m", "cuda or vulkan", "-k", "compiles_then", blocked=True, **env)
    assert rc == 1 and message in out, out


def test_run_refuses_an_artifact_for_another_target(built, tmp_path):
    project, record = built
    other = project / "art-other"
    other.mkdir(exist_ok=True)
    for path in (project / "art").iterdir():
        (other / path.name).write_bytes(path.read_bytes())
    record = json.loads(json.dumps(record))
    record["calls"][0]["built"] = ["cpu", "znver4"]
    (other / next((project / "art").glob("*.json")).name).write_text(json.dumps(record))
    rc, out = _pytest(project, "--gpu-run", "art-other", "-m", "cuda or vulkan", "-k", "compiles_then", blocked=True)
    assert rc == 1 and "built for cpu znver4, but braze.compile(device='cpu', target=None) compiles for" in out, out


def test_build_refuses_the_gpu_before_compile(project):
    rc, out = _pytest(project, "--gpu-build", "art-early", "-m", "cuda or vulkan", "-k", "before_compile")
    assert rc == 1 and "uses the GPU (torch's CUDA) before its first braze.compile" in out, out
    rc, out = _pytest(project, "--gpu-run", "art-early", "-m", "cuda or vulkan", blocked=True)
    assert rc == 1 and "has no record of test_fake.py::test_compiles_then_the_gpu" in out, out
