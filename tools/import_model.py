"""`braze import`: print the linalg-on-tensors IR that braze.compile starts from.

    braze import path/to/model.py:make_model --shape 2,16,256 [--shape ...] [--dtype float32]
    braze import mypkg.models:make_model -o model.mlir

The factory takes no arguments and returns an nn.Module, or a `(module, example_inputs)`
tuple (then --shape is optional). The output feeds straight into braze-opt:

    braze import model.py:make_model | braze-opt -p fusion-default-pipeline
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import os
import sys
from typing import Any, Callable

from braze.errors import BrazeError, UsageError

DTYPES = ("float32", "float16", "bfloat16", "float64", "int32", "int64", "bool")


def _arg_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="braze import",
        description="Import a PyTorch model with torch-mlir and print its linalg-on-tensors IR "
        "(the input of braze's fusion passes; pipe it into braze-opt).",
    )
    p.add_argument("model", metavar="MODEL",
                   help="FILE.py:FACTORY or package.module:FACTORY; FACTORY() returns an nn.Module "
                   "or a (module, example_inputs) tuple")
    p.add_argument("--shape", action="append", default=[], metavar="D0,D1,...",
                   help="shape of one example input (repeat for each positional input)")
    p.add_argument("--dtype", default="float32", choices=DTYPES,
                   help="dtype of the example inputs made from --shape (default float32)")
    p.add_argument("-o", dest="output", default="-", metavar="FILE", help="output file (default stdout)")
    p.add_argument("--mlir-print-debuginfo", action="store_true",
                   help="print locations (they name the model's source lines)")
    return p


def main(argv: list[str] | None = None) -> int:
    args = _arg_parser().parse_args(argv)
    try:
        return _main(args)
    except UsageError as e:
        print(f"braze import: error: {e}", file=sys.stderr)
        return 2
    except BrazeError as e:
        print(f"braze import: error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


def _main(args: argparse.Namespace) -> int:
    model, example = example_inputs(args.model, args.shape, args.dtype)
    text = import_to_text(model, example, debuginfo=args.mlir_print_debuginfo)
    return write_output(args.output, text)


def write_output(path: str, text: str) -> int:
    """Text to stdout ('-') or, whole or not at all, to a file."""
    if path == "-":
        sys.stdout.write(text)
        return 0
    from braze.fileutil import write_atomically

    try:
        write_atomically(path, text.encode("utf-8"), overwrite=True, regular_only=False)
    except OSError as e:
        raise BrazeError(f"cannot write output file '{path}': {e.strerror or e}") from None
    return 0


def import_to_text(model, example: tuple, *, debuginfo: bool = False) -> str:
    """The model's linalg-on-tensors IR as text (what braze.compile's fusion passes receive)."""
    import warnings

    from braze.compiler.frontend import import_model

    with warnings.catch_warnings():
        # torch's own deprecation chatter is not the user's problem; braze's errors still raise.
        warnings.simplefilter("ignore", FutureWarning)
        warnings.simplefilter("ignore", DeprecationWarning)
        imported = import_model(model, tuple(example), {})
    with imported.context:
        text = imported.module.operation.get_asm(enable_debug_info=debuginfo)
    return text if text.endswith("\n") else text + "\n"


MAX_EXAMPLE_BYTES = 1 << 32
"""Largest example input --shape may ask for (4 GiB): a typo should not exhaust memory."""


def parse_shape(text: str) -> tuple[int, ...]:
    parts = text.replace("x", ",").split(",")
    try:
        dims = tuple(int(d) for d in parts)
    except ValueError:
        dims = ()
    if not dims or any(d < 0 for d in dims):
        raise UsageError(f"--shape '{text}' is not a shape: write dimensions as 2,16,256")
    return dims


def random_input(shape: tuple[int, ...], dtype: str):
    import math

    import torch

    torch_dtype = getattr(torch, dtype)
    size = math.prod(shape) * torch.empty((), dtype=torch_dtype).element_size()
    if size > MAX_EXAMPLE_BYTES:
        raise UsageError(f"--shape {','.join(map(str, shape))} asks for a {size / 2**30:.0f} GiB example "
                         f"input of {dtype}; braze import makes inputs of at most {MAX_EXAMPLE_BYTES >> 30} GiB")
    try:
        if dtype == "bool":
            return torch.rand(shape) > 0.5
        if not torch_dtype.is_floating_point:
            return torch.randint(0, 16, shape, dtype=torch_dtype)
        return torch.randn(shape, dtype=torch_dtype)
    except RuntimeError as e:
        raise UsageError(f"cannot make an example input of shape {list(shape)}: {str(e).splitlines()[0]}") from None


def example_inputs(spec: str, shapes: list[str], dtype: str):
    """(model in eval mode, example inputs) from MODEL and --shape/--dtype, as `braze import` and
    `braze compile` take them."""
    dims = [parse_shape(s) for s in shapes]
    factory = load_factory(spec)
    model, example = _call_factory(factory, spec)
    if dims:
        example = tuple(random_input(d, dtype) for d in dims)
    elif example is None:
        raise UsageError(
            f"'{spec}' returned a module without example inputs: give one --shape per "
            "input (e.g. --shape 2,16,256), or make the factory return (module, example_inputs)"
        )
    return model, example


def load_factory(spec: str) -> Callable[[], Any]:
    """`file.py:factory` or `package.module:factory` -> the factory; braze errors otherwise."""
    where, colon, name = spec.rpartition(":")
    if not colon or not where or not name.isidentifier():
        raise UsageError(
            f"MODEL '{spec}' must be FILE.py:FACTORY or package.module:FACTORY, "
            "e.g. models/tiny.py:make_model"
        )
    if where.endswith(".py") or os.sep in where:
        module = _load_file(where, spec)
    else:
        module = _load_module(where, spec)
    factory = getattr(module, name, None)
    if factory is None:
        found = sorted(k for k, v in vars(module).items() if callable(v) and not k.startswith("_"))
        raise BrazeError(
            f"'{where}' has no '{name}' (callables it defines: {', '.join(found) or 'none'}); "
            "name the function that builds the model after the colon"
        )
    if not callable(factory):
        raise BrazeError(f"'{name}' in '{where}' is a {type(factory).__name__}, not a function")
    return factory


def _load_file(path: str, spec: str):
    if not os.path.isfile(path):
        raise BrazeError(f"model file '{path}' (from MODEL '{spec}') does not exist")
    module_name = "_braze_model_" + os.path.splitext(os.path.basename(path))[0].replace("-", "_")
    loader_spec = importlib.util.spec_from_file_location(module_name, path)
    if loader_spec is None or loader_spec.loader is None:
        raise BrazeError(f"cannot load '{path}' as Python (from MODEL '{spec}')")
    module = importlib.util.module_from_spec(loader_spec)
    sys.modules[module_name] = module
    # Let the file import its neighbours, as `python file.py` would.
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    try:
        loader_spec.loader.exec_module(module)
    except BaseException as e:  # the user's file may raise anything, SystemExit included
        raise BrazeError(f"running '{path}' failed: {_one_line(e)}{_where(e, path)}") from None
    return module


def _load_module(name: str, spec: str):
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as e:
        if e.name and name.startswith(e.name):
            raise BrazeError(
                f"no module named '{name}' (from MODEL '{spec}'); for a file write path/to/file.py:FACTORY"
            ) from None
        raise BrazeError(f"importing '{name}' failed: {_one_line(e)}") from None
    except BaseException as e:
        raise BrazeError(f"importing '{name}' failed: {_one_line(e)}") from None


def _call_factory(factory: Callable[[], Any], spec: str) -> tuple[Any, tuple | None]:
    import torch

    try:
        made = factory()
    except BaseException as e:
        raise BrazeError(f"the factory in '{spec}' raised {_one_line(e)}{_where(e, None)}") from None
    example = None
    if isinstance(made, tuple) and len(made) == 2 and isinstance(made[0], torch.nn.Module):
        made, example = made
        example = tuple(example) if isinstance(example, (tuple, list)) else (example,)
    if not isinstance(made, torch.nn.Module):
        raise BrazeError(
            f"the factory in '{spec}' returned a {type(made).__name__}; it must return an "
            "nn.Module or a (module, example_inputs) tuple"
        )
    return made.eval(), example


def _one_line(e: BaseException) -> str:
    text = " ".join(str(e).split())
    return f"{type(e).__name__}: {text}" if text else type(e).__name__


def _where(e: BaseException, path: str | None) -> str:
    """` (at file:line)` for the innermost frame in the user's code."""
    tb, last = e.__traceback__, None
    while tb is not None:
        filename = tb.tb_frame.f_code.co_filename
        if (path and os.path.abspath(filename) == os.path.abspath(path)) or (
            path is None and "braze" not in filename.split(os.sep)[-2:-1]):
            last = f"{filename}:{tb.tb_lineno}"
        tb = tb.tb_next
    return f" (at {last})" if last else ""


if __name__ == "__main__":
    sys.exit(main())
