"""braze.compile: the stages from a torch model to a CompiledModule, in order.

    fast = braze.compile(model, x, device="cpu")   # export, import, fuse, IREE compile
    y = fast(x)                                    # torch in, torch out (braze.runtime)
    print(fast.report)

export and import (frontend), braze's passes (braze.passes, the device's pipeline), IREE
(backend), the CUDA launch plan (cuda_plan); the persistent cache (cache) wraps them.
`lower` runs the stages up to what IREE would compile, for tools and tests.
"""

from __future__ import annotations

import io
import json
import pathlib
import platform
import tempfile
import time
import warnings
from dataclasses import dataclass
from typing import Any

from braze import __version__
from braze.compiler import cache as compile_cache
from braze.compiler.options import CompileOptions
from braze.errors import BrazeWarning, CompileError, InputError
from braze.report import Report
from braze.runtime.module import CompiledModule, load
from braze.signature import Signature
from braze.targets import Target, resolve

ATTENTION_AS_ONE_OP = {"cuda": ("bfloat16", "float16")}
"""Where compile(attention=None) lowers attention to one op: device -> dtypes (bench/NOTES.md §12);
float32 too on CUDA where braze generates the kernel (IREE's own float32 one is slow)."""
_FLOAT_DTYPES = ("bfloat16", "float16", "float32", "float64")


def _itemsize(spec) -> int:
    return {"float64": 8, "int64": 8, "complex128": 16, "complex64": 8, "float32": 4, "int32": 4,
            "float16": 2, "bfloat16": 2, "int16": 2, "int8": 1, "uint8": 1, "bool": 1}[spec.dtype]


def _nbytes(spec) -> int:
    n = 1
    for d in spec.shape:
        n *= d
    return n * _itemsize(spec)


def _check_precision(precision) -> None:
    from braze.passes import pipelines

    if precision not in (None,) + pipelines.PRECISIONS:
        raise InputError(f"precision={precision!r}: use 'highest' (float32 matmuls and convolutions as accurate "
                         "as float32), 'high' (TF32) or None (as torch's allow_tf32 flags say)")


def device_pipeline(target: Target, fusion: bool = True, precision: str | None = None) -> str:
    """The pipeline braze.compile runs for a target: the device's (with the user's tuning cache
    on CUDA) or, without fusion, the baseline."""
    from braze.passes.gpu import tuning
    from braze.passes import pipelines

    if not fusion:
        return pipelines.BaselinePipeline(f64_math="keep" if target.device == "cuda" else "expand").pipeline_text()
    _check_precision(precision)
    return pipelines.for_device(target.device, target.arch, str(tuning.default_path()),
                                precision).pipeline_text(("target",))


def versions() -> dict:
    import importlib.metadata as md

    found = {"braze": __version__, "python": platform.python_version()}
    for dist, key in (("torch", "torch"), ("torch-mlir", "torch_mlir"),
                      ("iree-base-compiler", "iree_compiler"), ("iree-base-runtime", "iree_runtime")):
        try:
            found[key] = md.version(dist)
        except md.PackageNotFoundError:
            pass
    return found


def compile(model, *example_inputs, device: str = "cpu", target: str | None = None,
            fusion: bool = True, pipeline: str | None = None, example_kwargs: dict | None = None,
            output_storage: bool | None = None, transient_storage: bool = True, iree_flags: list[str] | None = None,
            attention: bool | None = None, decision_limit: int | None = None, runtime: str | None = None,
            cache: bool | None = None, partial: bool = False, precision: str | None = None,
            dynamic_shapes=None, specialize: str = "example", inputs_in_place: bool = False,
            **options) -> CompiledModule:
    """Compile a torch.nn.Module for a device.

    device: 'cpu' (default), 'cuda', 'vulkan' or 'auto' (cuda, else vulkan, else cpu).
    target: compile for another machine: a CUDA capability ('sm_90'), a Vulkan target
      ('ampere') or an LLVM CPU name; the result runs there after save()/load().
    fusion: False compiles without braze's fusion passes (the baseline).
    pipeline: a pass pipeline to run instead of fusion-default-pipeline.
    example_kwargs: keyword arguments of forward(), as in the example call.
    output_storage: results are written into tensors braze allocates with torch (True) or
      into IREE's own buffers (False); the default is True for cuda, False elsewhere.
    transient_storage: intermediates live in one buffer that the module allocates on its first
      call and reuses (True, the default), or IREE allocates and frees them on every call
      (False: less memory held between calls, slower calls; see bench/NOTES.md §9).
    iree_flags: extra iree-compile flags, after braze's own (e.g. ['--iree-hal-memoization=false']).
    attention: compile softmax(q k^T * c) v, written out or as scaled_dot_product_attention, as
      one attention op (one dispatch) instead of matmul, softmax, matmul. The default (None)
      does so where that measured faster: cuda in bfloat16/float16, and in float32 where braze
      generates the kernel (a flash-attention kernel of braze's; bench/NOTES.md §12, §18).
      IREE 3.13's own float32 attention kernel on CUDA and its CPU one ran far slower than the
      three dispatches, and it cannot compile the op for Vulkan.
    runtime: how a CUDA module runs: 'launch' (braze's launcher: IREE's kernels issued on torch's
      current stream, asynchronously, capturable in torch.cuda.graph; needs a launch plan, which
      braze reads off IREE's program), 'iree' (iree.runtime, synchronous), or None (the launcher
      when the module has a plan and torch has the GPU, else iree.runtime; always iree.runtime
      on the CPU and Vulkan). The report says which and, without a plan, why.
    decision_limit: apply only the first N rewrite decisions braze's passes make (groups formed,
      convolutions rewritten, tiles attached; `report.decisions` lists them all), as LLVM's
      -opt-bisect-limit: braze.check bisects it to find the decision that breaks a model.
    cache: keep and reuse compiles in the persistent compile cache (braze.compiler.cache: keyed on the
      exported program, its weights, the target, these options and the versions; a hit skips
      import, fusion and IREE). None (the default): on unless BRAZE_COMPILE_CACHE=0.
    partial: where an op cannot be lowered, run it in eager and compile the rest in pieces
      (braze.compiler.partition; the result is a PartialModule, whose report lists the ops in eager);
      False (the default): such a model raises UnsupportedOpError. On under torch.compile.
    precision: how float32 matmuls and convolutions run on CUDA: 'highest' (as accurate as
      float32: 3xTF32), 'high' (TF32), or None (the default: as torch would, matmuls in TF32 only
      where torch.backends.cuda.matmul.allow_tf32 is set, convolutions where
      torch.backends.cudnn.allow_tf32 is, which it is by default). The report's pipeline says which.
    dynamic_shapes: sizes that change from call to call, in torch.export's form (e.g.
      {"x": {0: torch.export.Dim("batch", max=64)}}): the result is a DynamicModule, which runs a
      build with those sizes dynamic (IREE's dynamic dimensions; braze's passes leave ops whose
      sizes are dynamic to IREE, and it runs on iree.runtime) for every size in range, and
      a static build (every braze pass, generated kernels, the CUDA launch plan) for the shapes
      of the example inputs: at most two compiles for any number of sizes (braze.compiler.dynamic).
    specialize: which shapes get the static build beside the dynamic one: 'example' (the
      default: the example inputs' shapes) or 'none' (the dynamic build alone).
    inputs_in_place: inputs the model updates in place (`cache.index_copy_(...)`, `x.add_(1)`)
      are written by the program where they are (IREE's iree.abi.output tie), as eager does,
      instead of into copies that braze writes back after the call (the default, False): no
      copy of a big buffer such as a KV cache per call, but a call that fails may leave them
      partly written. On CUDA the launch plan hands each such input back as its own result.
    """
    if options:
        raise TypeError(f"braze.compile() got unknown options: {', '.join(sorted(options))}")
    opts = CompileOptions.from_call(device=device, target=target, fusion=fusion, pipeline=pipeline,
                                    output_storage=output_storage, transient_storage=transient_storage,
                                    iree_flags=iree_flags, attention=attention, decision_limit=decision_limit,
                                    runtime=runtime, cache=cache, precision=precision,
                                    inputs_in_place=inputs_in_place)
    if dynamic_shapes is not None:
        from braze.compiler.dynamic import compile_dynamic

        if partial:
            raise InputError("dynamic_shapes= with partial=True is not supported yet: compile the dynamic "
                             "model whole (partial=False)")
        return compile_dynamic(compile, _compile_dynamic_build, model, example_inputs, example_kwargs, dynamic_shapes,
                               specialize, opts)
    if partial:
        from braze.compiler.partition import compile_partial

        return compile_partial(compile, model, example_inputs, example_kwargs, **opts.call_kwargs())
    if getattr(model, "training", False):
        warnings.warn(
            f"braze.compile: {type(model).__name__} is in training mode: forward() is compiled as it runs now "
            "(batch statistics, dropout), and the compiled module computes no gradients. For inference, "
            "call model.eval() first.", BrazeWarning, stacklevel=2)
    from braze.progress import Progress

    with Progress(type(model).__name__) as progress:
        return _cached(progress, model, example_inputs, example_kwargs, opts)


def _compile_dynamic_build(model, example_inputs, example_kwargs, dynamic_shapes,
                           opts: CompileOptions) -> "CompiledModule":
    """The dynamic build of braze.compile(dynamic_shapes=...). On CUDA it runs on braze's
    launcher where IREE's program can be planned (sizes, grids and offsets evaluated from each
    call's input shapes; results in torch tensors of the sizes the plan computes), else on
    iree.runtime with the results in IREE's own buffers; elsewhere on iree.runtime, its
    intermediates in the module's transient buffer sized per call by IREE's query."""
    from braze.progress import Progress

    with Progress(type(model).__name__ + " (dynamic)") as progress:
        return _cached(progress, model, example_inputs, example_kwargs, opts, dynamic_shapes)


def _cached(progress, model, example_inputs, example_kwargs, opts: CompileOptions, dynamic_shapes=None):
    """braze.compile's work after its argument checks: the stages (_compile_stages) behind the
    persistent compile cache (compile_cache.cached_compile)."""
    progress.stage("export")

    def stages(exported=None):
        return _compile_stages(progress, model, example_inputs, example_kwargs, opts, dynamic_shapes, exported)

    if not compile_cache.enabled(opts.cache):
        return stages()
    from braze.compiler import frontend
    from braze.passes.gpu.tuning import default_path

    tgt = resolve(opts.device, opts.target)
    choices = opts.cache_choices()
    if dynamic_shapes is not None:
        from braze.compiler.dynamic import describe_dynamic_shapes

        choices["dynamic_shapes"] = describe_dynamic_shapes(dynamic_shapes)
    # The pipeline's own text (printed without MLIR: the registry loads a pass when it runs)
    # holds what decides it: the device's options, TF32 as torch's flags say, Triton or not.
    identity = compile_cache.Identity(choices, tgt.cache_identity(),
                                      opts.pipeline or device_pipeline(tgt, opts.fusion, opts.precision),
                                      str(default_path()), versions())
    return compile_cache.cached_compile(
        model, example_inputs, example_kwargs, identity,
        export=lambda: frontend.export(model, example_inputs, example_kwargs or {}, dynamic_shapes),
        compile_exported=stages, load_artifact=load, runtime=opts.runtime)


def _compile_stages(progress, model, example_inputs, example_kwargs, opts: CompileOptions, dynamic_shapes=None,
                    exported=None) -> CompiledModule:
    """The stages after export, in order: import and braze's passes (lower), IREE and the
    generated kernels (backend), the CUDA launch plan; progress shows which."""
    progress.stage("import and braze's passes")
    lowered = lower(model, *example_inputs, device=opts.device, target=opts.target, fusion=opts.fusion,
                    pipeline=opts.pipeline, example_kwargs=example_kwargs, attention=opts.attention,
                    decision_limit=opts.decision_limit, exported=exported, precision=opts.precision,
                    dynamic_shapes=dynamic_shapes)
    tgt, report = lowered.target, lowered.report
    runtime, output_storage, transient_storage = opts.runtime, opts.output_storage, opts.transient_storage
    if transient_storage and lowered.tensor_loops:
        from braze.irutil import short_location

        transient_storage = False
        report.extra["transient_storage"] = (
            f"off: a loop carries tensors ({short_location(lowered.tensor_loops[0])}), whose values IREE 3.13 "
            "cannot place in a transient buffer braze provides (passes/abi.tensor_loops)")
    from braze.compiler import backend

    t0 = time.perf_counter()
    if output_storage is None:
        output_storage = backend.default_output_storage(tgt)
    plan_sizes = None
    tied = ()
    if opts.inputs_in_place:
        # mutation j is the program's result j; an input's slot follows the state arguments
        ahead = len(lowered.signature.state)
        tied = tuple((ahead + m["index"], j) for j, m in enumerate(lowered.signature.mutations) if m["kind"] == "input")
    if tgt.device == "cuda" and runtime != "iree":
        if output_storage:
            # A dynamic build's sizes: an input's (shape, bytes an element), an output's None
            # (both become the plan's per-call arithmetic, braze.compiler.cuda_plan).
            plan_sizes = ([(list(s.shape), _itemsize(s)) if s.dynamic else _nbytes(s)
                           for s in lowered.signature.program_inputs],
                          [None if s.dynamic else _nbytes(s) for s in lowered.signature.outputs])
        else:
            report.launch_plan = "none: output_storage=False leaves the results in IREE's own buffers"
    progress.stage("IREE and generated kernels")
    flags = _iree_flags(lowered, list(opts.iree_flags))
    # The module reaches IREE's compiler through a file, as a path: no bytes of it in memory
    # beside the module itself (a decoder's weights are gigabytes; bench/NOTES.md §52).
    with tempfile.TemporaryDirectory(prefix="braze-lowered-") as scratch:
        source = pathlib.Path(scratch, "lowered.mlirbc")
        lowered.write_bytecode(source)

        def iree(float64: bool, **options):
            return backend.compile_for_target(source, tgt, flags, transient_storage=transient_storage,
                                              what=f"{type(model).__name__} for {tgt.describe()}", float64=float64,
                                              aggressive_fusion=lowered.aggressive_fusion,
                                              mmt4d_tiles=lowered.mmt4d_tiles, tied=tied, **options)

        float64 = lowered.float64
        try:
            try:
                compiled = iree(float64, output_storage=output_storage, launch_plan=plan_sizes)
            except CompileError as e:
                fewer = _without_channels_last(flags, report, e)
                if fewer is not None:
                    flags = fewer
                    compiled = iree(float64, output_storage=output_storage, launch_plan=plan_sizes)
                elif output_storage and any(s.dynamic for s in lowered.signature.outputs):
                    # A result whose size the program computes from values (bincount's: the largest
                    # input + 1): IREE 3.13 cannot alias it into a caller's buffer ("'arith.addi' op
                    # using value defined outside the region", bench/NOTES.md §58), and no plan could
                    # size that buffer before the call anyway: the results stay in IREE's buffers.
                    output_storage, plan_sizes = False, None
                    report.launch_plan = ("none: a result's size is computed from values, which "
                                          "IREE cannot write into a caller's buffer")
                    try:
                        compiled = iree(float64, output_storage=False)
                    except CompileError:
                        raise e from None
                else:
                    raise
        except CompileError as kept_error:
            if not lowered.float64_inside:
                raise
            # float64 the model computes only inside, which IREE's CPU code generator cannot always
            # compile (float64 erf, sin): IREE's demotion, said aloud
            float64 = False
            try:
                compiled = iree(float64, output_storage=output_storage, launch_plan=plan_sizes)
            except CompileError:
                raise kept_error from None
            first = str(kept_error).splitlines()[0].removeprefix(
                f"IREE failed to compile {type(model).__name__} for {tgt.describe()}: ")
            report.extra["float64"] = f"demoted to float32: IREE could not compile it kept ({first})"
            warnings.warn(
                f"braze.compile: IREE cannot compile {type(model).__name__}'s float64 work for {tgt.describe()} "
                f"({lowered.float64_inside}; {first}): braze let IREE demote that float64 to float32, and results "
                "can differ from eager's where float32 loses precision. Compute those ops in float32 to say so.",
                BrazeWarning, stacklevel=4)
        plan = None
        if plan_sizes is not None:
            if isinstance(compiled.at_hal, str):
                report.launch_plan = f"none: {compiled.at_hal}"
            else:
                plan = compiled.at_hal
                report.launch_plan = (f"{sum(s.op == 'dispatch' for s in plan.steps)} kernels, "
                                      f"{sum(s.op != 'dispatch' for s in plan.steps)} fills/copies, " +
                                      (f"sizes from the inputs' shapes ({len(plan.exprs)} expressions)" if plan.symbolic
                                       else f"{plan.transient_bytes} transient bytes"))
        if plan is None and output_storage and any(s.dynamic for s in lowered.signature.outputs):
            # iree.runtime cannot size a dynamic result's storage before the call without the plan's
            # arithmetic: compile again with the results in IREE's own buffers.
            output_storage = False
            compiled = iree(float64, output_storage=False)
    if runtime == "launch" and plan is None:
        raise CompileError(f"runtime='launch': {type(model).__name__} has no CUDA launch plan "
                           f"({report.launch_plan or 'not compiled for CUDA'}); compile with runtime='iree'")
    report.stage_seconds["iree_compile"] = time.perf_counter() - t0
    report.dispatch_count = compiled.dispatch_count
    report.dispatch_fusion = compiled.dispatch_fusion
    if tgt.device == "cpu":
        from braze.compiler.cpu_tiles import summary

        if lowered.mmt4d_tiles is not None:
            report.cpu_codegen += f"; float32 mmt4d tiles ({lowered.mmt4d_tiles}): {summary(compiled.workarounds)}"
    else:
        report.iree_workarounds = list(compiled.workarounds)
    report.executable_count = compiled.executable_count
    module = CompiledModule(compiled.vmfb, tgt, lowered.signature, report, versions(),
                            source=f"the compiled {type(model).__name__}",
                            abi={"output_storage": output_storage, "transient_storage": transient_storage,
                                 "copy_inputs": sorted(lowered.copy_inputs - {a for a, _ in tied}),
                                 "tied": [list(pair) for pair in tied],
                                 "copy_outputs": sorted(lowered.copy_outputs)},
                            state=model if lowered.signature.state else None, plan=plan,
                            runtime=runtime or "auto")
    progress.stage("done")
    return module


def iree_input(lowered: "Lowered", iree_flags=(), output_storage: bool | None = None,
               transient_storage: bool = True) -> tuple[str, list[str]]:
    """What braze.compile hands IREE's compiler for a lowered model, without compiling: the
    module text after the back end's module hooks (generated kernels embedded, kernel and
    matmul configurations applied, main wrapped for braze's buffers, the CUDA device target
    attached, Vulkan's bf16 widening) and the iree-compile flags, as _compile_stages chooses
    them. `iree-compile FLAGS FILE` compiles the text as braze.compile does, except for what
    braze changes inside IREE's pipeline (Vulkan's configuration workarounds, the launch plan
    read at the hal phase). `braze compile --emit iree-input` prints it."""
    from braze.compiler import backend

    if output_storage is None:
        output_storage = backend.default_output_storage(lowered.target)
    return backend.iree_input(lowered.bytecode(), lowered.target, _iree_flags(lowered, list(iree_flags)),
                              output_storage=output_storage,
                              transient_storage=transient_storage and not lowered.tensor_loops,
                              float64=lowered.float64, aggressive_fusion=lowered.aggressive_fusion)


def _pooled_pads(module_op) -> int:
    """How many pooling ops read a tensor.pad (IREE makes each such pad a fill and a slow_memcpy
    copy dispatch of its own unless told to fuse it into the pool: backend.PAD_FUSION_FLAG).
    NHWC pools (fusion-channels-last's) measured on the GPU in bench/NOTES.md §49, NCHW ones (a
    ResNet's max pool after its NCHW stem, the default) in §54."""
    from braze.irutil import all_ops

    pools = [op for op in all_ops(module_op) if op.name.startswith(("linalg.pooling_nhwc", "linalg.pooling_nchw"))]
    return sum(1 for op in pools if getattr(op.operands[0].owner, "name", "") == "tensor.pad")


def _without_channels_last(flags: list[str], report, error: Exception) -> list[str] | None:
    """`flags` without braze's channels-last preprocessing, after IREE failed with it (IREE 3.13's
    conversion produced invalid IR for the weight gradient of a 320 -> 4 channel convolution's
    backward: "'linalg.yield' op expected number of yield values (2) ..."), with the report
    saying so; None where braze did not add it (the failure stands). A speed choice of braze's
    must never make a compile fail that IREE's defaults compile."""
    from braze.compiler.backend import CHANNELS_LAST_FLAG

    if CHANNELS_LAST_FLAG not in flags:
        return None
    first = str(error).splitlines()[0]
    report.cpu_codegen = report.cpu_codegen.split("; convolutions channels-last:")[0] + (
        f"; convolutions left NCHW (IREE failed with channels-last: {first[:200]})")
    return [f for f in flags if f != CHANNELS_LAST_FLAG]


def _iree_flags(lowered: "Lowered", user: list[str]) -> list[str]:
    """braze's iree-compile flags, then the user's. A preprocessing pipeline of the user's
    replaces braze's (IREE keeps the last one given), and the report says so."""
    from braze.compiler.backend import CHANNELS_LAST_FLAG

    ours = list(lowered.iree_flags)
    pipeline = "--iree-preprocessing-pass-pipeline"
    if CHANNELS_LAST_FLAG in ours and any(f.split("=", 1)[0] == pipeline for f in user):
        ours.remove(CHANNELS_LAST_FLAG)
        lowered.report.cpu_codegen = lowered.report.cpu_codegen.replace(
            "; convolutions channels-last:", "; convolutions left NCHW (the iree_flags' own preprocessing pipeline "
            "replaces braze's channels-last one):")
    return ours + user


@dataclass
class Lowered:
    """A model after braze's front end and pass pipeline: the module braze.compile hands to IREE."""

    target: Target
    signature: Signature
    report: Report
    module: Any
    """The linalg module (torch-mlir's bindings), in `context`."""
    context: Any
    copy_inputs: frozenset = frozenset()
    """Program inputs IREE may write in place (passes/abi.py): the runtime passes copies."""
    copy_outputs: frozenset = frozenset()
    """Program outputs that may alias an input or a constant: the runtime returns copies."""
    float64: bool = False
    """Whether IREE keeps the program's 64-bit floats instead of demoting them (frontend.keeps_float64)."""
    iree_flags: tuple[str, ...] = ()
    """iree-compile flags braze's pipeline chose (fusion-cpu-codegen's data tiling), before the user's."""
    aggressive_fusion: bool | None = None
    """IREE's aggressive dispatch fusion (backend.AGGRESSIVE_FUSION): None for the target's
    default; True on the CPU where fusion-form-groups ran, which keeps the bf16 round trips that
    IREE's CPU code generator would fold once fused (bench/NOTES.md §37)."""
    float64_inside: str = ""
    """Where float64 is kept only inside the program (its ops): if IREE cannot compile them
    (float64 erf or sin on the CPU), braze compiles again with IREE's demotion, and warns."""
    tensor_loops: tuple[str, ...] = ()
    """Locations of loops that carry tensors (passes/abi.tensor_loops): such a program is
    compiled without transient storage, which IREE 3.13 cannot give them."""
    mmt4d_tiles: str | None = None
    """With data tiling on the CPU: how braze configures IREE's float32 mmt4d dispatches
    (braze.compiler.cpu_tiles modes; None: IREE's own tiles)."""

    def bytecode(self) -> bytes:
        buffer = io.BytesIO()
        with self.context:
            self.module.operation.write_bytecode(buffer)
        return buffer.getvalue()

    def write_bytecode(self, path) -> None:
        """The module as MLIR bytecode in the file at `path` (written as it is serialized)."""
        with open(path, "wb") as f, self.context:
            self.module.operation.write_bytecode(f)

    def text(self, debuginfo: bool = False) -> str:
        """The module as MLIR text, printed as braze-opt prints it."""
        with self.context:
            text = self.module.operation.get_asm(enable_debug_info=debuginfo)
        return text if text.endswith("\n") else text + "\n"


def lower(model, *example_inputs, device: str = "cpu", target: str | None = None, fusion: bool = True,
          pipeline: str | None = None, example_kwargs: dict | None = None, attention: bool | None = None,
          decision_limit: int | None = None, exported=None, precision: str | None = None,
          dynamic_shapes=None) -> Lowered:
    """The first half of braze.compile (same arguments): export, import, run braze's pipeline.
    `braze compile --emit mlir` prints its result; braze.compile hands it to IREE."""
    tgt = resolve(device, target)
    # Compile-side modules (torch, torch-mlir): braze.load must not need them.
    from braze.compiler import frontend
    from braze.passes import abi, runner
    from braze.kernels.build import available as kernels_available
    from braze.passes.gpu.generate_kernels import generated_kernels
    from braze.passes.gpu.matchers import kernel_configs
    from braze._mlir import ir
    from braze.passes.cpu.cpu_codegen import CHANNELS_LAST_ATTR, DATA_TILING_ATTR, MMT4D_TILES_ATTR, REASSOCIATE_ATTR
    from braze.passes.fusion_report import count_linalg_ops

    _check_precision(precision)  # also where an explicit pipeline makes it unused
    pipeline_text = pipeline or device_pipeline(tgt, fusion, precision)
    if attention is None:
        dtypes = ATTENTION_AS_ONE_OP.get(tgt.device, ()) if fusion else ()
        if fusion and tgt.device == "cuda" and pipeline is None and kernels_available(tgt.arch) is None:
            dtypes += ("float32",)  # fusion-generate-kernels makes it one flash-attention kernel
    else:
        dtypes = _FLOAT_DTYPES if attention else ()
    import torch

    imported = frontend.import_model(model, example_inputs, example_kwargs or {},
                                     attention=frozenset(getattr(torch, d) for d in dtypes), exported=exported,
                                     dynamic_shapes=dynamic_shapes)
    report = Report(model=type(model).__name__, target=tgt.describe(), fusion=fusion, pipeline=pipeline_text)
    report.stage_seconds.update(imported.times)
    report.attention = dict(imported.attention)
    report.softmaxes = list(imported.softmaxes)

    with imported.context:
        module_op = imported.module.operation
        report.linalg_ops_before = count_linalg_ops(module_op)
        t0 = time.perf_counter()
        analyses = runner.run_pipeline(imported.module, pipeline_text, model=type(model).__name__,
                                       internal=pipeline is None, decision_limit=decision_limit)
        report.decisions = list(analyses["decisions"].made)
        report.stage_seconds["fusion"] = time.perf_counter() - t0
        report.linalg_ops_after = count_linalg_ops(module_op)
        report.kernel_configs = kernel_configs(module_op)
        report.kernels = generated_kernels(module_op)
        fusion_report = analyses.get("fusion-report")
        if fusion_report is not None:
            data = json.loads(fusion_report.to_json())
            report.groups = data.get("groups", [])
            report.unfused = data.get("unfused", [])
            report.fusion_text = fusion_report.summary_text()
        written, aliased = abi.hazards(module_op)
        failing = abi.failing_asserts(module_op)
        loops = abi.tensor_loops(module_op)
        # fusion-cpu-codegen's choices: each a string attribute on the module saying why, or absent
        tiling, reassociate, channels_last, mmt4d_tiles = (
            ir.StringAttr(module_op.attributes[a]).value if a in module_op.attributes else None
            for a in (DATA_TILING_ATTR, REASSOCIATE_ATTR, CHANNELS_LAST_ATTR, MMT4D_TILES_ATTR))
    iree_flags: tuple[str, ...] = ()
    if tgt.device == "cpu":
        from braze.compiler.backend import CHANNELS_LAST_FLAG, DATA_TILING_FLAGS, REASSOCIATE_FLAG

        if tiling is not None:
            iree_flags = DATA_TILING_FLAGS
            report.cpu_codegen = f"data tiling, mmt4d microkernels: {tiling}"
        else:
            report.cpu_codegen = "IREE's default loops (no data tiling: no contraction reads a constant operand)"
        if reassociate is not None:
            iree_flags = iree_flags + (REASSOCIATE_FLAG,)
            report.cpu_codegen += f"; float reductions reassociated: {reassociate}"
        if channels_last is not None:
            iree_flags = iree_flags + (CHANNELS_LAST_FLAG,)
            report.cpu_codegen += f"; convolutions channels-last: {channels_last}"
    pooled_pads = _pooled_pads(module_op) if tgt.device == "cuda" and fusion else 0
    if pooled_pads:
        from braze.compiler.backend import PAD_FUSION_FLAG

        iree_flags = iree_flags + (PAD_FUSION_FLAG,)
        report.extra["pad_fusion"] = f"{pooled_pads} pooling pads in the pool's dispatch ({PAD_FUSION_FLAG})"
    if failing:
        from braze.errors import UnsupportedOpError
        from braze.irutil import short_location

        message, where = failing[0]
        raise UnsupportedOpError(
            f"{type(model).__name__} cannot run: torch-mlir lowered an op at {short_location(where)} to a "
            f"check that fails on every call ('{message}'), for a case its lowering does not support. "
            "Change that op's "
            "sizes or replace it; the raw torch-mlir + IREE toolchain fails the same way, at run time.")
    float64, float64_inside = frontend.keeps_float64(imported, tgt, type(model).__name__, report)
    aggressive = None
    if tgt.device == "cpu":
        from braze.passes.form_groups import FormGroupsPass
        from braze.passes.registry import parse_pipeline

        aggressive = any(isinstance(step.braze_pass, FormGroupsPass) for step in parse_pipeline(pipeline_text))
    return Lowered(tgt, imported.signature, report, imported.module, imported.context, written, aliased, float64,
                   iree_flags, aggressive, float64_inside, tuple(loops),
                   mmt4d_tiles if tgt.device == "cpu" else None)
