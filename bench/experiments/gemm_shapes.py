"""Tile shapes the GEMM template cannot make yet, measured before they go into it (issue 16):
bf16 Linear layers y = x w^T + b with tiles BN0 + BN1 columns wide (64 + 32 = 96: cuBLAS's
1024x768x3072 runs 96-wide tiles, 128 of them, one wave) and split K in two with a fixup that
stores one partial instead of two (bench/experiments/gemm_shapes_kernel.py).

    python bench/experiments/gemm_shapes.py build DIR     (here: Triton's ASTSource for sm_90, no GPU)
    python bench/experiments/gemm_shapes.py run DIR       (GPU host: errors against float64, CUDA-graph
                                                           times per launch beside cuBLAS's)
    ncu --clock-control none --csv --metrics gpu__time_duration.sum \\
        python bench/experiments/gemm_shapes.py profile DIR > ncu.csv
    python bench/experiments/gemm_shapes.py table DIR ncu.csv

Kernels are launched with braze's own CUDA driver calls (braze.runtime.cuda.driver) on torch's stream,
as braze's launcher launches IREE's and braze's kernels; each variant's function is renamed
after its tile so that ncu's rows name it.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

SHAPES = {
    # name: (M, N, K)
    "ffn_down_1024x768x3072": (1024, 768, 3072),
    "proj_1024x768x768": (1024, 768, 768),
    "mlp_down_256x1024x4096": (256, 1024, 4096),
}

VARIANTS = {
    # (BM, BN0, BN1, BK, warps, stages, split, fix, even, tma, ws)
    "ffn_down_1024x768x3072": [
        (64, 64, 32, 64, 4, 5, 1, 0, 0, 0, 0),   # the cost model's since the second run
        (64, 64, 32, 64, 4, 4, 1, 0, 0, 1, 1),
        (64, 64, 32, 64, 4, 5, 1, 0, 0, 1, 1),
        (64, 64, 32, 64, 4, 6, 1, 0, 0, 1, 1),
        (64, 64, 32, 128, 4, 3, 1, 0, 0, 1, 1),
        (128, 128, 0, 64, 4, 3, 2, 0, 0, 1, 1),
        (128, 128, 0, 64, 4, 4, 2, 0, 0, 1, 1),
        (128, 64, 32, 64, 4, 4, 2, 0, 0, 1, 1),
        (128, 64, 32, 64, 4, 5, 2, 0, 0, 1, 1),
        (64, 128, 64, 64, 4, 4, 2, 0, 0, 1, 1),
        (128, 128, 0, 64, 4, 4, 1, 0, 0, 1, 1),
    ],
    "proj_1024x768x768": [
        (64, 64, 32, 64, 4, 5, 1, 0, 0, 0, 0),
        (64, 64, 32, 64, 4, 4, 1, 0, 0, 1, 1),
        (64, 64, 32, 64, 4, 5, 1, 0, 0, 1, 1),
    ],
    "mlp_down_256x1024x4096": [
        (64, 64, 0, 64, 4, 4, 4, 0, 0, 0, 0),    # the cost model's (split 4)
        (64, 64, 0, 64, 4, 4, 4, 0, 0, 1, 1),
        (128, 128, 0, 64, 4, 4, 4, 0, 0, 1, 1),
        (64, 128, 0, 64, 4, 4, 4, 0, 0, 1, 1),
    ],
}

PROBES = {
    # (shape, variant): grids to launch it at besides its own, to time a lone program (or
    # a lone tile's parts) against a full wave: latency-bound programs take as long alone
    "ffn_down_1024x768x3072": [((64, 64, 32, 64, 4, 5, 1, 0, 0, 1, 1), (1, 64)),
                               ((128, 128, 0, 64, 4, 4, 2, 0, 0, 1, 1), (2, 48))],
}


def tag(v) -> str:
    bm, bn0, bn1, bk, w, s, split, fix, even, tma, ws = v
    return (f"{bm}x{bn0}+{bn1}x{bk}w{w}s{s}k{split}f{fix}" + ("e" if even else "") + ("t" if tma else "")
            + ("W" if ws else ""))


def _name(shape: str, v) -> str:
    return "g_" + f"{shape.split('_')[0]}_{tag(v)}".replace("+", "p")


def build(folder: Path) -> int:
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    sys.path.insert(0, str(HERE.parents[1] / "python"))
    from braze.kernels.build import load_function

    folder.mkdir(parents=True, exist_ok=True)
    text = (HERE / "gemm_shapes_kernel.py").read_text()
    manifest = []
    for shape, variants in VARIANTS.items():
        m, n, k = SHAPES[shape]
        for v in variants:
            bm, bn0, bn1, bk, warps, stages, split, fix, even, tma, ws = v
            name = _name(shape, v)
            path = folder / f"{name}.py"
            path.write_text(text.replace("def gemm(", f"def {name}("))
            fn = load_function(path, name)
            sig = {"a_ptr": "*bf16", "b_ptr": "*bf16", "bias_ptr": "*bf16", "cnt_ptr": "*i32", "c_ptr": "*bf16",
                   "ws_ptr": "*fp32"}
            consts = {"M": m, "N": n, "K": k, "BM": bm, "BN0": bn0, "BN1": bn1, "BK": bk, "SPLIT": split,
                      "FIX": fix, "GROUP_M": 8, "EVEN": even, "TMA": tma, "WS": ws}
            sig.update({c: "constexpr" for c in consts})
            src = ASTSource(fn, signature=sig, constexprs=consts, attrs={(i,): [["tt.divisibility", 16]] for i in range(6)})
            try:
                compiled = triton.compile(src, target=GPUTarget("cuda", 90, 32),
                                          options={"num_warps": warps, "num_stages": stages})
            except Exception as e:  # a variant that does not compile is reported, the rest still built
                print(f"{shape} {tag(v)}: does not compile: {type(e).__name__}: {str(e)[:300]}")
                continue
            shared = int(compiled.metadata.shared)
            if shared > 232448:
                print(f"{shape} {tag(v)}: {shared} bytes of shared memory, over sm_90's 227 KiB")
                continue
            (folder / f"{name}.ptx").write_text(compiled.asm["ptx"])
            scratch = int(getattr(compiled.metadata, "global_scratch_size", 0) or 0)
            tiles = -(-m // bm) * -(-n // (bn0 + bn1))
            warps = int(compiled.metadata.num_warps)  # a warp-specialized kernel has more than asked for
            manifest.append({"shape": shape, "variant": list(v), "name": name, "shared": shared, "warps": warps,
                             "grid": tiles * split, "tiles": tiles,
                             "wgmma": compiled.asm["ptx"].count("wgmma.mma_async"),
                             "probes": dict(PROBES.get(shape, ())).get(v, ()), "scratch": scratch})
            print(f"{shape} {tag(v)}: {tiles * split} programs of {warps} warps, {shared} B shared, "
                  f"{manifest[-1]['wgmma']} wgmma in the PTX", flush=True)
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=1))
    return 0


class _Kernels:
    """Each variant loaded with braze's driver calls, launched on torch's current stream."""

    def __init__(self, folder: Path):
        import torch

        from braze.runtime.cuda.driver import Driver, check

        torch.zeros(1, device="cuda")
        self.driver, self.check = Driver(), check
        self.manifest = json.loads((folder / "manifest.json").read_text())
        self.fns = {}
        for e in self.manifest:
            module = self.driver.load_module((folder / f"{e['name']}.ptx").read_text())
            self.fns[e["name"]] = self.driver.function(module, e["name"], e["shared"])
        self.data, self.scratch = {}, {}
        for shape, (m, n, k) in SHAPES.items():
            gen = torch.Generator(device="cuda").manual_seed(m * 7 + n * 5 + k)
            x = torch.randn(m, k, device="cuda", generator=gen).bfloat16()
            w = (torch.randn(n, k, device="cuda", generator=gen) / k ** 0.5).bfloat16()
            b = torch.randn(n, device="cuda", generator=gen).bfloat16()
            ref = torch.nn.functional.linear(x.double(), w.double(), b.double())
            tiles = max([e["tiles"] for e in self.manifest if e["shape"] == shape] or [1])
            ws = torch.empty(tiles * 4 * 128 * 256, device="cuda", dtype=torch.float32)
            cnt = torch.zeros(tiles, device="cuda", dtype=torch.int32)
            self.data[shape] = (x, w, b, ref, ws, cnt)

    def launch(self, e, out, grid=None):
        import torch

        x, w, b, _, ws, cnt = self.data[e["shape"]]
        scratch = 0
        if e.get("scratch"):  # TMA descriptors made on the device: a slot a program
            if e["name"] not in self.scratch:
                self.scratch[e["name"]] = torch.empty(e["grid"] * e["scratch"], device="cuda", dtype=torch.uint8)
            scratch = self.scratch[e["name"]].data_ptr()
        ptrs = [x.data_ptr(), w.data_ptr(), b.data_ptr(), cnt.data_ptr(), out.data_ptr(), ws.data_ptr(), scratch, 0]
        cells = [ctypes.c_void_p(p) for p in ptrs]
        params = (ctypes.c_void_p * len(cells))(*[ctypes.cast(ctypes.byref(c), ctypes.c_void_p) for c in cells])
        stream = torch.cuda.current_stream().cuda_stream
        self.check(self.driver.lib.cuLaunchKernel(ctypes.c_void_p(self.fns[e["name"]]), grid or e["grid"], 1, 1,
                                                  32 * e["warps"], 1, 1, e["shared"], ctypes.c_void_p(stream),
                                                  params, None), f"cuLaunchKernel ({e['name']})")

    def cublas(self, shape):
        import torch

        x, w, b, *_ = self.data[shape]
        return torch.nn.functional.linear(x, w, b)


def _graph_us(fn, launches: int = 20, replays: int = 20) -> float:
    """Microseconds per launch: `launches` launches captured in one CUDA graph, the median of 5
    timings of `replays` replays."""
    import torch

    fn()
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(launches):
            fn()
    graph.replay()
    torch.cuda.synchronize()
    times = []
    for _ in range(5):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(replays):
            graph.replay()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1000 / (replays * launches))
    return statistics.median(times)


def run(folder: Path) -> int:
    import torch

    ks = _Kernels(folder)
    bad = 0
    probes = []
    for shape in SHAPES:
        entries = [e for e in ks.manifest if e["shape"] == shape]
        if not entries:
            continue
        x, w, b, ref, *_ = ks.data[shape]
        m, n, k = SHAPES[shape]
        flop = 2 * m * n * k
        cublas = ks.cublas(shape)
        cublas_err = (cublas.double() - ref).abs().max().item()
        cublas_us = _graph_us(lambda: ks.cublas(shape))
        print(f"{shape}: cuBLAS {cublas_us:.2f} us/launch ({flop / cublas_us / 1e6:.0f} TFLOP/s), error {cublas_err:.2e}")
        rows = []
        for e in entries:
            out = torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16)
            for _ in range(3):  # the counters must come back to zero: a second and third call agree
                ks.launch(e, out)
            torch.cuda.synchronize()
            err = (out.double() - ref).abs().max().item()
            ok = err <= 2 * cublas_err + 1e-2 and not out.isnan().any().item()
            bad += not ok
            us = _graph_us(lambda: ks.launch(e, out))
            rows.append((us, tag(e["variant"]), e["grid"], err, ok))
            for g in e["probes"]:
                probes.append((tag(e["variant"]), g, _graph_us(lambda: ks.launch(e, out, g)), us, e["grid"]))
        for us, t, g, err, ok in sorted(rows):
            print(f"    {t:26s} {g:4d} programs {us:7.2f} us  {cublas_us / us:5.2f}x cuBLAS  error {err:.2e}"
                  f"{'' if ok else '  WRONG'}", flush=True)
        for t, g, us, full, programs in probes:
            print(f"    probe {t:20s} the first {g:3d} of its {programs} programs alone: {us:7.2f} us ({us / full:.2f} of all)")
        probes.clear()
    return 1 if bad else 0


def profile(folder: Path) -> int:
    import torch

    ks = _Kernels(folder)
    for shape in SHAPES:
        m, n, _ = SHAPES[shape]
        out = torch.empty((m, n), device="cuda", dtype=torch.bfloat16)
        for e in [e for e in ks.manifest if e["shape"] == shape]:
            for _ in range(4):
                ks.launch(e, out)
        # torch's kernels for F.linear come next; a kernel name of cuBLAS's says its tile
        for _ in range(4):
            ks.cublas(shape)
        torch.cuda.synchronize()
    return 0


def table(folder: Path, csv_path: Path) -> int:
    sys.path.insert(0, str(HERE))
    import ncu_table

    manifest = json.loads((folder / "manifest.json").read_text())
    by_name = {e["name"]: e for e in manifest}
    ours: dict = {}
    theirs: dict = {}
    shape = None
    for kernel, us in ncu_table.launches(str(csv_path)):
        if kernel in by_name:
            shape = by_name[kernel]["shape"]
            ours.setdefault(kernel, []).append(us)
        elif shape is not None:
            theirs.setdefault(shape, []).append((kernel, us))
    for s in SHAPES:
        if s not in theirs:
            continue
        cublas = sum(us for _, us in theirs[s]) / 4  # 4 calls
        names = sorted({k for k, _ in theirs[s]})
        print(f"{s}: cuBLAS (every kernel of F.linear, per call) {cublas:.2f} us ({', '.join(names)})")
        rows = sorted(((statistics.median(v), by_name[k]) for k, v in ours.items() if by_name[k]["shape"] == s),
                      key=lambda row: row[0])
        for us, e in rows:
            print(f"    {tag(e['variant']):26s} {e['grid']:4d} programs {us:7.2f} us  {cublas / us:5.2f}x cuBLAS")
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("cmd", choices=("build", "run", "profile", "table"))
    p.add_argument("dir", type=Path)
    p.add_argument("csv", nargs="?", type=Path)
    args = p.parse_args(argv)
    if args.cmd == "table":
        return table(args.dir, args.csv)
    return {"build": build, "run": run, "profile": profile}[args.cmd](args.dir)


if __name__ == "__main__":
    sys.exit(main())
