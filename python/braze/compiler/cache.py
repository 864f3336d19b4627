"""The persistent compile cache: a compile already made, in any process, is loaded, not redone.

    $BRAZE_CACHE_DIR/compiled/<key>.braze     (default ~/.cache/braze/compiled)

The key is a SHA-256 over everything that decides what braze.compile produces:
- the exported program (torch.export's graph code, its signature and call structure, the
  example inputs' shapes and dtypes, and the bytes of every parameter, buffer and constant),
- the resolved target, every compile option, the pipeline text (which names the generated-kernel
  and float32 choices), the tuning cache's bytes,
- the versions of braze's own sources (a hash of its files), torch, torch-mlir, IREE and Triton.
A hit skips import, fusion, IREE and Triton. Export is what this key is made of; a quick key
(braze.compiler.quickkey: the model's classes, attributes and weights, the inputs' specs, validated by
one eager call on a remembered probe) finds the entry without it, which in a new process saves
torch.export's ~2 s first call.
Entries are artifacts (`CompiledModule.save`), written atomically: concurrent compiles of one
model both write whole files and the later replaces the earlier. An entry that does not load is
removed and rebuilt, never used. Past 4 GiB (BRAZE_COMPILE_CACHE_MAX_MIB) the entries used longest
ago are removed. `compile(cache=False)` or BRAZE_COMPILE_CACHE=0 turns it off; `braze cache
info|clear` shows and empties it. braze bench and braze check compile with cache=False (they
measure or bisect compiles).
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from braze import settings
from braze.errors import BrazeError
from braze.fileutil import cache_home

_SOURCE_HASH = None


def root() -> Path:
    return cache_home() / "compiled"


def enabled(requested: bool | None) -> bool:
    if requested is not None:
        return bool(requested)
    return settings.flag("BRAZE_COMPILE_CACHE") is not False


def source_hash() -> str:
    """A hash of braze's own Python sources (a changed pass must not hit an old entry)."""
    global _SOURCE_HASH
    if _SOURCE_HASH is None:
        import importlib.util

        import braze

        # braze.passes's folder without importing it (that imports MLIR: ~0.25 s of a cache hit)
        passes = importlib.util.find_spec("braze.passes").submodule_search_locations
        h = hashlib.sha256()
        for folder in sorted({Path(braze.__file__).parent, *map(Path, passes)}):
            for path in sorted(folder.rglob("*.py")):
                h.update(str(path.relative_to(folder)).encode())
                h.update(path.read_bytes())
        _SOURCE_HASH = h.hexdigest()
    return _SOURCE_HASH


def tensor_bytes(t) -> bytes:
    import torch

    t = t.detach()
    if t.layout is not torch.strided:
        t = t.to_dense()
    t = t.contiguous().cpu()
    return t.reshape(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b""  # 0-d too


def key(exported, options: dict, target: str, pipeline: str, tuning_path: str | None, versions: dict) -> str:
    """The cache key of a compile (see the module docstring); `versions`: braze.compiler.versions()."""
    h, put = _hasher()
    put("graph", exported.graph_module.code)
    put("signature", exported.graph_signature)
    put("call", exported.call_spec)
    for node in exported.graph.nodes:
        if node.op == "placeholder":
            val = node.meta.get("val")
            put("input", f"{node.name} {getattr(val, 'shape', val)} {getattr(val, 'dtype', '')}")
    for label, table in (("state", exported.state_dict), ("constant", exported.constants)):
        for name in sorted(table):
            value = table[name]
            if hasattr(value, "detach"):
                put(label, f"{name} {tuple(value.shape)} {value.dtype}")
                put(label + "-bytes", tensor_bytes(value))
            else:
                put(label, f"{name} {value!r}")
    _put_context(put, options, target, pipeline, tuning_path, versions)
    return h.hexdigest()


def _hasher():
    h = hashlib.sha256()

    def put(label: str, data) -> None:
        data = data if isinstance(data, bytes) else str(data).encode()
        h.update(label.encode() + b"\0" + len(data).to_bytes(8, "little") + data)

    return h, put


def _put_context(put, options: dict, target: str, pipeline: str, tuning_path: str | None, versions: dict) -> None:
    """What decides a compile besides the model: options, target, pipeline, tuning, versions."""
    put("options", json.dumps(options, sort_keys=True, default=repr))
    put("target", target)
    put("pipeline", pipeline)
    if tuning_path and os.path.isfile(tuning_path):
        with open(tuning_path, "rb") as f:
            put("tuning", f.read())
    put("versions", json.dumps(versions, sort_keys=True, default=repr))
    put("braze-sources", source_hash())
    try:
        from braze.kernels import triton_version

        put("triton", triton_version())
    except ImportError:
        put("triton", "")


def entry(k: str) -> Path:
    return root() / f"{k}.braze"


def load(k: str, model, runtime: str | None, load_artifact):
    """The cached module for key `k` bound to `model`'s buffers, or None (a damaged entry is
    removed); `load_artifact` is braze.load."""
    path = entry(k)
    if not path.is_file():
        return None
    try:
        module = load_artifact(path, runtime=runtime)
    except BrazeError:
        try:
            path.unlink()
        except OSError:
            pass
        return None
    try:
        os.utime(path)  # recently used: evicted last
    except OSError:
        pass
    if module.signature.state:
        module._state = model  # the program reads and updates the user's buffers, as compiled ones do
    return module


DEFAULT_MAX_MIB = 4096
"""The cache's size bound (BRAZE_COMPILE_CACHE_MAX_MIB overrides): past it, the entries used
longest ago go first."""


def max_bytes() -> int:
    return int((settings.positive_number("BRAZE_COMPILE_CACHE_MAX_MIB") or DEFAULT_MAX_MIB) * 2**20)


def store(k: str, module) -> Path | None:
    """Save `module` as key `k`'s entry (atomically; a failure to write only skips caching),
    then evict the least recently used entries beyond the size bound."""
    try:
        root().mkdir(parents=True, exist_ok=True)
        path = module.save(entry(k), overwrite=True)
    except (BrazeError, OSError):
        return None
    _evict(keep=path)
    return path


def _evict(keep: Path) -> None:
    entries = []
    for p in root().glob("*.braze"):
        try:
            st = p.stat()
        except FileNotFoundError:
            continue
        entries.append((max(st.st_atime, st.st_mtime), st.st_size, p))
    total = sum(size for _, size, _ in entries)
    for _, size, p in sorted(entries):
        if total <= max_bytes():
            break
        if p == keep:
            continue
        try:
            p.unlink()
            total -= size
        except FileNotFoundError:
            pass


def info() -> dict:
    folder = root()
    entries = sorted(folder.glob("*.braze")) if folder.is_dir() else []
    quick = sorted(folder.glob("*.quick")) if folder.is_dir() else []
    return {"path": str(folder), "entries": len(entries), "quick_keys": len(quick),
            "bytes": sum(p.stat().st_size for p in entries + quick)}


def clear() -> int:
    """Remove every entry and quick-key index; return how many entries."""
    folder = root()
    removed = 0
    if folder.is_dir():
        for pattern in ("*.braze", "*.quick"):
            for p in folder.glob(pattern):
                try:
                    p.unlink()
                    removed += pattern == "*.braze"
                except FileNotFoundError:
                    pass
    return removed
