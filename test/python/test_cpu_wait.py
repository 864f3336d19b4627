"""How a thread calling a CPU program waits for IREE's workers (runtime._WaitBehindWorkers,
bench/NOTES.md §41): SCHED_BATCH during the call (the default), the thread's own policy after it."""

import os
import threading

import pytest
import torch
import torch.nn as nn

import braze
from braze.errors import InputError

pytestmark = pytest.mark.skipif(not hasattr(os, "SCHED_BATCH"), reason="needs Linux scheduling policies")


class _Recording:
    """Stands in for a Program's VmContext: records the calling thread's policy inside invoke."""

    def __init__(self, context):
        self.context, self.policies = context, []

    def invoke(self, *args):
        self.policies.append(os.sched_getscheduler(0))
        return self.context.invoke(*args)


def _model():
    torch.manual_seed(3)
    return nn.Sequential(nn.Linear(24, 40), nn.GELU(), nn.Linear(40, 8)).eval()


def _compiled(monkeypatch, policy=None):
    if policy is None:
        monkeypatch.delenv("BRAZE_CPU_WAIT", raising=False)
    else:
        monkeypatch.setenv("BRAZE_CPU_WAIT", policy)
    model = _model()
    x = torch.randn(5, 24)
    compiled = braze.compile(model, x, cache=False)
    recording = _Recording(compiled.program._context)
    compiled.program._context = recording
    return model, compiled, recording


def _in_thread(fn):
    """Runs fn in a fresh thread (a policy changed there cannot leak into the test runner's)."""
    out = {}

    def run():
        try:
            out["value"] = fn()
        except BaseException as e:  # re-raised in the test's thread
            out["error"] = e

    t = threading.Thread(target=run)
    t.start()
    t.join()
    if "error" in out:
        raise out["error"]
    return out["value"]


def _check(model, compiled, x):
    with torch.no_grad():
        ref = model.double()(x.double())
        model.float()
    got = compiled(x)
    assert torch.allclose(got.double(), ref, rtol=1e-4, atol=1e-5), float((got.double() - ref).abs().max())


@pytest.mark.parametrize("own, inside", [(os.SCHED_OTHER, os.SCHED_BATCH), (os.SCHED_IDLE, os.SCHED_IDLE)],
                         ids=["sched_other_waits_as_batch", "sched_idle_is_left_alone"])
def test_a_cpu_call_changes_only_a_sched_other_thread_and_gives_its_policy_back(monkeypatch, own, inside):
    model, compiled, recording = _compiled(monkeypatch)

    def call():
        os.sched_setscheduler(0, own, os.sched_param(0))  # a fresh thread: SCHED_OTHER -> itself
        _check(model, compiled, torch.randn(5, 24))
        return os.sched_getscheduler(0)

    after = _in_thread(call)
    assert recording.policies == [inside]
    assert after == own


def test_the_policy_is_given_back_when_the_call_fails(monkeypatch):
    model, compiled, recording = _compiled(monkeypatch)

    def fail(*args):
        recording.policies.append(os.sched_getscheduler(0))
        raise RuntimeError("the device failed")

    recording.invoke = fail

    def call():
        with pytest.raises(RuntimeError, match="the device failed"):
            compiled(torch.randn(5, 24))
        return os.sched_getscheduler(0)

    assert _in_thread(call) == os.SCHED_OTHER
    assert recording.policies == [os.SCHED_BATCH]


def test_braze_cpu_wait_normal_leaves_the_thread_alone(monkeypatch):
    model, compiled, recording = _compiled(monkeypatch, "normal")
    _in_thread(lambda: _check(model, compiled, torch.randn(5, 24)))
    assert recording.policies == [os.SCHED_OTHER]


def test_a_bad_braze_cpu_wait_is_named(monkeypatch):
    monkeypatch.setenv("BRAZE_CPU_WAIT", "spin")
    compiled = braze.compile(_model(), torch.randn(5, 24), cache=False)
    with pytest.raises(InputError, match="BRAZE_CPU_WAIT='spin': expected batch or normal"):
        compiled(torch.randn(5, 24))  # the module loads on its first call

