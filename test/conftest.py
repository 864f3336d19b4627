import pytest


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


def _can_open(driver: str) -> bool:
    try:
        import iree.runtime as rt

        return bool(rt.get_driver(driver).query_available_devices())
    except Exception:
        return False


def pytest_collection_modifyitems(config, items):
    skips = {
        "cuda": None if _can_open("cuda") else pytest.mark.skip(reason="no CUDA device for iree.runtime"),
        "vulkan": None if _can_open("vulkan") else pytest.mark.skip(reason="no Vulkan device for iree.runtime"),
        "slow": None if config.getoption("--run-slow") else pytest.mark.skip(reason="needs --run-slow"),
    }
    for item in items:
        for marker, skip in skips.items():
            if skip is not None and marker in item.keywords:
                item.add_marker(skip)
