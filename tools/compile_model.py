"""`braze compile`: compile a model from a Python file to an artifact, or print the IR braze
hands to IREE.

    braze compile path/to/model.py:make_model --shape 2,16,256 -o model.braze [--device cuda --target sm_90]
    braze compile model.py:make_model --shape 2,16,256 --device cuda --target sm_90 --emit mlir
    braze compile model.py:make_model --device cuda --target sm_90 --emit iree-input -o m.mlir --flags-file m.flags
    iree-compile @m.flags m.mlir -o m.vmfb

`--emit mlir` prints the module after braze's pipeline (what `braze.compile` hands to IREE):
the same text as `braze import ... | braze-opt -p <the pipeline in the report>`.
`--emit iree-input` prints what IREE's compiler then receives: that module after the back end's
rewrites (generated kernels embedded, kernel configurations applied, main wrapped for braze's
buffers, the device target attached), with the iree-compile flags in its header comment and,
one per line, in `--flags-file` (an LLVM response file: `iree-compile @FILE`).
"""

from __future__ import annotations

import argparse
import sys

from braze.errors import BrazeError

from .import_model import DTYPES, UsageError, example_inputs, write_output


def _arg_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="braze compile", description=__doc__.splitlines()[0])
    p.add_argument("model", metavar="MODEL", help="FILE.py:FACTORY or package.module:FACTORY (as braze import)")
    p.add_argument("--shape", action="append", default=[], metavar="D0,D1,...",
                   help="shape of one example input (repeat for each positional input)")
    p.add_argument("--dtype", default="float32", choices=DTYPES, help="dtype of the --shape inputs")
    p.add_argument("--device", default="cpu", help="cpu (default), cuda, vulkan or auto")
    p.add_argument("--target", default=None, help="compile for another machine: sm_90, ampere, an LLVM CPU")
    p.add_argument("--no-fusion", action="store_true", help="compile without braze's passes (the baseline)")
    p.add_argument("--pipeline", default=None, help="a pass pipeline to run instead of the device's")
    p.add_argument("--emit", choices=("artifact", "mlir", "iree-input"), default="artifact",
                   help="artifact: a .braze file (default); mlir: the IR after braze's passes; iree-input: "
                        "the module IREE's compiler receives, after the back end's rewrites")
    p.add_argument("--flags-file", default=None, metavar="FILE",
                   help="with --emit iree-input: write the iree-compile flags there, one per line "
                        "(iree-compile @FILE replays the compile)")
    p.add_argument("-o", dest="output", default=None, metavar="FILE",
                   help="output file (an artifact needs one; mlir defaults to stdout)")
    p.add_argument("--overwrite", action="store_true", help="replace an existing artifact")
    p.add_argument("--report", action="store_true", help="print the compile report to stderr")
    return p


def main(argv: list[str] | None = None) -> int:
    args = _arg_parser().parse_args(argv)
    try:
        return _main(args)
    except UsageError as e:
        print(f"braze compile: error: {e}", file=sys.stderr)
        return 2
    except BrazeError as e:
        print(f"braze compile: error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


def _main(args: argparse.Namespace) -> int:
    import warnings

    import braze
    from braze.compiler import lower

    if args.emit == "artifact" and not args.output:
        raise UsageError("an artifact needs -o FILE (e.g. -o model.braze); --emit mlir prints the IR instead")
    if args.flags_file and args.emit != "iree-input":
        raise UsageError("--flags-file goes with --emit iree-input (the flags of the module it prints)")
    model, example = example_inputs(args.model, args.shape, args.dtype)
    options = dict(device=args.device, target=args.target, fusion=not args.no_fusion, pipeline=args.pipeline)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        warnings.simplefilter("ignore", DeprecationWarning)
        if args.emit in ("mlir", "iree-input"):
            lowered = lower(model, *example, **options)
            if args.report:
                print(lowered.report, file=sys.stderr)
            if args.emit == "mlir":
                return write_output(args.output or "-", lowered.text())
            return _emit_iree_input(lowered, args)
        compiled = braze.compile(model, *example, **options)
    if args.report:
        print(compiled.report, file=sys.stderr)
    compiled.save(args.output, overwrite=args.overwrite)
    print(f"wrote {args.output}: {compiled!r}", file=sys.stderr)
    return 0


def _emit_iree_input(lowered, args: argparse.Namespace) -> int:
    import shlex

    from braze.compiler.stages import iree_input

    text, flags = iree_input(lowered)
    where = args.output if args.output and args.output != "-" else "FILE.mlir"
    header = (f"// The module braze.compile hands IREE's compiler for {lowered.report.model} on "
              f"{lowered.target.describe()},\n"
              "// after the back end's rewrites. Replay (what braze changes inside IREE's pipeline, Vulkan's\n"
              "// configuration workarounds and the CUDA launch plan, is not in it):\n"
              f"//   iree-compile {' '.join(shlex.quote(f) for f in flags)} {where} -o module.vmfb\n")
    if args.flags_file:
        write_output(args.flags_file, "".join(f + "\n" for f in flags))
    return write_output(args.output or "-", header + text + ("" if text.endswith("\n") else "\n"))


if __name__ == "__main__":
    sys.exit(main())
