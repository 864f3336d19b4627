"""Compile progress on a terminal: which stage a long braze.compile is in.

A tqdm bar on stderr that appears only after DELAY seconds (short compiles print nothing) and
only where someone watches: stderr is a terminal and CI is not set. BRAZE_PROGRESS=0 turns it
off, BRAZE_PROGRESS=1 forces it on (e.g. into a log). Without tqdm installed there is no bar.
"""

from __future__ import annotations

import os
import sys

from braze import settings

DELAY = 2.0
"""Seconds a compile runs before its bar appears."""

STAGES = ("export", "import and braze's passes", "IREE and generated kernels", "done")


def _watched() -> bool:
    return bool(getattr(sys.stderr, "isatty", lambda: False)()) and not os.environ.get("CI")


class Progress:
    def __init__(self, what: str):
        self.bar = None
        forced = settings.flag("BRAZE_PROGRESS")  # None: a bar only where someone watches
        if not (forced if forced is not None else _watched()):
            return
        try:
            from tqdm import tqdm
        except ImportError:
            return
        self.bar = tqdm(total=len(STAGES) - 1, desc=f"braze: {what}", file=sys.stderr, leave=False,
                        delay=0 if forced else DELAY, bar_format="{desc}: {n}/{total} stages [{elapsed}]{postfix}")

    def stage(self, name: str) -> None:
        """Entering `name` (one of STAGES): the previous stage is done."""
        if self.bar is None:
            return
        if name != STAGES[0]:
            self.bar.update(1)
        self.bar.set_postfix_str(name)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()
