"""Capturing what native code (MLIR, IREE, LLVM's linker) prints on file descriptor 2, so braze
can fold it into one error message or filter it, instead of leaving it on the user's terminal."""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from typing import Iterator


class Captured:
    """The text written to file descriptor 2 inside a `captured_stderr` block (after it ends)."""

    def __init__(self) -> None:
        self.text = ""

    def getvalue(self) -> str:
        return self.text


def flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()


@contextlib.contextmanager
def captured_stderr(enabled: bool = True) -> Iterator[Captured]:
    """Collect what native code writes to file descriptor 2 while enabled."""
    captured = Captured()
    flush()
    if not enabled:
        yield captured
        flush()
        return
    saved = os.dup(2)
    with tempfile.TemporaryFile(mode="w+b") as sink:
        os.dup2(sink.fileno(), 2)
        try:
            yield captured
        finally:
            flush()
            os.dup2(saved, 2)
            os.close(saved)
            sink.seek(0)
            captured.text = sink.read().decode("utf-8", errors="replace")
