"""Measured kernel configurations, cached on disk per (kernel signature, target).

    ~/.cache/braze/tuning.json   (or $BRAZE_CACHE_DIR/tuning.json)
    {"sm_90": {"elementwise_16777216_f32xf32_mulf,addf,...": "workgroup=1024 thread=4 threads=256"}}

The GPU passes read a cache only when their `tuning-cache=PATH` option names one;
`braze.compile` passes the user's (`default_path()`), so a winner measured once (`braze tune`)
is reused by every later compile, and the pipeline in the report says which file it read.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from braze.fileutil import cache_home


def default_path() -> Path:
    return cache_home() / "tuning.json"


class TuningCache:
    """One tuning-cache file: {target: {signature: configuration text}}.

    Read once when opened; an unreadable or malformed file (or entry) counts as empty, so a
    damaged cache never stops a compile (the cost model decides instead)."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        self._data = _read(self.path)

    @classmethod
    def open(cls, path: str) -> "TuningCache | None":
        """The cache at `path`, or None for an empty path (a pass option left unset)."""
        return cls(path) if path else None

    def lookup(self, signature: str, target: str) -> str | None:
        """The stored configuration text for a kernel on a target, or None."""
        entries = self._data.get(target)
        text = entries.get(signature) if isinstance(entries, dict) else None
        return text if isinstance(text, str) and text else None

    def record(self, signature: str, target: str, config_text: str) -> None:
        """Store a measured winner (atomically: concurrent compiles never read half a file)."""
        data = _read(self.path)
        if not isinstance(data.get(target), dict):
            data[target] = {}
        data[target][signature] = config_text
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".tuning-", dir=self.path.parent)
        try:
            with os.fdopen(fd, "w") as f:
                json.dump(data, f, indent=2, sort_keys=True)
            os.replace(tmp, self.path)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise
        self._data = data


def _read(path: Path) -> dict:
    try:
        with open(path) as f:
            data = json.load(f)
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError, UnicodeDecodeError):
        return {}
