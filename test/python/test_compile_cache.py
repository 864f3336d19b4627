"""The persistent compile cache (braze.compiler.cache): a hit in a new process, keys that change with
what decides the result, damaged entries rebuilt, concurrent writers, `braze cache`."""

import os
import subprocess
import sys
import textwrap

import pytest
import torch

import braze
from braze.compiler import cache


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("BRAZE_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("BRAZE_COMPILE_CACHE", "1")
    return tmp_path / "compiled"


class Block(torch.nn.Module):
    def __init__(self, scale=1.0):
        super().__init__()
        self.linear = torch.nn.Linear(16, 16)
        self.norm = torch.nn.BatchNorm1d(16)  # a 0-d buffer (num_batches_tracked) among the weights
        self.scale = scale

    def forward(self, x):
        return self.norm(torch.nn.functional.gelu(self.linear(x))) * self.scale


def _model(seed=0, scale=1.0):
    torch.manual_seed(seed)
    return Block(scale).eval()


def test_second_compile_is_a_hit_with_the_same_answer(cache_dir):
    model, x = _model(), torch.randn(4, 16)
    cold = braze.compile(model, x)
    assert cold.report.extra["cache"]["hit"] is False
    warm = braze.compile(model, x)
    assert warm.report.extra["cache"]["hit"] is True and warm.report.extra["cache"]["quick"] is True
    assert set(warm.report.stage_seconds) == {"quick key and probe"}  # no export
    torch.testing.assert_close(warm(x), cold(x), rtol=0, atol=0)
    with torch.no_grad():
        torch.testing.assert_close(warm(x), model(x))
    assert cache.info()["entries"] == 1 and cache.info()["quick_keys"] == 1


def test_without_quick_keys_a_hit_is_found_by_export(cache_dir, monkeypatch):
    monkeypatch.setenv("BRAZE_COMPILE_CACHE_QUICK", "0")
    model, x = _model(), torch.randn(4, 16)
    braze.compile(model, x)
    warm = braze.compile(model, x)
    assert warm.report.extra["cache"]["hit"] is True and warm.report.extra["cache"]["quick"] is False
    assert set(warm.report.stage_seconds) == {"export", "cache"}
    assert cache.info()["quick_keys"] == 0


@pytest.mark.parametrize("change", ["weights", "constant", "shape", "option", "off", "host cpu"])
def test_what_decides_the_result_is_in_the_key(cache_dir, change, monkeypatch):
    model, x = _model(), torch.randn(4, 16)
    braze.compile(model, x)
    kwargs = {}
    if change == "host cpu":  # a cache folder shared with a machine whose CPU differs: its code may not run here
        from braze import targets

        monkeypatch.setattr(targets, "host_cpu_identity", lambda: "another-cpu")
    elif change == "weights":
        with torch.no_grad():
            model.linear.weight[0, 0] += 1.0
    elif change == "constant":
        model = _model(scale=2.0)
    elif change == "shape":
        x = torch.randn(8, 16)
    elif change == "option":
        kwargs = {"fusion": False}
    else:
        kwargs = {"cache": False}
    again = braze.compile(model, x, **kwargs)
    assert again.report.extra.get("cache", {}).get("hit") is not True
    with torch.no_grad():
        torch.testing.assert_close(again(x), model(x))


def test_damaged_entry_is_rebuilt_not_loaded(cache_dir):
    model, x = _model(), torch.randn(4, 16)
    braze.compile(model, x)
    (entry,) = cache_dir.glob("*.braze")
    entry.write_bytes(entry.read_bytes()[:100])  # a torn write or a disk error
    rebuilt = braze.compile(model, x)
    assert rebuilt.report.extra["cache"]["hit"] is False
    with torch.no_grad():
        torch.testing.assert_close(rebuilt(x), model(x))
    assert braze.compile(model, x).report.extra["cache"]["hit"] is True


def test_hit_in_a_new_process_and_concurrent_writers(cache_dir, tmp_path):
    script = tmp_path / "compile_once.py"
    script.write_text(textwrap.dedent("""
        import sys, torch, braze
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.Tanh()).eval()
        x = torch.ones(4, 16)
        m = braze.compile(model, x)
        with torch.no_grad():
            assert torch.allclose(m(x), model(x), atol=1e-6)
        print("hit" if m.report.extra["cache"]["hit"] else "miss")
    """))
    env = dict(os.environ)
    runs = [subprocess.Popen([sys.executable, str(script)], env=env, stdout=subprocess.PIPE, text=True)
            for _ in range(2)]
    first = [r.communicate()[0].strip() for r in runs]
    assert all(r.returncode == 0 for r in runs) and set(first) <= {"hit", "miss"}
    later = subprocess.run([sys.executable, str(script)], env=env, stdout=subprocess.PIPE, text=True, check=True)
    assert later.stdout.strip() == "hit"
    assert len(list(cache_dir.glob("*.braze"))) == 1
    assert not [p for p in cache_dir.iterdir() if p.name.startswith(".")]  # no temporary files left


def test_buffers_a_cached_module_updates_are_the_models(cache_dir):
    from test_reliability import Counter  # a model that adds 1 to its buffer on each call

    first, second = Counter(), Counter()
    x = torch.zeros(4)
    braze.compile(first, x)
    warm = braze.compile(second, x)
    assert warm.report.extra["cache"]["hit"] is True
    torch.testing.assert_close(warm(x), torch.ones(4))
    torch.testing.assert_close(second.n, torch.ones(1))
    torch.testing.assert_close(first.n, torch.zeros(1))


def test_cli_info_and_clear(cache_dir):
    braze.compile(_model(), torch.randn(4, 16))
    run = lambda *a: subprocess.run([sys.executable, "-m", "braze.tools.cli", "cache", *a], capture_output=True,  # noqa: E731
                                    text=True, env=dict(os.environ))
    info = run("info")
    assert info.returncode == 0 and "entries: 1" in info.stdout and str(cache_dir) in info.stdout
    cleared = run("clear")
    assert cleared.returncode == 0 and "removed 1" in cleared.stdout
    assert cache.info()["entries"] == 0
    bad = run("nosuch")
    assert bad.returncode == 2 and "Traceback" not in bad.stderr


def test_size_bound_evicts_the_least_recently_used(cache_dir, monkeypatch):
    x = torch.randn(4, 16)
    braze.compile(_model(seed=1), x)
    (first,) = cache_dir.glob("*.braze")
    os.utime(first, (1, 1))  # used long ago
    monkeypatch.setenv("BRAZE_COMPILE_CACHE_MAX_MIB", str(first.stat().st_size * 1.5 / 2**20))
    braze.compile(_model(seed=2), x)
    left = list(cache_dir.glob("*.braze"))
    assert len(left) == 1 and left[0] != first


# -- quick keys (braze.compiler.cache.quick_key): found without torch.export, checked by a probe ---------------

USER_MODEL = """
import torch
from helper import shift

SCALE = 1.0


class Scaled(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(8, 8)

    def forward(self, x):
        return shift(self.linear(x)) * SCALE
"""
HELPER = """
def shift(t):
    return t + 1.0
"""


@pytest.fixture
def user_code(tmp_path, monkeypatch):
    """A model in the user's own files: its class in one, a helper it calls in another."""
    folder = tmp_path / "user"
    folder.mkdir()
    (folder / "usermodel.py").write_text(USER_MODEL)
    (folder / "helper.py").write_text(HELPER)
    monkeypatch.syspath_prepend(str(folder))
    import importlib

    for name in ("usermodel", "helper"):
        sys.modules.pop(name, None)
    module = importlib.import_module("usermodel")
    yield folder, module
    for name in ("usermodel", "helper"):
        sys.modules.pop(name, None)


def _user_model(module):
    torch.manual_seed(0)
    return module.Scaled().eval()


def test_a_changed_global_is_caught_by_the_probe(cache_dir, user_code):
    _, module = user_code
    model, x = _user_model(module), torch.randn(2, 8)
    braze.compile(model, x)
    module.SCALE = 3.0  # what forward() computes changed; the model object and its files did not
    again = braze.compile(model, x)
    assert again.report.extra["cache"]["hit"] is False  # the probe differs; the export key too
    assert again.report.extra["cache"]["quick_miss"] == "eager's outputs on the probe changed"
    with torch.no_grad():
        torch.testing.assert_close(again(x), model(x))
    module.SCALE = 1.0  # the first entry again: found by export (the quick index names the second)
    back = braze.compile(model, x)
    assert back.report.extra["cache"]["hit"] is True and back.report.extra["cache"]["quick"] is False
    assert braze.compile(model, x).report.extra["cache"]["quick"] is True


def test_a_changed_helper_file_is_not_a_quick_hit(cache_dir, user_code):
    folder, module = user_code
    model, x = _user_model(module), torch.randn(2, 8)
    braze.compile(model, x)
    helper = folder / "helper.py"
    helper.write_text(HELPER + "\n# edited: the file the stack traces name changed\n")
    os.utime(helper, ns=(helper.stat().st_atime_ns, helper.stat().st_mtime_ns + 10**9))
    again = braze.compile(model, x)
    assert again.report.extra["cache"]["hit"] is True and again.report.extra["cache"]["quick"] is False
    assert again.report.extra["cache"]["quick_miss"] == f"{helper.resolve()} changed"
    assert braze.compile(model, x).report.extra["cache"]["quick"] is True  # remembered anew


def test_a_damaged_quick_index_is_removed_and_rebuilt(cache_dir):
    model, x = _model(), torch.randn(4, 16)
    braze.compile(model, x)
    (index,) = cache_dir.glob("*.quick")
    index.write_bytes(b"not a torch file")
    again = braze.compile(model, x)
    assert again.report.extra["cache"]["hit"] is True and again.report.extra["cache"]["quick"] is False
    assert braze.compile(model, x).report.extra["cache"]["quick"] is True


def test_no_quick_key_for_models_with_hooks_or_state_updates(cache_dir):
    from test_reliability import Counter

    hooked, x = _model(), torch.randn(4, 16)
    hooked.linear.register_forward_hook(lambda mod, inp, out: out * 2)
    braze.compile(hooked, x)
    assert cache.info()["quick_keys"] == 0
    braze.compile(Counter(), torch.zeros(4))  # updates its buffer: a probe call would change it
    assert cache.info()["quick_keys"] == 0


def test_a_quick_hit_in_a_new_process_does_not_export(cache_dir, tmp_path):
    script = tmp_path / "compile_quick.py"
    script.write_text(textwrap.dedent("""
        import sys, torch, braze
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.GELU()).eval()
        x = torch.randn(4, 16)
        m = braze.compile(model, x)
        with torch.no_grad():
            assert torch.allclose(m(x), model(x), atol=1e-6)
        c = m.report.extra["cache"]
        print(c["hit"], c["quick"] if c["hit"] else None, "torch._dynamo" in sys.modules)
    """))
    run = lambda: subprocess.run([sys.executable, str(script)], env=dict(os.environ), stdout=subprocess.PIPE,  # noqa: E731
                                 text=True, check=True).stdout.split()
    assert run()[:1] == ["False"]
    assert run() == ["True", "True", "False"]  # a hit, by the quick key, and Dynamo never imported
