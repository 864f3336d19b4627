"""Devices and compile targets: what IREE compiles for and which runtime driver runs it.

    device   driver       compile target (IREE 3.13)
    cpu      local-task   llvm-cpu for the host CPU (or a named CPU for cross-compiling)
    cuda     cuda         PTX for the GPU's compute capability, e.g. sm_90
    vulkan   vulkan       SPIR-V for a Vulkan target, e.g. ampere
"""

from __future__ import annotations

import functools
import re
import shutil
import subprocess
import warnings
from dataclasses import dataclass

from braze.errors import DeviceError

DEVICES = ("cpu", "cuda", "vulkan")
DRIVERS = {"cpu": "local-task", "cuda": "cuda", "vulkan": "vulkan"}

CUDA_ARCHS_KNOWN_TO_IREE = ("sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_87", "sm_89")
"""Compute capabilities IREE 3.13's `--iree-cuda-target` accepts (sm_90 is missing: see
`braze.gpu_targets` for the explicit-attribute path braze uses for Hopper)."""

EXPLICIT_CUDA_ARCHS = ("sm_90",)
"""Capabilities braze compiles for with an explicit #hal.executable.target attribute."""

VULKAN_TARGETS = ("ampere", "ada", "turing", "rdna3", "valhall", "llvmpipe", "vp_android_baseline_2022")
"""Targets IREE 3.13's `--iree-vulkan-target` accepts that braze offers (it has no "hopper"):
GPU families, Mesa's CPU driver (llvmpipe, 8 lanes a subgroup) and the Android baseline profile
of 2022, which assumes no subgroup operations (the target for a device braze does not know)."""

CUDA_SM_COUNT = {"sm_90": 132, "sm_80": 108, "sm_86": 84, "sm_89": 128}
"""Streaming multiprocessors of the reference GPU of each capability (H100/H200, A100, RTX 3090,
RTX 4090): a matmul's tiles should give each one a workgroup. Other capabilities count as 132."""

CUDA_ARCHS = CUDA_ARCHS_KNOWN_TO_IREE + EXPLICIT_CUDA_ARCHS
"""Every CUDA capability braze compiles for."""


def cuda_sm_count(arch: str) -> int:
    """SMs a kernel configuration for `arch` plans for (CUDA_SM_COUNT)."""
    return CUDA_SM_COUNT.get(arch, 132)


@dataclass(frozen=True)
class Target:
    device: str
    arch: str
    """'host' or an LLVM CPU name for cpu; 'sm_NN' for cuda; a Vulkan target name for vulkan."""

    @property
    def driver(self) -> str:
        return DRIVERS[self.device]

    def compiler_flags(self) -> list[str]:
        if self.device == "cpu":
            return [
                "--iree-hal-target-device=local",
                "--iree-hal-local-target-device-backends=llvm-cpu",
                f"--iree-llvmcpu-target-cpu={self.arch}",
            ]
        if self.device == "cuda":
            # sm_90 gets an explicit target attribute instead (braze.gpu_targets); the flag
            # still selects the cuda backend and a known arch for everything else.
            arch = self.arch if self.arch in CUDA_ARCHS_KNOWN_TO_IREE else "sm_80"
            return ["--iree-hal-target-device=cuda", f"--iree-cuda-target={arch}"]
        if self.device == "vulkan":
            return ["--iree-hal-target-device=vulkan", f"--iree-vulkan-target={self.arch}"]
        raise DeviceError(f"unknown device '{self.device}'")

    @property
    def sm_count(self) -> int:
        """Streaming multiprocessors a CUDA target's kernel configurations plan for."""
        if self.device != "cuda":
            raise DeviceError(f"{self.describe()} is not a CUDA target; it has no SM count")
        return cuda_sm_count(self.arch)

    def to_json(self) -> dict:
        return {"device": self.device, "arch": self.arch, "driver": self.driver}

    def describe(self) -> str:
        return f"{self.device} ({self.arch})"

    def cache_identity(self) -> str:
        """What the compiled code depends on for the compile cache's keys: the device and arch,
        and for the host CPU the CPU itself (its model and instruction-set flags): code for one
        machine's `host` may not run, or not be chosen the same, on another sharing the cache."""
        if self.device == "cpu" and self.arch == "host":
            return f"cpu host {host_cpu_identity()}"
        return f"{self.device} {self.arch}"


@functools.lru_cache(maxsize=1)
def host_cpu_fields() -> dict[str, str]:
    """This machine's CPU as /proc/cpuinfo's first processor describes it (model name, vendor,
    flags; ARM's Features and CPU part); {} where there is no /proc/cpuinfo."""
    fields = {}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if not line.strip():
                    break  # the first processor's block
                key, _, value = line.partition(":")
                if key.strip() in ("model name", "flags", "vendor_id", "Features", "CPU part"):
                    fields[key.strip()] = value.strip()
    except OSError:
        pass
    return fields


def host_cpu_identity() -> str:
    """A digest of this machine's CPU model and flags, or of platform.processor() where there is
    no /proc/cpuinfo."""
    import hashlib
    import platform

    fields = host_cpu_fields()
    text = "\n".join(f"{k}: {v}" for k, v in sorted(fields.items())) if fields else \
        (platform.processor() or platform.machine())
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def available_devices() -> list[str]:
    """Devices whose iree.runtime driver can open a device on this machine."""
    found = ["cpu"]
    for device in ("cuda", "vulkan"):
        if _can_open(DRIVERS[device]):
            found.append(device)
    return found


_OPENABLE: dict[str, bool] = {}


def _can_open(driver: str) -> bool:
    if driver not in _OPENABLE:
        try:
            import iree.runtime as rt

            _OPENABLE[driver] = bool(rt.get_driver(driver).query_available_devices())
        except Exception:
            _OPENABLE[driver] = False
    return _OPENABLE[driver]


def resolve(device: str, target: str | None = None) -> Target:
    """The Target for a device name ('cpu', 'cuda', 'vulkan', 'auto') and optional target."""
    if not isinstance(device, str) or device not in DEVICES + ("auto",):
        raise DeviceError(
            f"unknown device {device!r}: braze knows {', '.join(DEVICES)} and 'auto'; "
            f"available on this machine: {', '.join(available_devices())}"
        )
    if device == "auto":
        if target is not None:
            raise DeviceError("target= needs an explicit device ('cuda', 'vulkan' or 'cpu'), not 'auto'")
        avail = available_devices()
        device = "cuda" if "cuda" in avail else "vulkan" if "vulkan" in avail else "cpu"
    if device == "cpu":
        return Target("cpu", target or "host")
    if device == "cuda":
        arch = target or detect_cuda_arch()
        return Target("cuda", normalize_cuda_arch(arch))
    arch = target or detect_vulkan_target()
    if arch not in VULKAN_TARGETS and not arch.startswith("sm_"):
        raise DeviceError(f"unknown vulkan target '{arch}'; known: {', '.join(VULKAN_TARGETS)}")
    return Target("vulkan", arch)


def normalize_cuda_arch(arch: str) -> str:
    arch = arch.strip().lower()
    if not arch.startswith("sm_"):
        arch = "sm_" + arch.replace(".", "")
    if arch in CUDA_ARCHS_KNOWN_TO_IREE or arch in EXPLICIT_CUDA_ARCHS:
        return arch
    try:
        number = int(arch[3:])
    except ValueError:
        raise DeviceError(f"'{arch}' is not a CUDA compute capability (expected e.g. sm_80 or sm_90)") from None
    known = sorted(CUDA_ARCHS_KNOWN_TO_IREE + EXPLICIT_CUDA_ARCHS, key=lambda a: int(a[3:]))
    lower = [a for a in known if int(a[3:]) <= number]
    if not lower:
        raise DeviceError(f"CUDA compute capability {arch} is older than any IREE supports ({known[0]})")
    fallback = lower[-1]
    warnings.warn(
        f"braze: IREE 3.13 has no CUDA target for {arch}; compiling for {fallback}, "
        "the nearest older capability it knows (the code runs, without newer instructions)",
        stacklevel=3,
    )
    return fallback


def detect_cuda_arch() -> str:
    """The compute capability of GPU 0 as 'sm_NN', from torch or nvidia-smi."""
    try:
        import torch

        if torch.cuda.is_available():
            major, minor = torch.cuda.get_device_capability(0)
            return f"sm_{major}{minor}"
    except ImportError:
        pass
    smi = shutil.which("nvidia-smi")
    if smi:
        try:
            out = subprocess.run(
                [smi, "--query-gpu=compute_cap", "--format=csv,noheader"],
                capture_output=True, text=True, timeout=20,
            ).stdout.split()
            if out:
                return "sm_" + out[0].replace(".", "")
        except (OSError, subprocess.SubprocessError):
            pass
    raise DeviceError(
        "device='cuda' but no NVIDIA GPU was found to detect its compute capability; "
        f"available devices: {', '.join(available_devices())}. To compile for a GPU elsewhere, "
        "pass target='sm_90' (or the GPU's capability) and save() the result."
    )


def detect_vulkan_target() -> str:
    """A Vulkan compile target for the physical device: NVIDIA by compute capability, others by
    the name the Vulkan driver gives, and the conservative baseline profile for a device braze
    does not know. A target must match the device: code for one with 32 lanes a subgroup
    (ampere) computes reductions wrong on one with 8 (Mesa's llvmpipe), without an error."""
    try:
        arch = detect_cuda_arch()
    except DeviceError:
        arch = None
    if arch:
        number = int(arch[3:])
        # Hopper has no Vulkan target of its own in IREE 3.13; ampere's runs on the H200.
        return "ada" if number == 89 else "ampere" if number >= 80 else "turing"
    names = vulkan_device_names()
    if names:
        return vulkan_target_for(names[0])
    raise DeviceError(
        "device='vulkan' but no Vulkan device could be opened (is the Vulkan loader, libvulkan1, "
        f"and a GPU driver installed?); available devices: {', '.join(available_devices())}. "
        "To compile for a GPU elsewhere, pass target='ampere' (or another Vulkan target)."
    )


_VULKAN_NAMES: list[str] | None = None


def vulkan_device_names() -> list[str]:
    """The names iree.runtime's Vulkan driver gives its devices ([] when there is none); asked
    once per process, as _can_open asks whether a driver opens."""
    global _VULKAN_NAMES
    if _VULKAN_NAMES is None:
        try:
            import iree.runtime as rt

            _VULKAN_NAMES = [str(d.get("name", "")) for d in rt.get_driver("vulkan").query_available_devices()]
        except Exception:
            _VULKAN_NAMES = []
    return list(_VULKAN_NAMES)


def vulkan_target_for(name: str) -> str:
    """The Vulkan target for a device by its driver's name."""
    low = name.lower()
    if "llvmpipe" in low:
        return "llvmpipe"
    if "nvidia" in low or "geforce" in low or "quadro" in low:
        return "ada" if re.search(r"rtx [45]0\d\d|l40|l4\b", low) else "ampere"
    if re.search(r"radeon rx 7\d\d\d|gfx11", low):
        return "rdna3"
    if re.search(r"mali-g(57|77)\b", low):
        return "valhall"
    return "vp_android_baseline_2022"


def check_runnable(target: Target) -> None:
    """Raise DeviceError when this machine cannot run code for the target's device."""
    if target.device == "cpu":
        return
    if not _can_open(target.driver):
        raise DeviceError(
            f"this module was compiled for {target.describe()}, but iree.runtime's "
            f"'{target.driver}' driver finds no device here; available devices: "
            f"{', '.join(available_devices())}. save() it and load it on a machine with the device."
        )
