import importlib.util
import os
import sys
from pathlib import Path

import pytest


def _gpu_artifacts():
    """test/python/gpu_artifacts.py (--gpu-build / --gpu-run), imported as `gpu_artifacts` (it
    lives beside the tests, where lit does not look for tests)."""
    if "gpu_artifacts" not in sys.modules:
        path = Path(__file__).parent / "python" / "gpu_artifacts.py"
        spec = importlib.util.spec_from_file_location("gpu_artifacts", path)
        module = importlib.util.module_from_spec(spec)
        sys.modules["gpu_artifacts"] = module
        spec.loader.exec_module(module)
    return sys.modules["gpu_artifacts"]


gpu_artifacts = _gpu_artifacts()

SABOTAGE = "BRAZE_TEST_SABOTAGE"
"""Set to `nan-fused-arith` (test_accuracy.py does, in a pytest of its own) to make
fusion-lower-to-linalg turn every fused add, mul and sub into NaN: the suites that compare
braze with eager must then fail."""


def _nan_fused_arith(mp: pytest.MonkeyPatch) -> None:
    from braze._mlir import arith, ir
    from braze.passes import lower_to_linalg

    real = lower_to_linalg.round_bfloat16_round_trips

    def sabotaged(block):
        rounded = real(block)
        for op in list(block.operations):
            op = op.operation
            if op.name in ("arith.addf", "arith.mulf", "arith.subf"):
                with ir.InsertionPoint(op), op.location:
                    nan = arith.ConstantOp(op.results[0].type, float("nan"))
                op.results[0].replace_all_uses_with(nan.result)
        return rounded

    mp.setattr(lower_to_linalg, "round_bfloat16_round_trips", sabotaged)


@pytest.fixture(autouse=True, scope="session")
def sabotage():
    """The deliberate breakage SABOTAGE names, for the whole session (nothing when unset)."""
    mp = pytest.MonkeyPatch()
    what = os.environ.get(SABOTAGE)
    if what == "nan-fused-arith":
        _nan_fused_arith(mp)
    elif what:
        raise pytest.UsageError(f"{SABOTAGE}={what!r}: the one sabotage known is 'nan-fused-arith'")
    yield
    mp.undo()


@pytest.fixture(autouse=True, scope="session")
def empty_tuning_cache(tmp_path_factory):
    """Tests see an empty kernel-tuning cache, whatever this machine has measured, and compile
    afresh (no compile cache: a test that breaks a pass on purpose must not get a cached module;
    the compile cache's own tests turn it on)."""
    mp = pytest.MonkeyPatch()
    mp.setenv("BRAZE_CACHE_DIR", str(tmp_path_factory.mktemp("braze-cache")))
    mp.setenv("BRAZE_COMPILE_CACHE", "0")
    yield
    mp.undo()


def pytest_addoption(parser):
    parser.addoption("--run-slow", action="store_true", help="run tests marked slow")
    parser.addoption("--run-extended", action="store_true",
                     help="also run the tests marked extended, the suites' long tail past what CI's 30 minutes "
                          "hold (README.md says which); implies --run-slow")
    gpu_artifacts.pytest_addoption(parser)


def pytest_configure(config):
    gpu_artifacts.pytest_configure(config)


def _can_open(driver: str) -> bool:
    try:
        import iree.runtime as rt

        return bool(rt.get_driver(driver).query_available_devices())
    except Exception:
        return False


def pytest_collection_modifyitems(config, items):
    building = gpu_artifacts.mode(config) == "build"  # compiles for the GPU host: needs no GPU here
    no_cuda = pytest.mark.skip(reason="no CUDA device for iree.runtime")
    no_vulkan = pytest.mark.skip(reason="no Vulkan device for iree.runtime")
    skips = {
        "cuda": None if building or _can_open("cuda") else no_cuda,
        "vulkan": None if building or _can_open("vulkan") else no_vulkan,
        "slow": None if config.getoption("--run-slow") or config.getoption("--run-extended")
        else pytest.mark.skip(reason="needs --run-slow"),
        "extended": None if config.getoption("--run-extended") else pytest.mark.skip(reason="needs --run-extended"),
    }
    for item in items:
        for marker, skip in skips.items():
            if skip is not None and marker in item.keywords:
                item.add_marker(skip)
    # The long tests first: pytest-xdist hands tests out in this order, and a 40-second test
    # taken last keeps one worker busy while the others sit idle (the suite ran 10% past its
    # work divided by the workers). The order within each kind stays the collection's.
    items.sort(key=lambda item: "slow" not in item.keywords)
