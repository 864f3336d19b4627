"""GEMM tile configurations on CUDA: IREE's default against hand-set compilation_info.

    python bench/experiments/gemm_configs.py build DIR   # here: iree-compile each candidate (sm_80 flag)
    python bench/experiments/gemm_configs.py run DIR     # GPU host: time each per call, check vs cuBLAS

f32 1024x768x768 (TransformerEncoderLayer(768)'s projection) with SIMT tiles, bf16 4096^3 with
mma.sync tiles. The winners are the configurations fusion-configure-kernels attaches.
"""

import glob
import os
import subprocess
import sys

import numpy as np
from braze.tools.timing import per_call_ms

F32 = [((64, 64), 8, (4, 4)), ((128, 64), 8, (8, 4)), ((64, 128), 8, (4, 8)), ((128, 128), 8, (8, 8)),
       ((64, 64), 16, (4, 4)), ((128, 128), 16, (8, 8)), ((32, 64), 8, (2, 4)), ((64, 32), 8, (4, 2))]
BF16 = [((128, 128), (4, 8), 4, 128, 3), ((128, 128), (4, 4), 4, 256, 3), ((128, 256), (4, 8), 2, 256, 3),
        ((256, 128), (8, 4), 2, 256, 3), ((128, 128), (2, 4), 4, 256, 4), ((128, 64), (4, 4), 2, 128, 2)]
FLAGS = ["--iree-hal-target-device=cuda", "--iree-cuda-target=sm_80"]


def build(out: str) -> None:
    import torch

    from braze.compiler import frontend

    class MatMul(torch.nn.Module):
        def forward(self, a, b):
            return a @ b

    os.makedirs(out, exist_ok=True)
    cases = {"f32": (torch.randn(1024, 768), torch.randn(768, 768)),
             "bf16": (torch.randn(4096, 4096).bfloat16(), torch.randn(4096, 4096).bfloat16())}
    for kind, args in cases.items():
        base = str(frontend.import_model(MatMul(), args).module)
        variants = {f"{kind}_default": None}
        if kind == "f32":
            for wg, red, th in F32:
                variants[f"f32_wg{wg[0]}x{wg[1]}_r{red}_t{th[0]}x{th[1]}"] = (
                    f"workgroup = [{wg[0]}, {wg[1]}, 0], reduction = [0, 0, {red}], thread = [{th[0]}, {th[1]}, 0], "
                    "promote_operands = [0, 1]", "[16, 16, 1]", "")
        else:
            for wg, sg, red, threads, stages in BF16:
                variants[f"bf16_wg{wg[0]}x{wg[1]}_sg{sg[0]}x{sg[1]}_r{red}_t{threads}_s{stages}"] = (
                    "convert_acc_gemm, mma_kind = #iree_gpu.mma_layout<NV_MMA_SYNC_F32_16x8x16_BF16>, "
                    f"promote_operands = [0, 1], reduction = [0, 0, {red}], subgroup = [{sg[0]}, {sg[1]}, 0], "
                    f"workgroup = [{wg[0]}, {wg[1]}, 0]", f"[{threads}, 1, 1]",
                    f", {{gpu_pipeline_options = #iree_gpu.pipeline_options<prefetch_num_stages = {stages}, "
                    "no_reduce_shared_memory_bank_conflicts = false, use_igemm_convolution = false>}")
        for name, spec in variants.items():
            text = base
            if spec:
                lowering, size, options = spec
                info = (f"#iree_codegen.compilation_info<lowering_config = #iree_gpu.lowering_config<{{{lowering}}}>, "
                        "translation_info = #iree_codegen.translation_info<pipeline = #iree_gpu.pipeline<TileAndFuse> "
                        f"workgroup_size = {size} subgroup_size = 32{options}>>")
                text = base.replace("linalg.matmul ins(", f"linalg.matmul {{compilation_info = {info}}} ins(", 1)
            src = os.path.join(out, f"{name}.mlir")
            with open(src, "w") as f:
                f.write(text)
            subprocess.run(["iree-compile", src, *FLAGS, "-o", os.path.join(out, f"{name}.vmfb")], check=True)
            os.remove(src)
            print("built", name)


def run(out: str) -> None:
    import iree.runtime as rt
    import torch

    dev, inst = rt.get_device("cuda"), rt.VmInstance()

    def load(path):
        vm = rt.VmModule.copy_buffer(inst, open(path, "rb").read())
        return rt.VmContext(inst, [rt.create_hal_module(inst, dev), vm]), vm.lookup_function("main")

    def view(arr, et):
        return dev.allocator.allocate_buffer_copy(memory_type=rt.MemoryType.DEVICE_LOCAL,
                                                  allowed_usage=rt.BufferUsage.DEFAULT, device=dev, buffer=arr,
                                                  element_type=et)

    def call(ctx, fn, views):
        args = rt.VmVariantList(len(views))
        for v in views:
            args.push_ref(v)
        res = rt.VmVariantList(1)
        ctx.invoke(fn, args, res)
        return res.get_as_object(0, rt.HalBufferView)

    def per_call_us(fn, n):
        return per_call_ms(fn, n, warmup=3) * 1e3

    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((1024, 768), dtype=np.float32), rng.standard_normal((768, 768), dtype=np.float32)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    ta, tb = torch.from_numpy(a).cuda(), torch.from_numpy(b).cuda()
    print(f"f32 1024x768x768 torch (cuBLAS, no TF32): {per_call_us(lambda: ta @ tb, 200):8.1f} us/call")
    views = [view(a, rt.HalElementType.FLOAT_32), view(b, rt.HalElementType.FLOAT_32)]
    for path in sorted(glob.glob(os.path.join(out, "f32_*.vmfb"))):
        ctx, fn = load(path)
        got = rt.DeviceArray(dev, call(ctx, fn, views), implicit_host_transfer=True).to_host()
        err = np.abs(got - ref).max() / np.abs(ref).max()
        print(f"{os.path.basename(path)[:-5]:36s} {per_call_us(lambda: call(ctx, fn, views), 100):8.1f} us/call  rel err {err:.1e}")
    a, b = rng.standard_normal((4096, 4096), dtype=np.float32), rng.standard_normal((4096, 4096), dtype=np.float32)
    ta, tb = torch.from_numpy(a).cuda().bfloat16(), torch.from_numpy(b).cuda().bfloat16()
    ref = ta.float() @ tb.float()
    print(f"bf16 4096^3 torch (cuBLAS): {per_call_us(lambda: ta @ tb, 50):8.1f} us/call")
    views = [view(ta.cpu().view(torch.int16).numpy(), rt.HalElementType.BFLOAT_16),
             view(tb.cpu().view(torch.int16).numpy(), rt.HalElementType.BFLOAT_16)]
    for path in sorted(glob.glob(os.path.join(out, "bf16_*.vmfb"))):
        ctx, fn = load(path)
        raw = rt.DeviceArray(dev, call(ctx, fn, views), implicit_host_transfer=True).to_host()
        got = torch.from_numpy(np.ascontiguousarray(raw).view(np.int16)).view(torch.bfloat16).float().cuda()
        err = ((got - ref).abs().max() / ref.abs().max()).item()
        print(f"{os.path.basename(path)[:-5]:36s} {per_call_us(lambda: call(ctx, fn, views), 20):8.1f} us/call  rel err {err:.1e}")


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("build", "run"):
        sys.exit(__doc__)
    build(sys.argv[2]) if sys.argv[1] == "build" else run(sys.argv[2])
