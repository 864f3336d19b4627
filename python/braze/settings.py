"""Every environment variable braze reads, in one table, and the one place that reads them.

Each variable has a name, its values and what it changes; `braze env` prints the table with the
values this process sees. A value braze cannot read is an InputError naming the variable and
what it accepts, never a silent default (a typo such as BRAZE_COMPILE_CACHE=flase used to leave
the cache on). Modules ask through `flag`, `text`, `positive_int` and `choice`; no other module
of braze reads os.environ for a BRAZE_ variable (test_layout holds that).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from braze.errors import InputError

TRUE = ("1", "true", "on", "yes")
FALSE = ("0", "false", "off", "no")


@dataclass(frozen=True)
class Variable:
    name: str
    values: str
    """What the variable accepts, and its default, in words."""
    meaning: str


VARIABLES = {v.name: v for v in (
    Variable("BRAZE_CACHE_DIR", "a folder; default ~/.cache/braze",
             "where the compile cache, the generated kernels and the tuning cache live"),
    Variable("BRAZE_COMPILE_CACHE", "1 or 0 (on, off, true, false, yes, no); default on",
             "the persistent compile cache, for every braze.compile whose cache= is None"),
    Variable("BRAZE_COMPILE_CACHE_QUICK", "1 or 0; default on",
             "the compile cache's quick key: a warm entry found without torch.export"),
    Variable("BRAZE_COMPILE_CACHE_MAX_MIB", "a positive number of MiB; default 4096",
             "the compile cache's size bound: past it the entries used longest ago are removed"),
    Variable("BRAZE_CPU_THREADS", "a positive number of threads; default: IREE's (a worker per physical core)",
             "IREE's CPU workers (1: each call on the calling thread, local-sync); "
             "braze.set_cpu_threads() overrides it"),
    Variable("BRAZE_CPU_WAIT", "batch or normal; default batch",
             "how a thread calling a CPU program waits for IREE's workers (batch: SCHED_BATCH during the call)"),
    Variable("BRAZE_IREE_RUNTIME_FLAGS", "iree.runtime flags, shell-quoted; default none",
             "IREE runtime flags applied before the first device opens, after braze's own"),
    Variable("BRAZE_PROGRESS", "1 or 0; default: a bar only on a terminal outside CI",
             "braze.compile's progress bar on stderr"),
    Variable("BRAZE_REPRODUCER_DIR", "a folder; default the temp directory",
             "where braze writes reproducers of compile failures"),
)}


def raw(name: str) -> str:
    """The variable's value as set, stripped ('' when unset)."""
    if name not in VARIABLES:
        raise KeyError(f"braze.settings: {name} is not one of braze's environment variables")
    return os.environ.get(name, "").strip()


def _bad(name: str, value: str) -> InputError:
    return InputError(f"environment variable {name}={value!r}: expected {VARIABLES[name].values} "
                      f"({VARIABLES[name].meaning})")


def flag(name: str) -> bool | None:
    """True or False as the variable says; None when it is unset or empty."""
    value = raw(name).lower()
    if not value:
        return None
    if value in TRUE:
        return True
    if value in FALSE:
        return False
    raise _bad(name, raw(name))


def text(name: str) -> str | None:
    """The variable's text; None when unset or empty."""
    return raw(name) or None


def positive_int(name: str) -> int | None:
    value = raw(name)
    if not value:
        return None
    if not value.isdigit() or int(value) < 1:
        raise _bad(name, value)
    return int(value)


def positive_number(name: str) -> float | None:
    value = raw(name)
    if not value:
        return None
    try:
        number = float(value)
    except ValueError:
        raise _bad(name, value) from None
    if not number > 0 or number == float("inf"):
        raise _bad(name, value)
    return number


def choice(name: str, choices: tuple[str, ...]) -> str | None:
    value = raw(name).lower()
    if not value:
        return None
    if value not in choices:
        raise _bad(name, raw(name))
    return value


def unknown() -> list[str]:
    """BRAZE_ variables set in this environment that braze does not read (BRAZE_TEST_ ones are
    the test suite's own)."""
    return sorted(n for n in os.environ if n.startswith("BRAZE_") and n not in VARIABLES
                  and not n.startswith("BRAZE_TEST_"))


def describe() -> list[tuple[str, str, str, str]]:
    """(name, value this process sees or '(unset)', values, meaning) for each variable."""
    return [(v.name, raw(v.name) or "(unset)", v.values, v.meaning) for v in VARIABLES.values()]
