"""Per-launch host cost of cuLaunchKernel through ctypes (what braze.runtime.cuda.driver uses) and through
NVIDIA's cuda-bindings, on one kernel of a launch plan; and a whole braze launcher call.

    python bench/experiments/launch_cost.py DIR/chain1024.braze      (on the GPU host)
"""

import ctypes
import sys
import time


def main(path: str) -> None:
    import torch

    import braze

    module = braze.load(path, runtime="launch")
    launcher = module.launcher
    (op, dispatch), = [s for s in launcher._steps if s[0] == "dispatch"][:1]
    x = torch.randn(module.signature.inputs[0].shape, device="cuda")
    out = torch.empty_like(x)
    dispatch.values[0], dispatch.values[1] = x.data_ptr(), out.data_ptr()
    stream = torch._C._cuda_getCurrentRawStream(0)
    n = 20000
    lib = launcher.driver.lib
    gx, gy, gz = dispatch.grid
    bx, by, bz = dispatch.block
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(n):
        lib.cuLaunchKernel(dispatch.function, gx, gy, gz, bx, by, bz, dispatch.shared, stream, dispatch.params, None)
    torch.cuda.synchronize()
    print(f"ctypes cuLaunchKernel:        {(time.perf_counter() - t) / n * 1e6:6.2f} us per launch")
    try:
        from cuda.bindings import driver as cu
    except ImportError:
        print("cuda-bindings: not installed")
    else:
        fn = cu.CUfunction(dispatch.function)
        s = cu.CUstream(stream)
        args = ctypes.addressof(dispatch.params)
        torch.cuda.synchronize()
        t = time.perf_counter()
        for _ in range(n):
            cu.cuLaunchKernel(fn, gx, gy, gz, bx, by, bz, dispatch.shared, s, args, 0)
        torch.cuda.synchronize()
        print(f"cuda-bindings cuLaunchKernel: {(time.perf_counter() - t) / n * 1e6:6.2f} us per launch")
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(n // 4):
        module(x)
    torch.cuda.synchronize()
    print(f"braze call (launcher):        {(time.perf_counter() - t) / (n // 4) * 1e6:6.2f} us per call")


if __name__ == "__main__":
    main(sys.argv[1])
