"""Measured kernel configurations, cached on disk per (kernel signature, target).

    ~/.cache/braze/tuning.json   (or $BRAZE_CACHE_DIR/tuning.json)
    {"sm_90": {"elementwise_16777216_f32xf32_mulf,addf,...": "workgroup=1024 thread=4 threads=256"}}

`fusion-configure-kernels` looks a kernel up here before it falls back to its cost model, so a
winner measured once (`python -m braze.tools.tune`) is reused by every later compile.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path


def cache_path() -> Path:
    root = os.environ.get("BRAZE_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "braze")
    return Path(root) / "tuning.json"


def _load() -> dict:
    path = cache_path()
    try:
        with open(path) as f:
            data = json.load(f)
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def lookup(signature: str, target: str) -> str | None:
    """The cached configuration text for a kernel on a target, or None."""
    text = _load().get(target, {}).get(signature)
    return text if isinstance(text, str) and text else None


def record(signature: str, target: str, config_text: str) -> None:
    """Store a measured winner (atomically: concurrent compiles never read half a file)."""
    data = _load()
    data.setdefault(target, {})[signature] = config_text
    path = cache_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".tuning-", dir=path.parent)
    with os.fdopen(fd, "w") as f:
        json.dump(data, f, indent=2, sort_keys=True)
    os.replace(tmp, path)
