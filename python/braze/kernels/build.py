"""Compiling a kernel spec (GemmSpec, AttentionSpec, RowSpec) to PTX with Triton, cached on disk.

    $BRAZE_CACHE_DIR/kernels/<kernel name>-<versions>/   (default ~/.cache/braze/kernels/...)
        kernel.py     the generated Triton source (Triton's JIT reads it from its file)
        kernel.ptx    what IREE embeds
        meta.json     {"name", "shared", "warps", "ptx_sha256"}

Only `triton.compile(ASTSource(...), target=GPUTarget("cuda", 90, 32))` is used: no GPU, no
driver, no JIT launch, no autotuner. A cache entry is whole or absent (each file is written
atomically, meta.json last, with the PTX's hash): an entry that does not check out is rebuilt.
Every kernel's PTX, compiled or from the cache, does the arithmetic its spec asks
(braze.kernels.precision: a 3xTF32 float32 kernel is never silently one TF32 product), or the
build fails as the braze bug it is (InternalError).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

from braze.errors import CompileError, KernelResourceError
from braze.fileutil import cache_home, write_atomically

from braze.kernels import attention, gemm, rows, triton_version
from braze.kernels.precision import check_precision
from braze.kernels.spec import AttentionSpec, GemmSpec, RowSpec

Spec = GemmSpec | AttentionSpec | RowSpec

ARCHS = {"sm_90": 90}
"""CUDA capabilities braze generates kernels for (wgmma: sm_90a code runs on 9.0 only)."""
SHARED_MAX = {"sm_90": 232448}
"""The most shared memory a kernel may ask for (227 KiB on sm_90): Triton compiles a kernel
needing more without a word, and it would fail only at load on the GPU host (128x256 stream-K
asked for 272 KiB)."""


@dataclass(frozen=True)
class Built:
    name: str
    ptx: str
    shared: int
    warps: int
    grid: tuple[int, int, int]
    cached: bool
    scratch: int = 0
    """Bytes of global scratch a program takes (TMA descriptors made on the device): braze binds
    a buffer of grid x scratch after the kernel's own (braze.compiler.kernel_embed)."""


def available(arch: str) -> str | None:
    """Why kernels cannot be generated for `arch` here (None when they can)."""
    if arch not in ARCHS:
        return f"no generated kernels for {arch} (braze's templates target {', '.join(ARCHS)})"
    if triton_version() is None:
        return "Triton is not installed (pip install 'braze[kernels]' or triton==3.6.0)"
    return None


def cache_root() -> Path:
    return cache_home() / "kernels"


def template(spec: Spec):
    """The template module that writes the spec's kernel (source, kernel_name, grid, signature,
    constexprs, options)."""
    if isinstance(spec, RowSpec):
        return rows
    return attention if isinstance(spec, AttentionSpec) else gemm


def _entry(spec: Spec, arch: str) -> Path:
    tpl = template(spec)
    versions = hashlib.sha256(f"{triton_version()} {arch} {_template_hash(tpl)}".encode())
    return cache_root() / f"{tpl.kernel_name(spec)}-{versions.hexdigest()[:12]}"


_TEMPLATE_HASHES: dict = {}


def _template_hash(tpl) -> str:
    """The template's own source and the GEMM template's (the attention and row ones import its tables)."""
    if tpl.__name__ not in _TEMPLATE_HASHES:
        text = Path(tpl.__file__).read_bytes() + Path(gemm.__file__).read_bytes()
        _TEMPLATE_HASHES[tpl.__name__] = hashlib.sha256(text).hexdigest()[:12]
    return _TEMPLATE_HASHES[tpl.__name__]


def _load(entry: Path) -> Built | None:
    try:
        meta = json.loads((entry / "meta.json").read_text())
        ptx = (entry / "kernel.ptx").read_text()
        if hashlib.sha256(ptx.encode()).hexdigest() != meta["ptx_sha256"]:
            return None
        return Built(meta["name"], ptx, int(meta["shared"]), int(meta["warps"]), tuple(meta["grid"]), True,
                     int(meta.get("scratch", 0)))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def build(spec: Spec, arch: str = "sm_90") -> Built:
    """The PTX of the spec's kernel (spec.tile set), from the cache or compiled now."""
    why = available(arch)
    if why:
        raise CompileError(f"braze cannot generate the kernel for {spec.describe()}: {why}")
    entry = _entry(spec, arch)
    found = _load(entry)
    if found is not None:
        check_precision(spec, found.ptx, str(entry / "kernel.py"))
        return found
    entry.mkdir(parents=True, exist_ok=True)
    tpl = template(spec)
    name = tpl.kernel_name(spec)
    path = entry / "kernel.py"
    write_atomically(path, tpl.source(spec).encode(), overwrite=True)
    try:
        ptx, shared, warps, scratch = _compile(path, name, spec, ARCHS[arch])
    except Exception as e:  # Triton's errors are many kinds; all of them are braze's bug here
        raise CompileError(f"Triton failed to compile braze's kernel for {spec.describe()} "
                           f"(a braze bug; the generated source is {path}): {type(e).__name__}: {e}") from None
    if shared > SHARED_MAX[arch]:
        raise KernelResourceError(f"braze's kernel for {spec.describe()} needs {shared} bytes of shared memory, more than "
                           f"the {SHARED_MAX[arch]} {arch} gives a kernel: a smaller tile or fewer stages fit")
    check_precision(spec, ptx, str(path))
    write_atomically(entry / "kernel.ptx", ptx.encode(), overwrite=True)
    meta = {"name": name, "shared": shared, "warps": warps, "grid": list(tpl.grid(spec)), "scratch": scratch,
            "ptx_sha256": hashlib.sha256(ptx.encode()).hexdigest(), "spec": spec.to_json()}
    write_atomically(entry / "meta.json", json.dumps(meta, indent=1).encode(), overwrite=True)
    return Built(name, ptx, shared, warps, tpl.grid(spec), False, scratch)


def build_all(specs: list, arch: str = "sm_90", workers: int | None = None) -> list[Built]:
    """build() for each spec, the ones not in the cache yet several at a time (threads, one per
    core by default: Triton's MLIR and LLVM passes run without the GIL), in the specs' order.
    The first failure is raised, as build() raises it."""
    import os
    from concurrent.futures import ThreadPoolExecutor

    key = lambda spec: (spec.to_json(), spec.tile)  # noqa: E731  (specs hold lists; the JSON leaves the tile out)
    unique = list({key(spec): spec for spec in specs}.values())
    missing = [spec for spec in unique if _load(_entry(spec, arch)) is None] if available(arch) is None else []
    workers = min(len(missing), workers or os.cpu_count() or 1)
    built = {}
    if workers > 1:
        with ThreadPoolExecutor(workers, thread_name_prefix="braze-triton") as pool:
            for spec, result in zip(missing, pool.map(lambda spec: build(spec, arch), missing)):
                built[key(spec)] = result
    return [built.get(key(spec)) or build(spec, arch) for spec in specs]


def load_function(path: Path, name: str):
    """The Triton function `name` defined by the generated source at `path`."""
    module_name = f"_braze_kernel_{name}"
    loaded = importlib.util.spec_from_file_location(module_name, path)
    module = importlib.util.module_from_spec(loaded)
    sys.modules[module_name] = module
    try:
        loaded.loader.exec_module(module)
    finally:
        sys.modules.pop(module_name, None)
    return getattr(module, name)


_AST_LOCK = threading.Lock()


def _compile(path: Path, name: str, spec: Spec, capability: int) -> tuple[str, int, int, int]:
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    class Source(ASTSource):
        """Triton's source, its AST parsed (hash, make_ir) under one lock: CPython 3.11's ast.parse
        is not thread-safe ("AST constructor recursion depth mismatch", seen in build_all's
        threads; python/cpython#106905); the MLIR, LLVM and ptxas stages still run in parallel."""

        def hash(self):
            with _AST_LOCK:
                return super().hash()

        def make_ir(self, *args, **kwargs):
            with _AST_LOCK:
                return super().make_ir(*args, **kwargs)

    tpl = template(spec)
    fn = load_function(path, name)
    sig = tpl.signature(spec)
    pointers = [i for i, t in enumerate(sig.values()) if t.startswith("*")]
    warps, stages = tpl.options(spec)
    src = Source(fn, signature=sig, constexprs=tpl.constexprs(spec),
                 attrs={(i,): [["tt.divisibility", 16]] for i in pointers})
    compiled = triton.compile(src, target=GPUTarget("cuda", capability, 32),
                              options={"num_warps": warps, "num_stages": stages})
    meta = compiled.metadata
    if getattr(meta, "profile_scratch_size", 0):
        raise RuntimeError(f"the kernel needs profile_scratch_size={meta.profile_scratch_size}, which braze does not bind")
    scratch = int(getattr(meta, "global_scratch_size", 0) or 0)
    align = int(getattr(meta, "global_scratch_align", 1) or 1)
    scratch = -(-scratch // align) * align
    return compiled.asm["ptx"], int(meta.shared), int(meta.num_warps), scratch
