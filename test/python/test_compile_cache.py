"""The persistent compile cache (braze.cache): a hit in a new process, keys that change with
what decides the result, damaged entries rebuilt, concurrent writers, `braze cache`."""

import os
import subprocess
import sys
import textwrap

import pytest
import torch

import braze
from braze import cache


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
    assert warm.report.extra["cache"]["hit"] is True
    assert set(warm.report.stage_seconds) == {"export", "cache"}
    torch.testing.assert_close(warm(x), cold(x), rtol=0, atol=0)
    with torch.no_grad():
        torch.testing.assert_close(warm(x), model(x))
    assert cache.info()["entries"] == 1


@pytest.mark.parametrize("change", ["weights", "constant", "shape", "option", "off"])
def test_what_decides_the_result_is_in_the_key(cache_dir, change):
    model, x = _model(), torch.randn(4, 16)
    braze.compile(model, x)
    kwargs = {}
    if change == "weights":
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
    run = lambda *a: subprocess.run([sys.executable, "-m", "braze.cli", "cache", *a], capture_output=True,  # noqa: E731
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
