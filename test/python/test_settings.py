"""braze.settings: every BRAZE_ variable read in one place, each bad value an InputError that
names the variable and what it accepts; `braze env` lists them and flags unknown ones."""

import subprocess
import sys

import pytest
import torch

import braze
from braze import settings
from braze.errors import InputError


@pytest.mark.parametrize("value, expected", [("", None), ("1", True), ("ON", True), (" yes ", True),
                                             ("0", False), ("off", False), ("False", False)])
def test_flags(monkeypatch, value, expected):
    monkeypatch.setenv("BRAZE_COMPILE_CACHE", value)
    assert settings.flag("BRAZE_COMPILE_CACHE") is expected


@pytest.mark.parametrize("name, value", [("BRAZE_COMPILE_CACHE", "flase"), ("BRAZE_PROGRESS", "always!"),
                                         ("BRAZE_COMPILE_CACHE_MAX_MIB", "4G"),
                                         ("BRAZE_COMPILE_CACHE_MAX_MIB", "-1"),
                                         ("BRAZE_COMPILE_CACHE_MAX_MIB", "nan"),
                                         ("BRAZE_CPU_THREADS", "0"), ("BRAZE_CPU_THREADS", "2.5")])
def test_a_bad_value_names_the_variable(monkeypatch, name, value):
    monkeypatch.setenv(name, value)
    read = {"BRAZE_COMPILE_CACHE_MAX_MIB": settings.positive_number,
            "BRAZE_CPU_THREADS": settings.positive_int}.get(name, settings.flag)
    with pytest.raises(InputError, match=f"environment variable {name}={value!r}: expected "):
        read(name)


def test_numbers(monkeypatch):
    monkeypatch.setenv("BRAZE_COMPILE_CACHE_MAX_MIB", "0.5")
    assert settings.positive_number("BRAZE_COMPILE_CACHE_MAX_MIB") == 0.5
    monkeypatch.setenv("BRAZE_CPU_THREADS", " 3 ")
    assert settings.positive_int("BRAZE_CPU_THREADS") == 3
    monkeypatch.delenv("BRAZE_CPU_THREADS")
    assert settings.positive_int("BRAZE_CPU_THREADS") is None


def test_only_known_names_are_read():
    with pytest.raises(KeyError, match="BRAZE_NO_SUCH"):
        settings.raw("BRAZE_NO_SUCH")


def test_a_typo_in_the_cache_switch_stops_the_compile(monkeypatch):
    """BRAZE_COMPILE_CACHE=flase used to leave the cache on without a word."""
    monkeypatch.setenv("BRAZE_COMPILE_CACHE", "flase")
    with pytest.raises(InputError, match="BRAZE_COMPILE_CACHE='flase'"):
        braze.compile(torch.nn.ReLU(), torch.randn(3))


def test_braze_env_lists_every_variable_and_unknown_ones():
    env = {"PATH": "/usr/bin:/bin", "BRAZE_CPU_WAIT": "normal", "BRAZE_COMPIL_CACHE": "0"}
    out = subprocess.run([sys.executable, "-m", "braze", "env"], capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    for name in settings.VARIABLES:
        assert any(line.startswith(name + " ") for line in lines), name
    assert any(line.startswith("BRAZE_CPU_WAIT ") and line.split()[1] == "normal" for line in lines)
    assert any(line.startswith("BRAZE_COMPILE_CACHE ") and "(unset)" in line for line in lines)
    assert any(line.startswith("BRAZE_COMPIL_CACHE ") and "typo" in line for line in lines)
