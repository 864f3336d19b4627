"""Single convolutions on the CPU in each form braze or IREE can give them, beside eager
(bench/NOTES.md §39-§40): one thread by default, median of 7 interleaved rounds, one process.

    python bench/experiments/cpu_conv_forms.py [THREADS]

Forms: IREE's direct convolution (NCHW as imported, and channels-last through IREE's
preprocessing pass), braze's im2col + matmul (with and without channels-last), and braze's
default pipeline (whatever its rules choose on this host). Cases: 1x1 and 3x3 convolutions at
three sizes, grouped (4 and 32 groups) and depthwise ones. Each result is checked against
float64 (relative error printed).
"""

import statistics
import sys
import time
import warnings

import iree.runtime as rt
import torch

import braze
from braze.compiler.backend import CHANNELS_LAST_FLAG

warnings.filterwarnings("ignore")
threads = int(sys.argv[1]) if len(sys.argv) > 1 else 1
torch.set_num_threads(threads)
rt.flags.parse_flags(f"--task_topology_group_count={threads}")

CASES = {
    "1x1 64->256 56x56": (lambda: torch.nn.Conv2d(64, 256, 1), (1, 64, 56, 56)),
    "1x1 256->64 56x56": (lambda: torch.nn.Conv2d(256, 64, 1), (1, 256, 56, 56)),
    "3x3 64ch 56x56": (lambda: torch.nn.Conv2d(64, 64, 3, padding=1), (1, 64, 56, 56)),
    "3x3 128ch 28x28": (lambda: torch.nn.Conv2d(128, 128, 3, padding=1), (1, 128, 28, 28)),
    "3x3 256ch 14x14": (lambda: torch.nn.Conv2d(256, 256, 3, padding=1), (1, 256, 14, 14)),
    "3x3 64ch/4 groups 56x56": (lambda: torch.nn.Conv2d(64, 64, 3, padding=1, groups=4), (1, 64, 56, 56)),
    "3x3 128ch/32 groups 28x28": (lambda: torch.nn.Conv2d(128, 128, 3, padding=1, groups=32), (1, 128, 28, 28)),
    "3x3 depthwise 96ch 56x56": (lambda: torch.nn.Conv2d(96, 96, 3, padding=1, groups=96), (1, 96, 56, 56)),
}
FORMS = {
    "direct": {"pipeline": "fusion-cpu-pipeline{conv=direct channels-last=off}"},
    "direct+nhwc": {"pipeline": "fusion-cpu-pipeline{conv=direct}"},
    "im2col": {"pipeline": "fusion-cpu-pipeline{channels-last=off}"},
    "im2col+nhwc": {"pipeline": "fusion-cpu-pipeline", "iree_flags": [CHANNELS_LAST_FLAG]},
    "braze": {},
}

for name, (make, shape) in CASES.items():
    torch.manual_seed(0)
    model, x = make().eval(), torch.randn(shape)
    with torch.no_grad():
        want = model.double()(x.double())
    model.float()
    fns, notes = {}, []
    for form, options in FORMS.items():
        compiled = braze.compile(model, x, cache=False, **options)
        err = float((compiled(x).double() - want).abs().max() / want.abs().max())
        fns[form] = compiled
        notes.append(f"{form} err {err:.1e}")
    fns["eager"] = model
    times = {k: [] for k in fns}
    with torch.no_grad():
        for f in fns.values():
            f(x)
        for _ in range(7):
            for k, f in fns.items():
                t = time.perf_counter()
                for _ in range(5):
                    f(x)
                times[k].append((time.perf_counter() - t) / 5 * 1e3)
    print(f"{name:28s} threads={threads} " + "  ".join(f"{k} {statistics.median(v):.3f}" for k, v in times.items())
          + " ms", flush=True)
    print(f"{'':28s} " + ", ".join(notes), flush=True)
