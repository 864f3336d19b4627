"""How braze runs CPU programs in this process: the driver and thread count (set_cpu_threads,
BRAZE_CPU_THREADS), the device each driver opens, and how a calling thread waits for IREE's
workers (BRAZE_CPU_WAIT). Decided once per process, as IREE makes its CPU device once."""

from __future__ import annotations

import os
import threading

import iree.runtime as rt

from braze import settings
from braze.errors import DeviceError

_LOCK = threading.Lock()


CPU_THREADS_ENV = "BRAZE_CPU_THREADS"
"""Threads for CPU programs when braze.set_cpu_threads was not called (see there)."""

_CPU_THREADS: int | None = None  # set_cpu_threads' value
_CPU_THREADS_SET = False
_CPU_IN_USE: tuple | None = None  # (threads, driver) of the first CPU program this process loaded


def set_cpu_threads(threads: int | None) -> None:
    """How many threads run braze's CPU programs in this process; call it before the first CPU
    module runs (IREE makes its CPU device once per process).

    1: IREE's local-sync driver: the calling thread runs every dispatch itself, no worker
    threads and no hand-over per call (IREE's task system costs 0.1-0.4 ms a call at one
    worker: attention 0.94 -> 0.75 ms, a 256x256 elementwise chain 0.159 -> 0.045; bench/NOTES.md
    §41). N > 1: IREE's local-task driver with N workers. None: local-task with IREE's default,
    a worker per physical core. Without a call, the BRAZE_CPU_THREADS environment variable
    decides, and without it None. torch's own threads are torch.set_num_threads'.
    """
    global _CPU_THREADS, _CPU_THREADS_SET
    if threads is not None and (isinstance(threads, bool) or not isinstance(threads, int) or threads < 1):
        raise DeviceError(f"braze.set_cpu_threads({threads!r}): expected a positive int or None")
    with _LOCK:
        if _CPU_IN_USE is not None and _CPU_IN_USE[0] != threads:
            raise DeviceError(
                f"braze.set_cpu_threads({threads}): this process already runs CPU programs with "
                f"{_describe_threads(_CPU_IN_USE[0])} ({_CPU_IN_USE[1]}), and IREE makes its CPU device "
                "once per process; call set_cpu_threads before the first CPU module runs")
        _CPU_THREADS, _CPU_THREADS_SET = threads, True


def _describe_threads(threads: int | None) -> str:
    return "IREE's default threads" if threads is None else f"{threads} thread{'s' if threads > 1 else ''}"


def cpu_driver_for(threads: int | None) -> str:
    """The IREE driver braze runs CPU programs on with this many threads (set_cpu_threads)."""
    return "local-sync" if threads == 1 else "local-task"


def _cpu_driver() -> str:
    """The driver CPU programs run on (and, for local-task, its worker count set), decided once."""
    global _CPU_IN_USE
    with _LOCK:
        if _CPU_IN_USE is None:
            threads = _CPU_THREADS if _CPU_THREADS_SET else _threads_from_env()
            driver = cpu_driver_for(threads)
            if threads is not None and threads > 1:
                rt.flags.parse_flags(f"--task_topology_group_count={threads}")
            _CPU_IN_USE = (threads, driver)
        return _CPU_IN_USE[1]


def _threads_from_env() -> int | None:
    return settings.positive_int(CPU_THREADS_ENV)


_SYNC_DEVICE = None


def _open_device(driver: str):
    """iree.runtime's cached device for a driver; local-sync's is braze's own, with IREE's caching
    allocator: without it every result is a fresh allocation (a 64 MiB one is mmapped and
    faulted in per call: the 4096x4096 chain took 39.5 ms a call against 7.1 with it; local-task's
    queue reuses its results' memory by itself, bench/NOTES.md §41). Freed results stay cached
    for the next call of the same sizes."""
    global _SYNC_DEVICE
    if driver != "local-sync":
        return rt.get_device(driver)
    with _LOCK:
        if _SYNC_DEVICE is None:
            _SYNC_DEVICE = rt.get_driver(driver).create_default_device(allocators=["caching"])
        return _SYNC_DEVICE


CPU_WAIT_ENV = "BRAZE_CPU_WAIT"
"""How a thread calling a CPU program waits for IREE's workers: 'batch' (the default: SCHED_BATCH
during the call, `_WaitBehindWorkers`) or 'normal' (as iree.runtime leaves it)."""

WAIT_POLICIES = ("batch", "normal")


def _wait_policy() -> str:
    """BRAZE_CPU_WAIT's policy; 'normal' where the OS has no SCHED_BATCH."""
    value = settings.choice(CPU_WAIT_ENV, WAIT_POLICIES) or "batch"
    if not (hasattr(os, "SCHED_BATCH") and hasattr(os, "sched_setscheduler")):
        return "normal"
    return value


class _WaitBehindWorkers:
    """The calling thread runs a CPU call as SCHED_BATCH, and gets its own policy back after.

    IREE 3.13's wait for a call's fence (`hal.fence.await`, iree_async_semaphore_multi_wait)
    spins, after the futex wakes it, until the worker that signalled the fence has left its
    callback. Linux lets a woken SCHED_OTHER thread preempt the thread that woke it; with as many
    workers as cores the caller lands on the signalling worker's core and spins there while that
    worker waits to finish: LayerNorm + GELU at two workers on a 2-core EPYC took 2.9-3.1 ms
    under iree-benchmark-module and 1.76-1.79 ms with every thread SCHED_BATCH, which never
    preempts on wake-up (bench/NOTES.md §41). On a 16-core Xeon one run had it slower and
    another within noise (BRAZE_CPU_WAIT=normal turns it off). Only a thread that is SCHED_OTHER
    is changed (a real-time or idle thread keeps its policy); nice values are kept either way. A
    host that refuses the change (a seccomp profile) runs calls as they are."""

    __slots__ = ("changed",)

    def __enter__(self):
        self.changed = False
        try:
            if os.sched_getscheduler(0) == os.SCHED_OTHER:
                os.sched_setscheduler(0, os.SCHED_BATCH, _SCHED_PARAM)
                self.changed = True
        except OSError:
            pass
        return self

    def __exit__(self, *exc):
        if self.changed:
            try:
                os.sched_setscheduler(0, os.SCHED_OTHER, _SCHED_PARAM)
            except OSError:  # pragma: no cover - going back to SCHED_OTHER is always allowed
                pass
        return False


_SCHED_PARAM = os.sched_param(0) if hasattr(os, "sched_param") else None
