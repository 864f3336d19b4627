"""Back end: linalg IR (as bytecode) to an IREE program for a Target.

For CUDA capabilities that IREE 3.13's `--iree-cuda-target` does not know (sm_90), the
module carries an explicit device target instead of the flag:

    module attributes {stream.affinity.default = #hal.device.affinity<@__device_0>} {
      util.global private @__device_0 = #hal.device.target<"cuda", [#hal.executable.target<
          "cuda", "cuda-nvptx-fb", {iree_codegen.target_info = #iree_gpu.target<arch = "sm_90", ...>}>]>
      ...

which compiles to `.target sm_90` PTX (ptx 8.0).
"""

from __future__ import annotations

from braze.passes.gpu.configs import CONFIG_ATTRS, KernelConfig, MatmulConfig, parse_config

from braze.compiler._iree_compiler import CompiledVmfb, compile_module, iree_ir, module_text, probe_flags
from braze.errors import CompileError, DeviceError, KernelResourceError
from braze.irutil import all_ops
from braze.targets import Target

# IREE 3.13's own sm_80 target description; Hopper differs in arch, PTX version and the
# shared memory a workgroup may use (227 KiB). The MMA list stays mma.sync: IREE 3.13
# has no wgmma intrinsics for CUDA.
_CUDA_WGP = (
    "wgp = <compute = fp64|fp32|fp16|int64|int32|int16|int8, storage = b64|b32|b16|b8, "
    "subgroup = shuffle|arithmetic, dot = dp4xi8toi32, mma = [<NV_MMA_SYNC_F32_16x8x16_F16>, "
    "<NV_MMA_SYNC_F16_16x8x16_F16>, <NV_MMA_SYNC_F32_16x8x16_BF16>, <NV_WMMA_F32_16x16x16_F16>, "
    "<NV_WMMA_F16_16x16x16_F16>], subgroup_size_choices = [32], max_workgroup_sizes = [1024, 1024, 1024], "
    "max_thread_count_per_workgroup = 1024, max_workgroup_memory_bytes = {smem}, "
    "max_workgroup_counts = [2147483647, 65535, 65535]>"
)
EXPLICIT_CUDA_TARGETS = {
    "sm_90": {"features": "+ptx80", "smem": 232448},
}


def cuda_device_target(arch: str) -> str:
    """The #hal.device.target attribute text for an explicit CUDA capability."""
    spec = EXPLICIT_CUDA_TARGETS[arch]
    wgp = _CUDA_WGP.replace("{smem}", str(spec["smem"]))
    return (
        '#hal.device.target<"cuda", [#hal.executable.target<"cuda", "cuda-nvptx-fb", '
        f'{{iree_codegen.target_info = #iree_gpu.target<arch = "{arch}", features = "{spec["features"]}", '
        f"{wgp}>}}>]>"
    )


def _attach_device(attr_text: str):
    def hook(module) -> None:
        with module.context, iree_ir.Location.unknown():
            glob = iree_ir.Operation.parse(f"util.global private @__device_0 = {attr_text} : !hal.device")
            iree_ir.InsertionPoint.at_block_begin(module.body).insert(glob)
            module.operation.attributes["stream.affinity.default"] = iree_ir.Attribute.parse(
                "#hal.device.affinity<@__device_0>"
            )

    return hook


def _wrap_main(output_storage: bool, transient_storage: bool, tied: tuple = ()):
    """Rename `main` to `main$impl` and give the new `main` braze's buffer arguments.

    output_storage: one `!hal.buffer` per result, which the result is aliased into: the caller
    owns where results land (a torch tensor imported by DLPack; IREE's own result buffers come
    from a pool that the CUDA driver cannot export to torch).
    transient_storage: one `!hal.buffer {iree.abi.transients}` that holds every intermediate,
    so a call allocates nothing (measured 1-9% faster per call on the H200, bench/NOTES.md §9).

        func.func @main(%x) -> tensor<..>   ->   func.func @main(%x, %out0: !hal.buffer,
                                                     %transients: !hal.buffer {iree.abi.transients}) {
                                                   %r = call @main$impl(%x)
                                                   %a = hal.tensor.alias %r : tensor<..> to %out0 : !hal.buffer
                                                   %t = hal.tensor.transients %a : tensor<..> from %transients : !hal.buffer
                                                   return %t }

    The alias comes before the transients op: the other order leaves the result in a
    transient buffer and copies it out.

    tied: (input, result) pairs: the result is the input's new value, written where the input
    is (`%in3: tensor<..> {iree.abi.output = 0 : index}`: IREE's own tie), with no output
    buffer and no transients op of its own (an input the model updates in place, such as a
    KV cache, updated in the caller's memory: compile(inputs_in_place=True)).
    """
    ties = dict(tied)  # input -> result
    tied_results = set(ties.values())

    def hook(module) -> None:
        if not (output_storage or transient_storage or tied):
            return
        with module.context, iree_ir.Location.unknown():
            main = next(op for op in module.body.operations
                        if op.operation.name == "func.func"
                        and iree_ir.StringAttr(op.attributes["sym_name"]).value == "main")
            ftype = iree_ir.FunctionType(iree_ir.TypeAttr(main.attributes["function_type"]).value)
            ins, outs = [str(t) for t in ftype.inputs], [str(t) for t in ftype.results]
            main.attributes["sym_name"] = iree_ir.StringAttr.get("main$impl")
            main.attributes["sym_visibility"] = iree_ir.StringAttr.get("private")
            args = [f"%in{i}: {t}" + (f" {{iree.abi.output = {ties[i]} : index}}" if i in ties else "")
                    for i, t in enumerate(ins)]
            if output_storage:
                args += [f"%out{i}: !hal.buffer" for i in range(len(outs)) if i not in tied_results]
            if transient_storage:
                args.append("%transients: !hal.buffer {iree.abi.transients}")
            results = ", ".join(outs)
            call = f"func.call @main$impl({', '.join(f'%in{i}' for i in range(len(ins)))}) : ({', '.join(ins)}) -> ({results})"
            lines = [f"%r:{len(outs)} = {call}" if outs else call]
            values = [f"%r#{i}" for i in range(len(outs))]
            for i, (t, ty) in enumerate(zip(outs, ftype.results)):
                if i in tied_results:
                    continue
                dims = _dynamic_dims(lines, values[i], i, t, ty)
                if output_storage:
                    lines.append(f"%a{i} = hal.tensor.alias {values[i]} : {t}{dims} to %out{i} : !hal.buffer")
                    values[i] = f"%a{i}"
                if transient_storage:
                    lines.append(f"%t{i} = hal.tensor.transients {values[i]} : {t}{dims} from %transients : !hal.buffer")
                    values[i] = f"%t{i}"
            lines.append(f"return {', '.join(values)} : {results}" if outs else "return")
            body = "\n  ".join(lines)
            text = (
                f"func.func private @main$impl({', '.join(ins)}) -> ({results})\n"
                f"func.func @main({', '.join(args)}) -> ({results}) {{\n  {body}\n}}"
            )
            scratch = iree_ir.Module.parse(text)  # must outlive the move: it owns the wrapper's body
            wrapper = scratch.body.operations[1]
            wrapper.detach_from_parent()
            iree_ir.InsertionPoint(module.body).insert(wrapper)
            del scratch

    return hook


def _dynamic_dims(lines: list[str], value: str, index: int, text: str, ty) -> str:
    """'{%d0, ...}': the sizes of a result's dynamic dimensions (read with tensor.dim, the ops
    appended to `lines`), as hal.tensor ops spell them after the type; '' when it is static."""
    if not isinstance(ty, iree_ir.RankedTensorType) or iree_ir.RankedTensorType(ty).has_static_shape:
        return ""
    shaped = iree_ir.ShapedType(ty)
    names = []
    for k in range(shaped.rank):
        if shaped.is_dynamic_dim(k):
            lines.append(f"%c{index}_{k} = arith.constant {k} : index")
            lines.append(f"%d{index}_{k} = tensor.dim {value}, %c{index}_{k} : {text}")
            names.append(f"%d{index}_{k}")
    return "{" + ", ".join(names) + "}"


def kernel_compilation_info(config: KernelConfig) -> str:
    """IREE's compilation_info for an all-parallel kernel's tiles (TileAndFuse pipeline)."""
    tiles = lambda values: ", ".join(map(str, values))  # noqa: E731
    return (
        "#iree_codegen.compilation_info<lowering_config = #iree_gpu.lowering_config<"
        f"{{workgroup = [{tiles(config.workgroup)}], thread = [{tiles(config.thread)}]}}>, "
        "translation_info = #iree_codegen.translation_info<pipeline = #iree_gpu.pipeline<TileAndFuse> "
        f"workgroup_size = [{config.threads}, 1, 1] subgroup_size = 32>>"
    )


def matmul_compilation_info(config: MatmulConfig, batch: bool = False) -> str:
    """IREE's compilation_info for a matmul's tiles (a batch_matmul gets a leading batch
    dimension tiled by 1)."""
    lead, zero = ("1, ", "0, ") if batch else ("", "")
    tiles = lambda pair: lead + ", ".join(map(str, pair))  # noqa: E731
    if config.kind == "simt":
        lowering = (f"workgroup = [{tiles(config.workgroup)}, 0], reduction = [{zero}0, 0, {config.reduction}], "
                    f"thread = [{tiles(config.tile)}, 0], promote_operands = [0, 1]")
        options = ""
    else:
        lowering = (f"convert_acc_gemm, mma_kind = #iree_gpu.mma_layout<{config.MMA}>, promote_operands = [0, 1], "
                    f"reduction = [{zero}0, 0, {config.reduction}], subgroup = [{tiles(config.tile)}, 0], "
                    f"workgroup = [{tiles(config.workgroup)}, 0]")
        options = (f", {{gpu_pipeline_options = #iree_gpu.pipeline_options<prefetch_num_stages = {config.stages}, "
                   "no_reduce_shared_memory_bank_conflicts = false, use_igemm_convolution = false>}")
    threads = list(config.threads) + [1, 1]
    return (
        f"#iree_codegen.compilation_info<lowering_config = #iree_gpu.lowering_config<{{{lowering}}}>, "
        "translation_info = #iree_codegen.translation_info<pipeline = #iree_gpu.pipeline<TileAndFuse> "
        f"workgroup_size = [{threads[0]}, {threads[1]}, {threads[2]}] subgroup_size = 32{options}>>"
    )


def _apply_kernel_configs(apply: bool):
    """Turn braze's configuration attributes into IREE compilation_info (apply) or drop them."""

    def hook(module) -> None:
        with module.context:
            for op in all_ops(module.operation):
                for attr in CONFIG_ATTRS:
                    if attr in op.attributes:
                        config = parse_config(attr, iree_ir.StringAttr(op.attributes[attr]).value)
                        del op.attributes[attr]
                        if apply:
                            info = (matmul_compilation_info(config, batch=op.name == "linalg.batch_matmul")
                                    if isinstance(config, MatmulConfig) else kernel_compilation_info(config))
                            op.attributes["compilation_info"] = iree_ir.Attribute.parse(info)

    return hook


def default_output_storage(target: Target) -> bool:
    """Whether results go into caller-provided buffers by default.

    cuda: yes, IREE's result buffers cannot be exported to torch. cpu: no, fresh host
    tensors page-fault on first touch (64 MiB of results cost ~30 ms), while IREE's pooled
    result buffers reach torch by DLPack for free.
    """
    return target.device == "cuda"


def _embed_kernels(arch: str, float64: bool):
    """Each function fusion-generate-kernels outlined becomes a dispatch of its generated kernel
    (computing in float64 only where IREE keeps float64: `float64`)."""
    def hook(module) -> None:
        from braze.compiler.kernel_embed import embed_kernels, kernel_functions

        if kernel_functions(module):
            embed_kernels(module, arch, float64=float64)

    return hook


AGGRESSIVE_FUSION = "--iree-dispatch-creation-enable-aggressive-fusion=true"
"""IREE's dispatch formation puts a reduction and the elementwise consumers of its broadcast
result in one dispatch: a LayerNorm is one kernel instead of two or three. Measured on the H200
(bench/NOTES.md §22): LayerNorm + GELU 49 -> 21 µs per call, the bf16 TransformerEncoderLayer
and BERT layer 12 -> 10 and 11 -> 9 kernels, 6-8% faster; results unchanged. On the CPU (one
thread, a 2-core AMD EPYC with AVX-512, bench/NOTES.md §38): LayerNorm + GELU 7.70 -> 6.45 ms
(3 dispatches -> 1), BERT layer 21.2 -> 20.2, TransformerEncoderLayer 23.3 -> 22.8, none of eight
workloads slower. §30 had turned it off on the CPU for a wrong answer (a bf16 round trip after a
matmul folded away), which fusion-form-groups now prevents (§37): on the CPU it is on where that
pass runs (braze's pipelines; not with fusion=False, the raw toolchain's baseline, where IREE's
own fusion would fold that round trip). On for CUDA always (Vulkan: not measured);
`iree_flags=["--iree-dispatch-creation-enable-aggressive-fusion=false"]` turns it off (a later
flag wins)."""


DATA_TILING_FLAGS = ("--iree-global-opt-data-tiling=true", "--iree-llvmcpu-enable-ukernels=all")
"""llvm-cpu: pack contraction operands into the host's vector tiles and run IREE's mmt4d
microkernels; braze passes them where fusion-cpu-codegen chose data tiling (bench/NOTES.md §24).
IREE 3.13 has two data-tiling paths and `--iree-opt-data-tiling` picks the one that starts at
dispatch creation. That path fails on a sum of two products, `x1 @ w1 + x2 @ w2`: it folds the
add into the second product's accumulator and leaves the first dispatch unpacking and packing
its whole result again on the stack ("exceeded stack allocation limit"; the raw toolchain,
without data tiling, compiles it). The path that starts at global optimization compiles it and
was as fast or faster on every float32 CPU bench workload (§57, one thread, Emerald Rapids: TE
0.87x -> 1.04x eager, BERT 0.95x -> 1.07x, GELU MLP 0.85x -> 1.22x; AMD not measured again)."""


CHANNELS_LAST_FLAG = ("--iree-preprocessing-pass-pipeline="
                      "builtin.module(util.func(iree-preprocessing-convert-conv-to-channels-last))")
"""IREE's preprocessing: NCHW convolutions computed in channels-last layout (transposes around
each); braze passes it where fusion-cpu-codegen found an NCHW convolution left direct (bench/NOTES.md §39)."""

PAD_FUSION_FLAG = "--iree-dispatch-creation-enable-fuse-padding-into-linalg-consumer-ops"
"""CUDA: a tensor.pad joins the dispatch of the op that reads it, not a copy dispatch of its own;
braze passes it where a pooling op reads a pad (the max pool's -inf border): ResNet-50's pad
copy took 63 us of 719 on the H200, and the fused NHWC pool ran the network 0.627 -> 0.563 ms at
batch 8 (bench/NOTES.md §49); the NCHW pool after a ResNet's NCHW stem (the default): §54."""

REASSOCIATE_FLAG = "--iree-llvmcpu-reassociate-fp-reductions=true"
"""llvm-cpu: vector reductions may be reassociated (a tree, not a scalar chain per vector step);
braze passes it where fusion-cpu-codegen found a max reduction (bench/NOTES.md §34)."""


def _common_flags(target: Target, float64: bool, aggressive_fusion: bool | None = None) -> list[str]:
    """`float64`: IREE keeps 64-bit floats instead of demoting them to 32 bits, its default
    (braze.compiler.frontend.keeps_float64 decides: the model's float64 and complex128 inputs and results,
    and on the CPU the float64 a program computes in, but for LayerNorm's and GroupNorm's statistics).
    CUDA fuses reductions with their consumers (AGGRESSIVE_FUSION), and so does the CPU where
    braze's pipeline asks (`aggressive_fusion`, None: the target's default)."""
    flags = ["--iree-input-demote-f64-to-f32=false"] if float64 else []
    if aggressive_fusion if aggressive_fusion is not None else target.device == "cuda":
        flags.append(AGGRESSIVE_FUSION)
    return flags


INLINED_CONSTANT_BYTES = 256
"""IREE inlines tensor constants up to this size into the dispatches that read them
(--iree-flow-inline-constants-max-byte-length, a process-wide flag braze cannot set per compile)."""


def _elements(shape) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def _hoist_small_bf16_constants(module) -> None:
    """Keep each bf16 tensor constant IREE would inline into a dispatch outside it.

    IREE 3.13's bf16 emulation for llvm-cpu and SPIR-V (iree-convert-bf16-arith-to-f32) fails on
    a bf16 constant inlined into a dispatch ("'arith.constant' op failed to verify that all of {value,
    result} have same type"): every bf16 Linear or BatchNorm with small weights failed to
    compile for the CPU or Vulkan. Behind a `util.optimization_barrier` the constant is neither inlined
    nor folded into its users: the dispatch reads it through a binding, which the emulation
    handles. The values are the same."""
    with module.context, iree_ir.Location.unknown():
        bf16 = iree_ir.BF16Type.get()
        for op in all_ops(module.operation, "arith.constant"):
            ty = op.results[0].type
            if not isinstance(ty, iree_ir.RankedTensorType):
                continue
            ty = iree_ir.RankedTensorType(ty)
            if ty.element_type != bf16 or not ty.has_static_shape or 2 * _elements(ty.shape) > INLINED_CONSTANT_BYTES:
                continue
            uses = list(op.results[0].uses)
            barrier = iree_ir.Operation.create("util.optimization_barrier", results=[ty], operands=[op.results[0]],
                                               loc=op.location, ip=iree_ir.InsertionPoint.after(op))
            for use in uses:
                use.owner.operands[use.operand_number] = barrier.results[0]


FULL_REDUCTION_FUSED_ELEMENTS = 4096
"""Above this many input elements, a reduction to one element is kept apart from a producer whose
result is also used elsewhere (`_split_full_reductions`)."""


def _split_full_reductions(module) -> None:
    """Keep a reduction to one element out of the dispatch of a producer that is used elsewhere too.

    IREE 3.13's aggressive fusion (AGGRESSIVE_FUSION, on for CUDA) puts such a producer into the
    reduction's dispatch and stores the producer's result from it as a second result. For CUDA,
    that dispatch is one workgroup reducing everything, and it leaves the second result as one
    vector of the whole tensor: LLVM's NVPTX back end then aborts ("SmallVector unable to grow")
    or overflows its stack and takes the Python process with it; past ~1M elements the compile
    can also run for minutes. `y = x * 2 + 1; return y.sum(), y` crashed from 65,536 elements on
    (4,096 compiled); `y.mean(), y.std()` and train-mode dropout followed by mean and std did too
    (bench/NOTES.md §58). Behind a `util.optimization_barrier` the producer stays in a dispatch of
    its own, as IREE's default fusion leaves it: the reduction reads its result once more."""
    with module.context, iree_ir.Location.unknown():
        for op in all_ops(module.operation, "linalg.generic"):
            iterators = [str(a) for a in iree_ir.ArrayAttr(op.attributes["iterator_types"])]
            if not iterators or any("reduction" not in a for a in iterators) or len(op.results) != 1:
                continue
            if _elements(iree_ir.RankedTensorType(op.results[0].type).shape) != 1:
                continue
            inputs = int(iree_ir.DenseI32ArrayAttr(op.attributes["operandSegmentSizes"])[0])
            for index in range(inputs):
                value = op.operands[index]
                if not isinstance(value.type, iree_ir.RankedTensorType):
                    continue
                ty = iree_ir.RankedTensorType(value.type)
                if not ty.has_static_shape or _elements(ty.shape) <= FULL_REDUCTION_FUSED_ELEMENTS:
                    continue
                if _shared_on_the_way(value):
                    barrier = iree_ir.Operation.create("util.optimization_barrier", results=[ty], operands=[value],
                                                       loc=op.location, ip=iree_ir.InsertionPoint(op))
                    op.operands[index] = barrier.results[0]


def _shared_on_the_way(value, depth: int = 16) -> bool:
    """Whether `value`, or a value of the elementwise chain computing it (through reshapes and
    linalg.generics of parallel iterators only, which aggressive fusion pulls into a consumer's
    dispatch), is read by more than one op."""
    from braze.irutil import RESHAPES

    for _ in range(depth):
        if len(list(value.uses)) > 1 or not isinstance(value, iree_ir.OpResult):
            return len(list(value.uses)) > 1
        owner = value.owner
        if owner.name in RESHAPES:
            value = owner.operands[0]
            continue
        if owner.name != "linalg.generic" or any(
                "parallel" not in str(a) for a in iree_ir.ArrayAttr(owner.attributes["iterator_types"])):
            return False
        inputs = int(iree_ir.DenseI32ArrayAttr(owner.attributes["operandSegmentSizes"])[0])
        tensors = [v for v in list(owner.operands)[:inputs] if isinstance(v.type, iree_ir.RankedTensorType)
                   and isinstance(v, iree_ir.OpResult)]
        if any(_shared_on_the_way(v, depth - 1) for v in tensors[1:]):
            return True
        if not tensors:
            return False
        value = tensors[0]
    return False


def _prepare(target: Target, extra_flags: list[str] | None, output_storage: bool, transient_storage: bool,
             float64: bool = False, aggressive_fusion: bool | None = None, tied: tuple = ()):
    """(iree-compile flags, module hook) for a target: the hook applies kernel configurations,
    wraps main in braze's ABI and attaches an explicit device target where one is needed."""
    flags = _common_flags(target, float64, aggressive_fusion) + list(extra_flags or [])
    hooks = [_apply_kernel_configs(apply=target.device == "cuda"), _wrap_main(output_storage, transient_storage, tied)]
    if target.device == "cuda":
        hooks.insert(0, _embed_kernels(target.arch, float64))
        hooks.append(_split_full_reductions)  # after _wrap_main: creating a util op before one is parsed gets the wrong op
    if target.device == "vulkan":
        from braze.compiler.vulkan_workarounds import widen_bf16_contractions

        hooks.append(widen_bf16_contractions)
    if target.device in ("cpu", "vulkan"):
        hooks.append(_hoist_small_bf16_constants)
    if target.device == "cuda" and target.arch in EXPLICIT_CUDA_TARGETS:
        hooks.append(_attach_device(cuda_device_target(target.arch)))
    else:
        flags = target.compiler_flags() + flags

    def hook(module) -> None:
        for h in hooks:
            h(module)

    return flags, hook


def compile_for_target(source: "bytes | pathlib.Path", target: Target, extra_flags: list[str] | None = None,
                       output_storage: bool = False, transient_storage: bool = False,
                       what: str = "the module", float64: bool = False,
                       launch_plan: tuple[list[int], list[int]] | None = None,
                       aggressive_fusion: bool | None = None, mmt4d_tiles: str | None = None,
                       tied: tuple = ()) -> CompiledVmfb:
    """Compile for the target; main takes braze's buffer arguments as _wrap_main describes.

    launch_plan: (input bytes, output bytes) of main's tensors: also read a CUDA launch plan off
    IREE's HAL program (braze.compiler.cuda_plan); CompiledVmfb.at_hal is the plan, or why there is none.
    aggressive_fusion: IREE's aggressive dispatch fusion, None for the target's default.
    mmt4d_tiles: on the CPU, braze.compiler.cpu_tiles' mode for IREE's float32 mmt4d dispatches
    (None: IREE's own tiles); CompiledVmfb.workarounds lists the dispatches configured.
    tied: (input, result) pairs written in place (_wrap_main)."""
    flags, hook = _prepare(target, extra_flags, output_storage, transient_storage, float64, aggressive_fusion, tied)
    at_hal = None
    if launch_plan is not None:
        from braze.compiler.cuda_plan import plan_or_reason

        inputs, outputs = launch_plan
        at_hal = lambda module_op: plan_or_reason(module_op, inputs, outputs,  # noqa: E731
                                                  {result: arg for arg, result in tied})
    at_configurations = None
    if target.device == "vulkan":
        from braze.compiler.vulkan_workarounds import avoid_promoted_permuting_copies as at_configurations
    if target.device == "cpu" and mmt4d_tiles is not None:
        from braze.compiler.cpu_tiles import configure_mmt4d

        at_configurations = lambda module_op: configure_mmt4d(module_op, mmt4d_tiles)  # noqa: E731
    if target.device == "cpu" and target.arch not in ("host", "generic"):
        problem = probe_flags(target.compiler_flags())
        if problem is not None:
            first = problem.splitlines()[0]
            raise DeviceError(f"target={target.arch!r} is not a CPU IREE's LLVM knows for this machine's "
                              f"architecture ({first}); use 'host', 'generic' or an LLVM CPU name such as "
                              "'znver3', 'skylake-avx512' or 'x86-64-v3'")
    compiled = _compile_fused(source, flags, extra_flags, hook, what, at_hal, at_configurations)
    if at_hal is not None and not isinstance(compiled.at_hal, str):
        from braze.compiler.cuda_plan import bind_constants

        bind_constants(compiled.at_hal, compiled.vmfb)  # the plan's weights: views of the program's
    return compiled


def _compile_fused(source, flags, extra_flags, hook, what, at_hal, at_configurations) -> CompiledVmfb:
    """compile_module with IREE's aggressive fusion where the flags ask for it, else (or where
    it fails) IREE's default dispatches."""
    if AGGRESSIVE_FUSION not in flags or any("aggressive-fusion" in f for f in extra_flags or []):
        return compile_module(source, flags, module_hook=hook, what=what, at_hal=at_hal,
                              at_configurations=at_configurations)
    try:
        compiled = compile_module(source, flags, module_hook=hook, what=what, at_hal=at_hal,
                                  at_configurations=at_configurations)
        compiled.dispatch_fusion = "aggressive (reductions with their consumers)"
        return compiled
    except KernelResourceError:
        raise  # a generated kernel's tile does not fit: IREE's default dispatches would not change that
    except CompileError as e:
        # IREE 3.13's CUDA code generator fails on some aggressively fused dispatches (a small
        # softmax with its consumers: "'vector.transfer_write' op write affecting operations on
        # global resources are restricted to workgroup distributed contexts"): IREE's default
        # dispatches then, which compile wherever the raw toolchain does.
        why = str(e).splitlines()[0]
    compiled = compile_module(source, [f for f in flags if f != AGGRESSIVE_FUSION], module_hook=hook, what=what,
                              at_hal=at_hal, at_configurations=at_configurations)
    compiled.dispatch_fusion = f"default (aggressive fusion failed to compile: {why[:200]})"
    return compiled


def iree_input(source: bytes, target: Target, extra_flags: list[str] | None = None,
               output_storage: bool = False, transient_storage: bool = False,
               float64: bool = False, aggressive_fusion: bool | None = None,
               tied: tuple = ()) -> tuple[str, list[str]]:
    """What compile_for_target hands IREE's compiler, without compiling: the module text (in
    IREE's context, after braze's hooks) and the flags."""
    flags, hook = _prepare(target, extra_flags, output_storage, transient_storage, float64, aggressive_fusion, tied)
    return module_text(source, module_hook=hook), flags
