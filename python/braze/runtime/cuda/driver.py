"""The few CUDA driver API calls the launcher needs, through ctypes on libcuda.

ctypes rather than NVIDIA's cuda-bindings: it needs no package (libcuda is there wherever the
GPU is), and a launch is one foreign call either way; bench/experiments/launch_cost.py measures
both per call on the GPU host.
"""

from __future__ import annotations

import ctypes
import ctypes.util

from braze.errors import DeviceError

CUDA_SUCCESS = 0
CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8

_LIB = None


def _lib():
    global _LIB
    if _LIB is None:
        for name in ("libcuda.so.1", "libcuda.so", ctypes.util.find_library("cuda")):
            if not name:
                continue
            try:
                _LIB = ctypes.CDLL(name)
                break
            except OSError:
                continue
        if _LIB is None:
            raise DeviceError("the CUDA launcher needs the NVIDIA driver's libcuda.so.1, which is not here")
        _declare(_LIB)
    return _LIB


def _declare(lib) -> None:
    p, u32, i32, u64, sz = ctypes.c_void_p, ctypes.c_uint, ctypes.c_int, ctypes.c_uint64, ctypes.c_size_t
    signatures = {
        "cuInit": [u32],
        "cuCtxGetCurrent": [ctypes.POINTER(p)],
        "cuModuleLoadData": [ctypes.POINTER(p), ctypes.c_char_p],
        "cuModuleUnload": [p],
        "cuModuleGetFunction": [ctypes.POINTER(p), p, ctypes.c_char_p],
        "cuFuncSetAttribute": [p, i32, i32],
        "cuLaunchKernel": [p, u32, u32, u32, u32, u32, u32, u32, p, ctypes.POINTER(p), ctypes.POINTER(p)],
        "cuMemsetD8Async": [u64, ctypes.c_ubyte, sz, p],
        "cuMemsetD16Async": [u64, ctypes.c_ushort, sz, p],
        "cuMemsetD32Async": [u64, u32, sz, p],
        "cuMemcpyDtoDAsync_v2": [u64, u64, sz, p],
        "cuGetErrorString": [i32, ctypes.POINTER(ctypes.c_char_p)],
    }
    for name, args in signatures.items():
        fn = getattr(lib, name)
        fn.argtypes, fn.restype = args, i32


def check(status: int, what: str) -> None:
    if status != CUDA_SUCCESS:
        text = ctypes.c_char_p()
        _lib().cuGetErrorString(status, ctypes.byref(text))
        raise DeviceError(f"CUDA {what} failed: {text.value.decode() if text.value else status}")


class Driver:
    """libcuda, used in the context torch made current (its primary context on the device)."""

    def __init__(self):
        self.lib = _lib()
        check(self.lib.cuInit(0), "cuInit")
        context = ctypes.c_void_p()
        check(self.lib.cuCtxGetCurrent(ctypes.byref(context)), "cuCtxGetCurrent")
        if not context.value:
            raise DeviceError("no CUDA context is current: torch must have initialized the device first")
        self.context = context.value

    def load_module(self, ptx: str) -> int:
        module = ctypes.c_void_p()
        check(self.lib.cuModuleLoadData(ctypes.byref(module), ptx.encode() + b"\0"), "cuModuleLoadData (PTX)")
        return module.value

    def function(self, module: int, name: str, shared_memory: int) -> int:
        fn = ctypes.c_void_p()
        check(self.lib.cuModuleGetFunction(ctypes.byref(fn), ctypes.c_void_p(module), name.encode()),
              f"cuModuleGetFunction ({name})")
        if shared_memory > 48 * 1024:
            check(self.lib.cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, shared_memory),
                  f"cuFuncSetAttribute ({name})")
        return fn.value
