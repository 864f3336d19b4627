"""braze.set_cpu_threads and BRAZE_CPU_THREADS: which IREE driver runs CPU programs and with how
many workers (bench/NOTES.md §41). Each case runs in a fresh process: IREE makes its CPU device
once per process."""

import json
import os
import subprocess
import sys
import textwrap

import pytest

SCRIPT = textwrap.dedent("""
    import json, os, sys, warnings
    warnings.filterwarnings("ignore")
    import torch, torch.nn as nn
    import braze

    def workers():
        names = []
        for tid in os.listdir("/proc/self/task"):
            try:
                with open(f"/proc/self/task/{tid}/comm") as f:
                    names.append(f.read().strip())
            except OSError:
                pass
        return sum(n.startswith("iree-worker") for n in names)

    out = {}
    threads = json.loads(sys.argv[1])
    if threads != "unset":
        braze.set_cpu_threads(threads)
    torch.manual_seed(7)
    model = nn.Sequential(nn.Linear(24, 48), nn.GELU(), nn.Linear(48, 16), nn.Softmax(-1)).eval()
    x = torch.randn(9, 24)
    compiled = braze.compile(model, x, cache=False)
    errs = []
    allocator = None
    for _ in range(10):
        x = torch.randn(9, 24)
        with torch.no_grad():
            ref = model.double()(x.double())
            model.float()
        errs.append(float((compiled(x).double() - ref).abs().max()))
        if allocator is None:  # after the first call: the constants, the transients, one result
            allocator = compiled.program.device.allocator
            first = allocator.statistics["device_bytes_allocated"] if allocator.has_statistics else None
    out["err"] = max(errs)
    out["driver"] = compiled.program.driver
    out["workers"] = workers()
    out["allocated_after_first"] = None if first is None else allocator.statistics["device_bytes_allocated"] - first
    try:
        braze.set_cpu_threads(5)
        out["again"] = "accepted"
    except braze.DeviceError as e:
        out["again"] = str(e)
    print("RESULT " + json.dumps(out))
""")


def _run(threads, env=None):
    environ = dict(os.environ)
    environ.pop("BRAZE_CPU_THREADS", None)
    environ.update(env or {})
    p = subprocess.run([sys.executable, "-c", SCRIPT, json.dumps(threads)], capture_output=True, text=True,
                       env=environ, timeout=600)
    lines = [line for line in p.stdout.splitlines() if line.startswith("RESULT ")]
    assert lines, p.stdout[-2000:] + p.stderr[-4000:]
    return json.loads(lines[-1][len("RESULT "):])


pytestmark = pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="counts threads through /proc")


def test_one_thread_runs_on_the_calling_thread():
    out = _run(1)
    assert out["driver"] == "local-sync"
    assert out["workers"] == 0
    assert out["err"] < 1e-5
    assert "already runs CPU programs with 1 thread (local-sync)" in out["again"]
    # The device caches freed results: the nine calls after the first allocate no new 9x16 result.
    if out["allocated_after_first"] is not None:
        assert out["allocated_after_first"] < 9 * 16 * 4, out


def test_n_threads_are_n_iree_workers():
    out = _run(3)
    assert out["driver"] == "local-task"
    assert out["workers"] == 3
    assert out["err"] < 1e-5


def test_the_environment_decides_without_a_call():
    out = _run("unset", {"BRAZE_CPU_THREADS": "2"})
    assert (out["driver"], out["workers"]) == ("local-task", 2)
    out = _run("unset", {"BRAZE_CPU_THREADS": "1"})
    assert (out["driver"], out["workers"]) == ("local-sync", 0)
    assert out["err"] < 1e-5


def test_bad_thread_counts_are_named():
    from braze import set_cpu_threads
    from braze.errors import DeviceError

    for bad in (0, -2, 1.5, True, "2"):
        with pytest.raises(DeviceError, match=r"set_cpu_threads\(.*\): expected a positive int or None"):
            set_cpu_threads(bad)


def test_a_bad_environment_value_is_named():
    environ = dict(os.environ, BRAZE_CPU_THREADS="two")
    p = subprocess.run([sys.executable, "-c", SCRIPT, json.dumps("unset")], capture_output=True, text=True,
                       env=environ, timeout=600)
    assert p.returncode != 0
    assert "BRAZE_CPU_THREADS='two': expected a positive number of threads" in p.stderr
