"""What `braze bench`'s two halves share (tools/bench.py for workloads, tools/bench_generate.py
for text generation): torch.compile's modes and their contender names, progress lines, the one
line an error becomes in a result, and resetting torch.compile between contenders."""

from __future__ import annotations

import sys

TORCH_COMPILE_MODES = {"default": "inductor", "reduce-overhead": "inductor-ro", "max-autotune": "inductor-max"}
"""torch.compile's mode -> the contender name results use."""


def progress(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def error_text(e: BaseException) -> str:
    """An exception as one line of at most 600 characters (its first four lines joined)."""
    text = f"{type(e).__name__}: {e}".strip()
    lines = [line for line in text.splitlines() if line.strip()]
    return " | ".join(lines[:4])[:600]


def reset_torch() -> None:
    """Forget torch.compile's compiled graphs, so one contender's do not serve the next."""
    try:
        import torch._dynamo

        torch._dynamo.reset()
    except Exception:
        pass
