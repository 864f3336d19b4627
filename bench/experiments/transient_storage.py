"""Transient storage on and off, side by side with torch eager, per call on CUDA (bench/NOTES.md §9).

    python bench/experiments/transient_storage.py build DIR   # here
    python bench/experiments/transient_storage.py run DIR     # GPU host

Each workload is compiled twice, with `transient_storage=True` (braze's default: one buffer for
all intermediates, allocated once) and False (IREE allocates them from its CUDA pool on every
call). The run interleaves eager, off and on in rounds, so all three see the same machine.
"""

import os
import sys

from braze.tools.timing import interleaved_ms

NAMES = ("transformer_encoder", "bert_layer", "transformer_encoder_bf16", "bert_layer_bf16", "gelu_mlp",
         "attention", "elementwise_chain")


def build(out: str) -> None:
    import braze
    from braze.testing.zoo import WORKLOADS

    os.makedirs(out, exist_ok=True)
    for name in NAMES:
        model, args = WORKLOADS[name].build("cuda")
        for on in (False, True):
            m = braze.compile(model, *args, device="cuda", target="sm_90", transient_storage=on)
            m.save(os.path.join(out, f"{name}.{'on' if on else 'off'}.braze"), overwrite=True)
            print(f"{name} transient_storage={on}: {m.report.dispatch_count} dispatches", flush=True)


def run(out: str) -> None:
    import torch

    import braze
    from braze.testing.zoo import WORKLOADS

    print(f"{'workload':26s} {'eager ms':>9s} {'off ms':>9s} {'on ms':>9s} {'off/on':>7s} {'on vs eager':>12s} "
          f"{'transient MiB':>14s} {'max |on-eager|':>15s}")
    for name in NAMES:
        model, args = WORKLOADS[name].build("cuda")
        model = model.cuda()
        args = [a.cuda() for a in args]
        off = braze.load(os.path.join(out, f"{name}.off.braze"), device="cuda")
        on = braze.load(os.path.join(out, f"{name}.on.braze"), device="cuda")
        with torch.no_grad():
            expected = model(*args)
            got = on(*args)
            err = float((got.float() - expected.float()).abs().max())

            def eager():
                model(*args)

            med = interleaved_ms({"eager": eager, "off": lambda: off(*args), "on": lambda: on(*args)}, pace="off")
        print(f"{name:26s} {med['eager']:9.3f} {med['off']:9.3f} {med['on']:9.3f} {med['off'] / med['on']:6.2f}x "
              f"{med['eager'] / med['on']:11.2f}x {on.program.transient_bytes / 2**20:14.1f} {err:15.2e}", flush=True)


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("build", "run"):
        sys.exit(__doc__)
    {"build": build, "run": run}[sys.argv[1]](sys.argv[2])
