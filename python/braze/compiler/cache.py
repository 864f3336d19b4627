"""The persistent compile cache: a compile already made, in any process, is loaded, not redone.

    $BRAZE_CACHE_DIR/compiled/<key>.braze     (default ~/.cache/braze/compiled)

The key is a SHA-256 over everything that decides what braze.compile produces:
- the exported program (torch.export's graph code, its signature and call structure, the
  example inputs' shapes and dtypes, and the bytes of every parameter, buffer and constant),
- the resolved target, every compile option, the pipeline text (which names the generated-kernel
  and float32 choices), the tuning cache's bytes,
- the versions of braze's own sources (a hash of its files), torch, torch-mlir, IREE and Triton.
A hit skips import, fusion, IREE and Triton. Export is what this key is made of; a quick key
(below: the model's classes, attributes and weights, the inputs' specs, validated by
one eager call on a remembered probe) finds the entry without it, which in a new process saves
torch.export's ~2 s first call.
Entries are artifacts (`CompiledModule.save`), written atomically: concurrent compiles of one
model both write whole files and the later replaces the earlier. An entry that does not load is
removed and rebuilt, never used. Past 4 GiB (BRAZE_COMPILE_CACHE_MAX_MIB) the entries used longest
ago are removed. `compile(cache=False)` or BRAZE_COMPILE_CACHE=0 turns it off; `braze cache
info|clear` shows and empties it. braze bench and braze check compile with cache=False (they
measure or bisect compiles).

The quick key: a hit found without torch.export. The export key (`key`) is made of the exported program, and in a new process
torch.export's first call costs ~1.5-2 s (it imports and warms up Dynamo's tracing machinery):
14-64% of a cold compile of the bench's models (bench/NOTES.md §19). The quick key finds the
entry from what the user hands braze.compile, before any export:

- every submodule's class (its module and qualified name, and the bytes of the file that defines
  it where that is not torch's own code), training flag and attributes (numbers, strings, dtypes,
  tuples, functions by their code, tensors by their bytes; an attribute braze cannot describe
  faithfully, such as an object whose repr carries its address, means no quick key), its
  parameters' and buffers' names, shapes, dtypes and bytes;
- the example inputs' structure, shapes, dtypes and devices, and their non-tensor values;
- the compile's options, target, pipeline, tuning cache and versions (as the export key).

A quick key maps to an export key through an index entry (`<quick>.quick`, written when an export
key's entry is stored or hit), which also holds what the quick key cannot see:

- the user files whose functions forward() runs (noted by a profile hook during one eager call:
  helpers in other files than the model's classes), each with its hash: a changed file is a miss;
- a probe: the example inputs and eager's outputs on them at compile time. On a quick hit eager
  runs once on the probe's inputs and must give the same outputs (within the dtype's rounding);
  a changed global constant, configuration module or environment that changes what forward()
  computes is a miss. One eager call is the cost of a quick hit's safety.

No quick key is made (the export key alone is used) for a module with forward hooks, a model
whose forward() updates its buffers or inputs (the probe would change them), one whose eager
outputs differ between two calls on the same inputs (random ops), or a compile run under a
Python profiler (whose hook the file noting would replace). A miss of any kind falls back
to the export key; BRAZE_COMPILE_CACHE_QUICK=0 turns quick keys off.

`cached_compile` is the cache wrapped around a compile: quick key, export key, store.
"""

from __future__ import annotations

import enum
import hashlib
import inspect
import json
import os
import sys
import sysconfig
import time
import types
from dataclasses import dataclass
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


# -- the quick key ------------------------------------------------------------------------------

QUICK_VERSION = 1
_FILE_HASHES: dict = {}
_INTERNALS = None
_STDLIB = str(Path(sysconfig.get_paths()["stdlib"]).resolve()) + os.sep


def quick_enabled() -> bool:
    return settings.flag("BRAZE_COMPILE_CACHE_QUICK") is not False


def index_path(quick: str) -> Path:
    return root() / f"{quick}.quick"


def _library_roots() -> tuple[str, ...]:
    import torch

    import braze

    return tuple(str(Path(m.__file__).resolve().parent) + os.sep for m in (torch, braze))


def file_hash(path: str) -> str | None:
    """SHA-256 of a file's bytes (remembered per size and mtime in this process); None when it
    cannot be read."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    known = _FILE_HASHES.get(path)
    if known and known[0] == (st.st_size, st.st_mtime_ns):
        return known[1]
    try:
        digest = hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError:
        return None
    _FILE_HASHES[path] = ((st.st_size, st.st_mtime_ns), digest)
    return digest


def _class_source(cls) -> str:
    try:
        path = inspect.getsourcefile(cls)
    except (TypeError, OSError):
        return "builtin"
    if not path:
        return "unknown"
    path = str(Path(path).resolve())
    if path.startswith(_library_roots()):
        return "library"  # torch's and braze's own classes: their versions are in the key
    return f"{path} {file_hash(path)}"


def _code(code: types.CodeType) -> str:
    parts = [code.co_qualname if hasattr(code, "co_qualname") else code.co_name, code.co_code.hex(),
             repr(code.co_names)]
    for c in code.co_consts:
        parts.append(_code(c) if isinstance(c, types.CodeType) else repr(c))
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()


_SIMPLE = (type(None), bool, int, float, complex, str, bytes, range, slice)


def describe(value, depth: int = 0) -> str | None:
    """A faithful text for an attribute's value, or None where braze cannot give one."""
    import torch

    if depth > 6:
        return None
    if isinstance(value, _SIMPLE) or isinstance(value, (torch.dtype, torch.device, torch.Size, enum.Enum)):
        return f"{type(value).__name__}:{value!r}"
    if isinstance(value, torch.Tensor):
        return f"tensor:{tuple(value.shape)}:{value.dtype}:{hashlib.sha256(tensor_bytes(value)).hexdigest()}"
    if isinstance(value, (tuple, list, frozenset, set)):
        items = [describe(v, depth + 1) for v in value]
        if any(i is None for i in items):
            return None
        return f"{type(value).__name__}[{','.join(sorted(items) if isinstance(value, (set, frozenset)) else items)}]"
    if isinstance(value, dict):
        items = []
        for k in sorted(value, key=repr):
            d = describe(value[k], depth + 1)
            if d is None:
                return None
            items.append(f"{k!r}:{d}")
        return "dict{" + ",".join(items) + "}"
    if isinstance(value, (types.FunctionType, types.MethodType)):
        fn = value.__func__ if isinstance(value, types.MethodType) else value
        cells = [describe(c.cell_contents, depth + 1) for c in (fn.__closure__ or ())]
        if any(c is None for c in cells):
            return None
        return f"function:{fn.__module__}.{fn.__qualname__}:{_code(fn.__code__)}:{cells}"
    if isinstance(value, (types.BuiltinFunctionType, types.ModuleType, type)):
        return f"{type(value).__name__}:{getattr(value, '__module__', '')}.{getattr(value, '__qualname__', value)}"
    text = repr(value)
    if " at 0x" in text or " object at " in text:
        return None  # its repr does not show its state
    return f"{type(value).__module__}.{type(value).__qualname__}:{text}"


def _module_internals() -> frozenset:
    global _INTERNALS
    if _INTERNALS is None:
        import torch

        _INTERNALS = frozenset(vars(torch.nn.Module()))
    return _INTERNALS


def _has_hooks(m) -> bool:
    return any(getattr(m, name, None) for name in (
        "_forward_hooks", "_forward_pre_hooks", "_state_dict_hooks", "_load_state_dict_pre_hooks"))


def quick_key(model, args: tuple, kwargs: dict, options: dict, target: str, pipeline: str,
              tuning_path: str | None, versions: dict) -> str | None:
    """The quick key (module docstring), or None where the model cannot have one."""
    import torch
    from torch.nn.modules import module as nn_module
    from torch.utils._pytree import tree_flatten

    if not quick_enabled() or not isinstance(model, torch.nn.Module):
        return None
    if nn_module._global_forward_hooks or nn_module._global_forward_pre_hooks:
        return None
    h, put = _hasher()
    put("quick", QUICK_VERSION)
    internals = _module_internals()
    for name, m in model.named_modules(remove_duplicate=False):
        if _has_hooks(m):
            return None
        cls = type(m)
        put("module", f"{name} {cls.__module__}.{cls.__qualname__} training={m.training}")
        put("class-source", _class_source(cls))
        for attr in sorted(vars(m)):
            if attr in internals:
                continue
            text = describe(vars(m)[attr])
            if text is None:
                return None
            put("attribute", f"{attr}={text}")
        for kind, table in (("parameter", m._parameters), ("buffer", m._buffers)):
            for pname in sorted(table):
                t = table[pname]
                if t is None:
                    put(kind, f"{pname} None")
                    continue
                put(kind, f"{pname} {tuple(t.shape)} {t.dtype} {t.device} "
                          f"{pname in getattr(m, '_non_persistent_buffers_set', ())}")
                put(kind + "-bytes", tensor_bytes(t))
    leaves, spec = tree_flatten((tuple(args), dict(kwargs or {})))
    put("inputs", spec)
    for leaf in leaves:
        if isinstance(leaf, torch.Tensor):
            put("input", f"{tuple(leaf.shape)} {leaf.dtype} {leaf.device} {leaf.layout} "
                         f"{leaf.is_contiguous()} {leaf.requires_grad}")
        else:
            text = describe(leaf)
            if text is None:
                return None
            put("input", text)
    _put_context(put, options, target, pipeline, tuning_path, versions)
    return h.hexdigest()


def _executed_files(call) -> tuple[object, dict[str, str]]:
    """Run `call` with a profile hook that notes the file of every Python function it enters;
    (its result, the user files among them with their hashes: torch's and braze's left out)."""
    seen: set[str] = set()

    def note(frame, event, arg):
        if event == "call":
            seen.add(frame.f_code.co_filename)

    if sys.getprofile() is not None:
        raise RuntimeError("a profiler is running")  # its hook is not braze's to replace
    sys.setprofile(note)
    try:
        result = call()
    finally:
        sys.setprofile(None)
    roots = _library_roots()
    files: dict[str, str] = {}
    for path in seen:
        if not os.path.isfile(path):
            continue  # <string>, <frozen ...>: no file to change
        full = str(Path(path).resolve())
        if full.startswith(roots) or full.startswith(_STDLIB):
            continue
        digest = file_hash(full)
        if digest is not None:
            files[full] = digest
    return result, files


def _flat_tensors(outputs, copy: bool = True) -> list | None:
    """The outputs' tensors, flattened; copies (to keep, as the probe's) unless copy=False
    (to compare once: a lookup's fresh outputs are nobody else's)."""
    import torch
    from torch.utils._pytree import tree_flatten

    leaves, _ = tree_flatten(outputs)
    if not all(isinstance(t, torch.Tensor) for t in leaves):
        return None
    return [t.detach().clone() if copy else t.detach() for t in leaves]


def _same(a: list, b: list) -> bool:
    import torch

    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if x.shape != y.shape or x.dtype != y.dtype:
            return False
        if torch.equal(x.cpu(), y.cpu()):  # eager against eager on one machine: mostly bit for bit
            continue
        if x.dtype.is_floating_point or x.dtype.is_complex:
            # eager against eager: the same program; a different thread count may reorder sums
            tol = {torch.float16: 2e-3, torch.bfloat16: 1.6e-2}.get(x.dtype, 1e-5)
            if not torch.allclose(x.cpu(), y.cpu(), rtol=tol, atol=tol, equal_nan=True):
                return False
        elif not torch.equal(x.cpu(), y.cpu()):
            return False
    return True


def remember(quick: str, export_key: str, model, args: tuple, kwargs: dict, module) -> bool:
    """Write the quick key's index entry (export key, traced files, probe); False where the model
    cannot have one (it updates state or inputs, or its eager outputs are not repeatable)."""
    import torch

    if module.signature.mutations:
        return False
    try:
        with torch.no_grad():
            first, files = _executed_files(lambda: model(*args, **(kwargs or {})))
            first = _flat_tensors(first)
            second = _flat_tensors(model(*args, **(kwargs or {})))
    except Exception:  # noqa: BLE001 - the probe is an optimization; the compile stands
        return False
    if first is None or second is None or not _same(first, second):
        return False
    index = {"version": QUICK_VERSION, "key": export_key, "files": files,
             "args": _detached(args), "kwargs": _detached(kwargs or {}), "outputs": first}
    import io

    from braze.fileutil import write_atomically

    data = io.BytesIO()
    torch.save(index, data)
    try:
        root().mkdir(parents=True, exist_ok=True)
        write_atomically(index_path(quick), data.getvalue(), overwrite=True)
    except Exception:  # noqa: BLE001 - not writing the index only skips quick hits
        return False
    return True


def _detached(tree):
    import torch
    from torch.utils._pytree import tree_map

    return tree_map(lambda t: t.detach().clone() if isinstance(t, torch.Tensor) else t, tree)


def lookup(quick: str, model) -> tuple[str | None, str]:
    """(export key, '') when the quick key's index holds and the model's eager outputs on the
    probe are the remembered ones; else (None, why not). A damaged index is removed."""
    import torch

    path = index_path(quick)
    if not path.is_file():
        return None, "no index entry"
    try:
        # Mapped, not read: the probe's inputs are read once by the eager call, its outputs once
        # by the comparison (a 16M-element chain's 134 MB index: 0.08 s read, NOTES §32).
        index = torch.load(path, weights_only=True, mmap=True)
        if not isinstance(index, dict) or index.get("version") != QUICK_VERSION:
            raise ValueError("not a quick index of this version")
        key, files = index["key"], index["files"]
    except Exception:  # noqa: BLE001 - a damaged entry is rebuilt, never used
        try:
            path.unlink()
        except OSError:
            pass
        return None, "damaged index entry (removed)"
    for f, digest in files.items():
        if file_hash(f) != digest:
            return None, f"{f} changed"
    try:
        with torch.no_grad():
            outputs = _flat_tensors(model(*index["args"], **index["kwargs"]), copy=False)
    except Exception as e:  # noqa: BLE001
        return None, f"the probe call raised {type(e).__name__}"
    if outputs is None or not _same(outputs, index["outputs"]):
        return None, "eager's outputs on the probe changed"
    return key, ""


# -- the cache around a compile ---------------------------------------------------------------


@dataclass(frozen=True)
class Identity:
    """What decides a compile besides the model and its inputs (the key's context)."""

    options: dict
    """CompileOptions.cache_choices(), with the dynamic shapes where there are any."""
    target: str
    pipeline: str
    """The pipeline's own text: the device's options, TF32 as torch's flags say, Triton or not."""
    tuning: str | None
    versions: dict


def cached_compile(model, args: tuple, kwargs: dict, identity: Identity, *, export, compile_exported,
                   load_artifact, runtime: str | None):
    """A compile behind the persistent cache. A quick key (the model's identity, no export) finds
    a warm entry without exporting; else `export()`'s program is the key; a miss runs
    `compile_exported(exported)` and stores its module. `load_artifact` is braze.load."""
    kwargs = kwargs or {}
    quick_miss = "no quick key for this model"  # why a quick key found nothing, for the report
    t0 = time.perf_counter()
    context = (identity.options, identity.target, identity.pipeline, identity.tuning, identity.versions)
    quick = quick_key(model, args, kwargs, *context)
    if quick is not None:
        found, quick_miss = lookup(quick, model)
        hit = load(found, model, runtime, load_artifact) if found else None
        if hit is not None:
            return _hit(hit, found, {"quick key and probe": time.perf_counter() - t0}, model, quick=True)
        quick_miss = quick_miss or "the quick key's entry did not load"
    t0 = time.perf_counter()
    exported = export()
    export_seconds = time.perf_counter() - t0
    cache_key = key(exported, *context)
    t1 = time.perf_counter()
    hit = load(cache_key, model, runtime, load_artifact)
    if hit is not None:
        if quick is not None:
            remember(quick, cache_key, model, args, kwargs, hit)
        hit = _hit(hit, cache_key, {"export": export_seconds, "cache": time.perf_counter() - t1}, model)
        hit.report.extra["cache"]["quick_miss"] = quick_miss
        return hit
    module = compile_exported(exported)
    module.report.stage_seconds["export"] = export_seconds
    stored = store(cache_key, module)
    module.report.extra["cache"] = {"hit": False, "entry": str(stored) if stored else None, "quick_miss": quick_miss}
    if stored and quick is not None:
        module.report.extra["cache"]["quick_key"] = remember(quick, cache_key, model, args, kwargs, module)
    return module


def _hit(hit, k: str, seconds: dict, model, quick: bool = False):
    """A module from the compile cache, its report saying so (and what the cold compile took)."""
    hit.report.extra["cache"] = {"hit": True, "quick": quick, "entry": str(entry(k)),
                                 "cold_stage_seconds": dict(hit.report.stage_seconds)}
    hit.report.stage_seconds = seconds
    hit._source = f"the compiled {type(model).__name__} (from the compile cache)"
    return hit
