"""The `braze` command: demo, import, bench, devices.

    braze demo                 compile a small transformer block on the CPU, print the report
    braze import MODEL ...     print the linalg IR braze.compile starts from (see braze-opt)
    braze compile MODEL ...    compile a model to an artifact (or --emit mlir: the IR IREE gets)
    braze bench ...            latency, kernels and compile time against torch
    braze tune ...             measure kernel configurations on a GPU host, import the winners
    braze check MODEL ...      compare with eager in float64; bisect to the rewrite that breaks it
    braze cache info|clear     the persistent compile cache (braze.compiler.cache)
    braze devices              which devices iree.runtime can open here
    braze env                  braze's environment variables, their values here and what they change
"""

from __future__ import annotations

import argparse
import sys

from braze.errors import BrazeError, UsageError


def _demo(args) -> int:
    from braze.tools.demo import run_demo

    return run_demo(device=args.device, fusion=not args.no_fusion)


def _tool(name: str):
    """The main() of a subcommand that owns its flags (imported on use: each needs other packages)."""
    import importlib

    module = {"import": "import_model", "compile": "compile_model", "bench": "bench", "tune": "tune",
              "check": "check_model"}[name]
    return importlib.import_module(f"braze.tools.{module}").main


def _cache(args) -> int:
    from braze.compiler import cache

    if args.action == "clear":
        print(f"removed {cache.clear()} compiled modules from {cache.root()}")
        return 0
    found = cache.info()
    print(f"compile cache: {found['path']}\nentries: {found['entries']}\nquick keys: {found['quick_keys']}\n"
          f"size: {found['bytes'] / 2**20:.1f} MiB")
    return 0


def _devices(args) -> int:
    from braze.targets import available_devices

    print("\n".join(available_devices()))
    return 0


def _env(args) -> int:
    from braze import settings

    rows = settings.describe()
    width = max(len(r[0]) for r in rows)
    for name, value, values, meaning in rows:
        print(f"{name:<{width}}  {value}\n{'':<{width}}  {meaning}; {values}")
    for name in settings.unknown():
        print(f"{name:<{width}}  set here, but braze reads no such variable (a typo?)")
    return 0


SUBCOMMANDS = {
    "import": "print a model's linalg IR (braze import -h for options)",
    "compile": "compile a model file to an artifact, or print the IR handed to IREE (braze compile -h)",
    "bench": "benchmark against torch eager and torch.compile (braze bench -h)",
    "tune": "measure GPU kernel configurations and import the winners (braze tune -h)",
    "check": "compare braze with eager on a model, bisect to the rewrite that breaks it (braze check -h)",
}


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    # These subcommands own their flags; hand them the rest of the line untouched.
    if argv and argv[0] in SUBCOMMANDS:
        return _guard(lambda: _tool(argv[0])(argv[1:]))
    parser = argparse.ArgumentParser(prog="braze", description="An MLIR fusion compiler for PyTorch.")
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="compile a small transformer block and compare it with eager PyTorch")
    demo.add_argument("--device", default="cpu", help="cpu (default), cuda, vulkan or auto")
    demo.add_argument("--no-fusion", action="store_true", help="compile without braze's fusion passes")
    demo.set_defaults(fn=_demo)
    for name, help_text in SUBCOMMANDS.items():
        sub.add_parser(name, help=help_text)
    cache = sub.add_parser("cache", help="the persistent compile cache: where it is and how big (info), or empty it (clear)")
    cache.add_argument("action", choices=["info", "clear"])
    cache.set_defaults(fn=_cache)
    devices = sub.add_parser("devices", help="list the devices braze can run on here")
    devices.set_defaults(fn=_devices)
    env = sub.add_parser("env", help="braze's environment variables: their values here and what they change")
    env.set_defaults(fn=_env)
    args = parser.parse_args(argv)
    return _guard(lambda: args.fn(args))


def _guard(fn) -> int:
    try:
        return fn()
    except UsageError as e:
        print(f"braze: error: {e}", file=sys.stderr)
        return 2
    except BrazeError as e:
        print(f"braze: error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
