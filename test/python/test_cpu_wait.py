"""How a thread calling a CPU program waits for IREE's workers (bench/NOTES.md §41): with
BRAZE_CPU_WAIT=batch, SCHED_BATCH during the call and the thread's own policy after it
(runtime._WaitBehindWorkers); with auto, the way each program measured faster
(runtime._WaitChooser)."""

import os
import threading

import pytest
import torch
import torch.nn as nn

import braze
from braze.errors import DeviceError
from braze.runtime import _WaitChooser

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


def test_a_cpu_call_waits_as_batch_and_gives_the_policy_back(monkeypatch):
    model, compiled, recording = _compiled(monkeypatch, "batch")

    def call():
        x = torch.randn(5, 24)
        _check(model, compiled, x)
        return os.sched_getscheduler(0)

    after = _in_thread(call)
    assert recording.policies == [os.SCHED_BATCH]
    assert after == os.SCHED_OTHER


def test_a_thread_that_is_not_sched_other_keeps_its_policy(monkeypatch):
    model, compiled, recording = _compiled(monkeypatch, "batch")

    def call():
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
        _check(model, compiled, torch.randn(5, 24))
        return os.sched_getscheduler(0)

    after = _in_thread(call)
    assert recording.policies == [os.SCHED_IDLE]
    assert after == os.SCHED_IDLE


def test_the_policy_is_given_back_when_the_call_fails(monkeypatch):
    model, compiled, recording = _compiled(monkeypatch, "batch")

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
    with pytest.raises(DeviceError, match="BRAZE_CPU_WAIT='spin'.*'auto', 'batch' or 'normal'"):
        compiled(torch.randn(5, 24))  # the module loads on its first call


class _Clock:
    """A clock that advances only inside invoke, by the time the recorded policy 'costs'."""

    def __init__(self, cost):
        self.now, self.cost = 0.0, cost

    def __call__(self):
        return self.now


@pytest.mark.parametrize("batch_ms, normal_ms, chosen", [(2.0, 3.0, "batch"), (3.0, 2.0, "normal"),
                                                         (2.9, 3.0, "normal")])
def test_auto_keeps_the_way_its_calls_measured_faster(monkeypatch, batch_ms, normal_ms, chosen):
    model, compiled, recording = _compiled(monkeypatch, "auto")
    clock = _Clock({os.SCHED_BATCH: batch_ms / 1e3, os.SCHED_OTHER: normal_ms / 1e3})
    monkeypatch.setattr(_WaitChooser, "clock", staticmethod(clock))
    real = recording.invoke

    def timed(*args):
        out = real(*args)
        clock.now += clock.cost[recording.policies[-1]]
        return out

    recording.invoke = timed
    program = compiled.program
    trial_calls = _WaitChooser.WARMUP + 2 * _WaitChooser.BLOCK * _WaitChooser.ROUNDS

    def calls():
        for i in range(trial_calls + 5):
            assert program.wait_policy == ("trying" if i < trial_calls else chosen)
            _check(model, compiled, torch.randn(5, 24))

    _in_thread(calls)
    # warm-up calls as the thread is, then blocks of trials each way, then the choice every time
    expected_trials = ([os.SCHED_BATCH] * _WaitChooser.BLOCK + [os.SCHED_OTHER] * _WaitChooser.BLOCK) \
        * _WaitChooser.ROUNDS
    assert recording.policies[:_WaitChooser.WARMUP] == [os.SCHED_OTHER] * _WaitChooser.WARMUP
    assert recording.policies[_WaitChooser.WARMUP:trial_calls] == expected_trials
    kept = os.SCHED_BATCH if chosen == "batch" else os.SCHED_OTHER
    assert recording.policies[trial_calls:] == [kept] * 5
    assert program.wait_policy == chosen


def test_auto_is_the_default_and_a_dynamic_build_waits_as_it_is(monkeypatch):
    model, compiled, _ = _compiled(monkeypatch)
    assert compiled.program.wait_policy == "trying"
    batch = torch.export.Dim("batch", min=1, max=32)
    dynamic = braze.compile(nn.Sequential(nn.Linear(24, 8)).eval(), torch.randn(5, 24), cache=False,
                            dynamic_shapes={"input": {0: batch}})
    assert isinstance(dynamic, braze.DynamicModule)
    # its sizes change between calls: timings are not comparable, so no trials
    assert dynamic.dynamic.program.wait_policy == "normal"
