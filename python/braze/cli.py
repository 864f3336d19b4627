"""The `braze` command: demo, import, bench, devices.

    braze demo                 compile a small transformer block on the CPU, print the report
    braze import MODEL ...     print the linalg IR braze.compile starts from (see braze-opt)
    braze bench ...            latency, kernels and compile time against torch
    braze devices              which devices iree.runtime can open here
"""

from __future__ import annotations

import argparse
import sys

from .errors import BrazeError


def _demo(args) -> int:
    from .demo import run_demo

    return run_demo(device=args.device, fusion=not args.no_fusion)


def _import(argv: list[str]) -> int:
    from braze.tools import import_model

    return import_model.main(argv)


def _bench(argv: list[str]) -> int:
    from braze.tools import bench

    return bench.main(argv)


def _devices(args) -> int:
    from .targets import available_devices

    print("\n".join(available_devices()))
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    # `import` and `bench` own their flags; hand them the rest of the line untouched.
    if argv and argv[0] == "import":
        return _guard(lambda: _import(argv[1:]))
    if argv and argv[0] == "bench":
        return _guard(lambda: _bench(argv[1:]))
    parser = argparse.ArgumentParser(prog="braze", description="An MLIR fusion compiler for PyTorch.")
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="compile a small transformer block and compare it with eager PyTorch")
    demo.add_argument("--device", default="cpu", help="cpu (default), cuda, vulkan or auto")
    demo.add_argument("--no-fusion", action="store_true", help="compile without braze's fusion passes")
    demo.set_defaults(fn=_demo)
    sub.add_parser("import", help="print a model's linalg IR (braze import -h for options)")
    sub.add_parser("bench", help="benchmark against torch eager and torch.compile (braze bench -h)")
    devices = sub.add_parser("devices", help="list the devices braze can run on here")
    devices.set_defaults(fn=_devices)
    args = parser.parse_args(argv)
    return _guard(lambda: args.fn(args))


def _guard(fn) -> int:
    try:
        return fn()
    except BrazeError as e:
        print(f"braze: error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
