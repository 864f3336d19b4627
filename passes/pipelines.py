"""Named pipelines: what `braze.compile` runs for each device, registered so that
`braze-opt -p fusion-cuda-pipeline{target=sm_90}` replays exactly what a compile ran.

    fusion-default-pipeline     group elementwise chains and lower each group to one generic;
                                concats of equal pieces (rotate_half) as one elementwise generic
    fusion-baseline-pipeline    braze.compile(fusion=False): cleanup only (and float64 math
                                written out, for the CPU and Vulkan)
    fusion-cpu-pipeline         braze.compile(device="cpu"): also convolutions as matmuls, erf
                                as one rational function, and IREE's data tiling for
                                contractions with a constant operand
    fusion-vulkan-pipeline      braze.compile(device="vulkan")
    fusion-cuda-pipeline        braze.compile(device="cuda"): also convolutions as matmuls,
                                padded and split matmuls, kernel and matmul tiles, scatters
                                given a producer IREE spreads over its threads
"""

from __future__ import annotations

from dataclasses import dataclass

from .gpu.options import kernel_tiles, known_cuda_target, tuning_cache
from .registry import PassPipeline, one_of, option, quote_option, register


@register
@dataclass(frozen=True)
class DefaultPipeline(PassPipeline):
    name = "fusion-default-pipeline"
    summary = ("Fold broadcast batch matmuls, group elementwise chains, report the groups, lower each "
               "group to one linalg.generic, concats of equal pieces as one elementwise generic")

    def expand(self) -> str:
        return ("fusion-fold-broadcast-matmul,fusion-form-groups,fusion-report,fusion-lower-to-linalg,fusion-fold-concat,"
                "canonicalize,cse")


@register
@dataclass(frozen=True)
class BaselinePipeline(PassPipeline):
    name = "fusion-baseline-pipeline"
    summary = "What braze.compile(fusion=False) runs: cleanup only, no fusion"

    f64_math: str = option("keep", "float64 sin, cos, atan2 & co: keep (CUDA: libdevice has them) or expand "
                                   "(fusion-expand-f64-math, for the CPU and Vulkan)", check=one_of("keep", "expand"))

    def expand(self) -> str:
        return ("fusion-expand-f64-math," if self.f64_math == "expand" else "") + "canonicalize,cse"


@register
@dataclass(frozen=True)
class CpuPipeline(PassPipeline):
    name = "fusion-cpu-pipeline"
    summary = ("What braze.compile(device='cpu') runs: convolutions as im2col + matmul, fusion-default-pipeline, "
               "erf as one rational function, and IREE's data tiling where a contraction reads a constant operand")

    conv: str = option("im2col", "Convolutions: im2col (braze's im2col copy + matmul, which data tiling "
                                 "packs) or direct (IREE's convolution code)", check=one_of("im2col", "direct"))
    direct_pixels: int = option(0, "With conv=im2col: unit-stride convolutions with at least this many output "
                                   "pixels an image stay IREE's direct convolution (braze.compile sets 784 for "
                                   "an AVX-512 CPU; 0: none)", minimum=0)
    data_tiling: str = option("auto", "IREE's data tiling and mmt4d microkernels (fusion-cpu-codegen): auto, on, off",
                              check=one_of("auto", "on", "off"))
    reassociate: str = option("auto", "IREE's reassociation of float reductions (fusion-cpu-codegen): auto (where the "
                                      "module reduces floats), on, off", check=one_of("auto", "on", "off"))
    channels_last: str = option("auto", "IREE's conversion of the NCHW convolutions left direct to channels-last "
                                        "(fusion-cpu-codegen): auto, on, off", check=one_of("auto", "on", "off"))
    mmt4d_tiles: str = option("auto", "IREE's float32 mmt4d dispatches (fusion-cpu-codegen): auto (by the target "
                                      "CPU), iree, microkernel, loops", check=one_of("auto", "iree", "microkernel", "loops"))
    erf: str = option("rational", "math.erf: rational (fusion-expand-erf: one clamped rational function) or iree "
                                  "(IREE's piecewise approximation, coefficients picked by selects)",
                      check=one_of("rational", "iree"))

    def expand(self) -> str:
        direct = f" direct-pixels={self.direct_pixels}" if self.direct_pixels else ""
        conv = f"fusion-conv-to-matmul{{grouped=true{direct}}}," if self.conv == "im2col" else ""
        erf = "fusion-expand-erf," if self.erf == "rational" else ""
        return (f"{conv}fusion-expand-f64-math,fusion-default-pipeline,{erf}fusion-cpu-codegen{{data-tiling={self.data_tiling} "
                f"reassociate={self.reassociate} channels-last={self.channels_last} mmt4d-tiles={self.mmt4d_tiles}}}")


@register
@dataclass(frozen=True)
class VulkanPipeline(PassPipeline):
    name = "fusion-vulkan-pipeline"
    summary = ("What braze.compile(device='vulkan') runs: convolutions as im2col + matmul, "
               "fusion-default-pipeline (SPIR-V keeps IREE's own tiles)")

    conv: str = option("im2col", "Convolutions: im2col (braze's im2col copy + matmul: SPIR-V's matmul pipeline) "
                                 "or direct (IREE's SPIR-V convolution code: ResNet-18's dispatches took 103-334 ms "
                                 "against 6.2 on the H200, bench/NOTES.md §30)", check=one_of("im2col", "direct"))

    def expand(self) -> str:
        conv = "fusion-conv-to-matmul," if self.conv == "im2col" else ""
        return f"{conv}fusion-expand-f64-math,fusion-default-pipeline"


@register
@dataclass(frozen=True)
class CudaPipeline(PassPipeline):
    name = "fusion-cuda-pipeline"
    summary = ("What braze.compile(device='cuda') runs: convolutions as im2col + matmul, fusion, padded and "
               "split matmuls, kernel and matmul tiles for the target, scatters given a producer IREE spreads")

    target: str = option("sm_90", "CUDA capability the kernels are configured for", check=known_cuda_target)
    tuning_cache: str = tuning_cache()
    kernels: str = option("auto", "Generated (Triton) kernels for matmuls: auto (where Triton is "
                                  "installed), on, off", check=one_of("auto", "on", "off"))
    fp32: str = option("tf32x3", "Generated float32 matmuls: tf32x3 (float32-accurate), tf32, off",
                       check=one_of("tf32x3", "tf32", "off"))
    conv_fp32: str = option("tf32", "Convolutions as generated implicit GEMMs: tf32 (float32 ones in TF32, as "
                                    "cuDNN by default), tf32x3 (float32-accurate), off (16-bit ones only), im2col "
                                    "(none: braze's im2col copy + matmul)",
                            check=one_of("tf32", "tf32x3", "off", "im2col"))
    kernel_tiles: str = kernel_tiles()
    rows: str = option("on", "Row programs (LayerNorm, RMSNorm, softmax: a reduction of the last dimension with the "
                             "elementwise work around it) as generated row kernels: on, off (IREE's dispatches)",
                       check=one_of("on", "off"))
    channels_last: str = option("auto", "Generated convolutions in NHWC (fusion-channels-last: the layout changes "
                                        "once, after the 3-channel stem, none between layers): auto (the default: "
                                        "bf16/f16 networks of 2 or more convolutions, all dense, as ResNets: the class "
                                        "verified on the GPU, bench/NOTES.md §49), on (every type the kernels take, "
                                        "depthwise or grouped convolutions beside them, a lone one), off (NCHW kernels)",
                                check=one_of("off", "auto", "on"))

    def expand(self) -> str:
        target = f"target={self.target}"
        tuned = target + (f" tuning-cache={quote_option(self.tuning_cache)}" if self.tuning_cache else "")
        forced = f" tiles={quote_option(self.kernel_tiles)}" if self.kernel_tiles else ""
        leave = ""
        if self.kernels != "off" and self.conv_fp32 != "im2col":
            leave = "bf16,f16" if self.conv_fp32 == "off" else "f32,bf16,f16"
        if self.kernels == "auto":
            from braze.kernels.build import available

            leave = leave if available(self.target) is None else ""
        conv = f"fusion-conv-to-matmul{{{target}" + (f" leave={leave}" if leave else "") + "}"
        layout = ""
        if leave and self.channels_last == "on":
            layout = f"fusion-channels-last{{types={leave} min-convs=1}},"
        elif leave and self.channels_last == "auto":
            layout = "fusion-channels-last{types=bf16,f16 whole=true},"
        return (f"{conv},fusion-default-pipeline,{layout}"
                f"fusion-generate-kernels{{{tuned} mode={self.kernels} fp32={self.fp32} conv-fp32={self.conv_fp32}"
                f"{forced}{' rows=off' if self.rows == 'off' else ''}}},"
                f"fusion-pad-matmuls{{{tuned}}},"
                f"fusion-split-k{{{target}}},fusion-configure-kernels{{{tuned}}},fusion-spread-scatters")


PRECISIONS = ("highest", "high")


def for_device(device: str, arch: str, tuning_cache_path: str = "", precision: str | None = None) -> PassPipeline:
    """The pipeline braze.compile runs for a device (with fusion on). precision: how CUDA float32
    matmuls and convolutions run: 'highest' (float32-accurate, 3xTF32), 'high' (TF32), None (as
    torch would: torch.backends.cuda.matmul.allow_tf32 for matmuls, torch.backends.cudnn.allow_tf32
    for convolutions)."""
    if device == "cuda":
        from braze.kernels.build import available

        # Resolved here, so that the pipeline in the report replays the same on any machine.
        kernels = "on" if available(arch) is None else "off"
        if precision is None:
            fp32, conv_fp32 = _fp32_precision(), conv_fp32_precision()
        else:
            fp32 = conv_fp32 = "tf32x3" if precision == "highest" else "tf32"
        return CudaPipeline(target=arch, tuning_cache=tuning_cache_path, kernels=kernels, fp32=fp32,
                            conv_fp32=conv_fp32)
    if device == "vulkan":
        return VulkanPipeline()
    # Resolved here from the CPU compiled for, so that the report's pipeline replays anywhere.
    return CpuPipeline(direct_pixels=DIRECT_CONV_PIXELS if cpu_has_avx512(arch) else 0)


DIRECT_CONV_PIXELS = 784
"""On an AVX-512 CPU, unit-stride convolutions with at least 28x28 output pixels stay IREE's
direct convolution. Measured one thread on a Xeon with AVX-512 (bench/NOTES.md §33): IREE's
direct code against braze's im2col + data-tiled matmul, 64->64 3x3 at 56x56 4.5 against 5.4 ms,
at 28x28 1.14 against 1.41; at 14x14 and below im2col won (4x4x512: 1.36 against 2.15) and on
every strided convolution by 2-9x. On a 2-core EPYC (AVX2, §24) IREE's direct code lost
everywhere (conv + BN + ReLU 0.31x eager against 0.69x), so there every convolution is im2col."""

AVX512_CPUS = ("skylake-avx512", "cascadelake", "cooperlake", "cannonlake", "icelake-client", "icelake-server",
               "tigerlake", "rocketlake", "sapphirerapids", "emeraldrapids", "graniterapids", "graniterapids-d",
               "diamondrapids", "znver4", "znver5", "x86-64-v4")
"""LLVM CPU names (cross-compiling with target=NAME) whose code may use AVX-512."""


def cpu_has_avx512(arch: str) -> bool:
    """Whether code for the LLVM CPU `arch` ('host': this machine, from /proc/cpuinfo) has
    AVX-512 (avx512f)."""
    if arch != "host":
        return arch in AVX512_CPUS
    from braze.targets import host_cpu_fields

    return "avx512f" in host_cpu_fields().get("flags", "").split()


def _fp32_precision() -> str:
    """What torch would do with a float32 matmul on CUDA: TF32 only where the user allowed it."""
    try:
        import torch

        return "tf32" if torch.backends.cuda.matmul.allow_tf32 else "tf32x3"
    except ImportError:
        return "tf32x3"


def conv_fp32_precision() -> str:
    """What torch would do with a float32 convolution on CUDA: cuDNN uses TF32 unless the user
    turned torch.backends.cudnn.allow_tf32 off."""
    try:
        import torch

        return "tf32" if torch.backends.cudnn.allow_tf32 else "tf32x3"
    except ImportError:
        return "tf32"
