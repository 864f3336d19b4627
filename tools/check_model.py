"""`braze check`: is braze right on this model, and if not, which rewrite breaks it?

    braze check path/to/model.py:make_model --shape 8,3,32,32 [--device cpu] [--passes-of cuda]
    braze check MODEL --device cuda --target sm_90 --build DIR     (here: every decision limit)
    braze check --run DIR                                          (on the GPU host: find the bad one)

Prints eager's, the unfused build's and braze's error against float64 eager and, when only
braze is wrong, the first of braze's rewrite decisions that breaks the model, with a
reproducer (see braze.check). Exits 1 when braze is wrong.
"""

from __future__ import annotations

import argparse
import sys
import warnings

from braze.errors import BrazeError, UsageError

from .import_model import DTYPES, example_inputs


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="braze check", description=__doc__.splitlines()[0])
    p.add_argument("model", metavar="MODEL", nargs="?", help="FILE.py:FACTORY or package.module:FACTORY (as braze import)")
    p.add_argument("--shape", action="append", default=[], metavar="D0,D1,...")
    p.add_argument("--dtype", default="float32", choices=DTYPES)
    p.add_argument("--device", default="cpu", help="where to compile and run (needs the device here)")
    p.add_argument("--target", default=None)
    p.add_argument("--passes-of", default=None, choices=("cuda",),
                   help="check another device's pipeline, compiled for --device (e.g. cuda's passes on the CPU)")
    p.add_argument("--no-bisect", action="store_true", help="only compare, do not bisect")
    p.add_argument("--build", metavar="DIR", help="compile every decision limit for --device into DIR (no run)")
    p.add_argument("--run", metavar="DIR", help="run what --build made, on this machine's device")
    args = p.parse_args(argv)
    try:
        import braze

        if args.run:
            from braze.check import run_bisection

            result = run_bisection(args.run)
            print(result)
            return 0 if result.ok else 1
        if not args.model:
            raise UsageError("give MODEL (or --run DIR)")
        model, example = example_inputs(args.model, args.shape, args.dtype)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            warnings.simplefilter("ignore", DeprecationWarning)
            if args.build:
                from braze.check import build_bisection

                n = build_bisection(model, tuple(example), args.build, device=args.device, target=args.target)
                print(f"braze check: {n} decisions; {n + 2} builds in {args.build}; run `braze check --run "
                      f"{args.build}` where the device is")
                return 0
            result = braze.check(model, *example, device=args.device, target=args.target,
                                 passes_of=args.passes_of, bisect=not args.no_bisect)
    except UsageError as e:
        print(f"braze check: error: {e}", file=sys.stderr)
        return 2
    except BrazeError as e:
        print(f"braze check: error: {e}", file=sys.stderr)
        return 1
    print(result)
    return 0 if result.ok else 1


if __name__ == "__main__":
    sys.exit(main())
