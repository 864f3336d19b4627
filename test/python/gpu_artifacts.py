"""The cuda- and vulkan-marked tests, built where the compiler is and run where the GPU is.

    here  (compiler, no GPU):  pytest --gpu-build DIR -m "cuda or vulkan" test/python
    there (GPU, no compiler):  pytest --gpu-run DIR -m "cuda or vulkan" test/python

--gpu-build runs each GPU-marked test with braze.compile compiling for the GPU host
(--gpu-host; the H200's sm_90 and Vulkan ampere by default: braze's target detection answers as
that host would) and saving every module it returns under DIR, keyed by the test's node id and
the call's place in order, with a hash of the model's weights, of the example inputs and of the
options. A compile that raises is recorded and raises as before, so a test that expects the
error (pytest.raises) behaves the same in both modes. Weights of 4 KiB and more are zeroed in the
saved artifacts (random weights do not compress), and put back at run time from the test's own
model, which the hash shows is the build's. The test stops at its first use of the
GPU (torch's CUDA, or running a GPU module), reported as skipped: "built N artifacts"; using
the GPU before the first braze.compile fails the build.
--gpu-run replays: each braze.compile call loads the artifact recorded for it (or raises the
recorded error) once the test has built the same model from the same inputs and options, and
braze would pick the recorded target on this host; the test then runs unchanged on the GPU.
Only files with recorded tests are collected (the others import the compiler). Nothing here
imports braze's compiler modules: the GPU host has neither torch-mlir nor iree-base-compiler.

A compile after the test's first GPU use is never reached by the build; the run says so.
"""

from __future__ import annotations

import builtins
import hashlib
import json
import tempfile
import warnings
from pathlib import Path

import pytest

GPU_MARKERS = ("cuda", "vulkan")
HOST = {"cuda": "sm_90", "vulkan": "ampere", "vulkan-device": "NVIDIA H200"}
"""The GPU host --gpu-build compiles for: its CUDA capability, its Vulkan target and the name
its Vulkan driver gives the device (tests that pick a target by name read it)."""


class GpuNeeded(BaseException):
    """A GPU-marked test's first use of the GPU under --gpu-build (a BaseException, as pytest's
    own outcomes are, so no `except Exception` in a test swallows it)."""


def pytest_addoption(parser):
    group = parser.getgroup("braze GPU artifacts")
    group.addoption("--gpu-build", metavar="DIR", help="compile the cuda/vulkan tests' modules for the GPU "
                    "host into DIR (each test stops at its first use of the GPU)")
    group.addoption("--gpu-run", metavar="DIR", help="run the cuda/vulkan tests with the modules "
                    "--gpu-build recorded in DIR instead of compiling")
    group.addoption("--gpu-host", metavar="K=V,...", default=",".join(f"{k}={v}" for k, v in HOST.items()),
                    help="the GPU host --gpu-build compiles for (default: %(default)s)")


def pytest_configure(config):
    build, run = config.getoption("--gpu-build"), config.getoption("--gpu-run")
    if build and run:
        raise pytest.UsageError("--gpu-build and --gpu-run: give one (build here, run on the GPU host)")
    if build:
        config.pluginmanager.register(Build(config, Path(build)), "braze-gpu-build")
    elif run:
        config.pluginmanager.register(Run(config, Path(run)), "braze-gpu-run")


def mode(config) -> str | None:
    """'build', 'run' or None: which of --gpu-build and --gpu-run this session has."""
    return "build" if config.getoption("--gpu-build") else "run" if config.getoption("--gpu-run") else None


def _gpu_marked(item) -> bool:
    return any(item.get_closest_marker(m) for m in GPU_MARKERS)


def _slug(nodeid: str) -> str:
    return hashlib.sha256(nodeid.encode()).hexdigest()[:20]


def _digest(value, h=None) -> str:
    """A hash of a tree of tensors and plain values: tensors by dtype, shape and bytes."""
    import torch

    top = h is None
    h = h or hashlib.sha256()
    if isinstance(value, torch.Tensor):
        t = value.detach().cpu().contiguous()
        h.update(f"tensor {t.dtype} {list(t.shape)}:".encode())
        h.update(t.reshape(-1).view(torch.uint8).numpy().tobytes())
    elif isinstance(value, (list, tuple)):
        h.update(f"{type(value).__name__}({len(value)}):".encode())
        for v in value:
            _digest(v, h)
    elif isinstance(value, dict):
        h.update(f"dict({len(value)}):".encode())
        for k in sorted(value, key=repr):
            h.update(repr(k).encode())
            _digest(value[k], h)
    else:
        h.update(repr(value).encode())
    return h.hexdigest()[:16] if top else ""


def _modules(model) -> list:
    """The model, and the modules and tensors its forward reads from a closure (a test's
    wrapper around a module built outside it)."""
    import torch

    found = [model]
    for cell in getattr(getattr(type(model), "forward", None), "__closure__", None) or ():
        try:
            value = cell.cell_contents
        except ValueError:  # an empty cell
            continue
        if isinstance(value, (torch.nn.Module, torch.Tensor)):
            found.append(value)
    return found


def _tensors(model) -> dict:
    """Every parameter and buffer _modules finds, by a name for each."""
    import torch

    found = {}
    for i, m in enumerate(_modules(model)):
        if isinstance(m, torch.Tensor):
            found[f"{i}"] = m
        else:
            found.update((f"{i}:{name}", t) for name, t in list(m.named_parameters()) + list(m.named_buffers()))
    return found


def _model_digest(model) -> str:
    """The model's class, its modules' modes, its parameters and buffers."""
    import torch

    modes = [m.training for m in _modules(model) if isinstance(m, torch.nn.Module)]
    return _digest([type(model).__qualname__, modes, _tensors(model)])


def _raw(tensor) -> bytes:
    import torch

    return tensor.detach().cpu().contiguous().reshape(-1).view(torch.uint8).numpy().tobytes()


STRIP_BYTES = 4096
"""Weights from this size up leave the artifacts (_strip)."""


def _strip(path: Path, tensors: dict) -> list:
    """Zero each large weight wherever the artifact holds its bytes verbatim (IREE keeps
    constants as they are; the zip is stored, not compressed): random weights do not compress,
    and the run puts them back from the test's own model, once it has checked that model is the
    build's. [[name, offset], ...] in the order zeroed."""
    data = bytearray(path.read_bytes())
    stripped = []
    for name, tensor in tensors.items():
        raw = _raw(tensor)
        if len(raw) < STRIP_BYTES or not raw.strip(b"\0"):
            continue
        at = data.find(raw)
        while at >= 0:
            data[at:at + len(raw)] = bytes(len(raw))
            stripped.append([name, at])
            at = data.find(raw, at + len(raw))
    path.write_bytes(data)
    return stripped


def _restore(path: Path, stripped: list, tensors: dict, into: Path) -> Path:
    """The artifact _strip zeroed, whole again (in reverse order, so a weight whose match
    overlapped an earlier zeroed one comes back exactly; braze.load's checksums prove it)."""
    data = bytearray(path.read_bytes())
    for name, at in reversed(stripped):
        raw = _raw(tensors[name])
        data[at:at + len(raw)] = raw
    into.write_bytes(data)
    return into


def _call_key(model, example_inputs, device, target, options) -> dict:
    """What the build and the run must agree on for one braze.compile call."""
    from braze.compiler.dynamic import describe_dynamic_shapes

    opts = {k: (describe_dynamic_shapes(v) if k == "dynamic_shapes" else repr(v))
            for k, v in sorted(options.items()) if k != "example_kwargs"}
    return {"model": f"{type(model).__name__} {_model_digest(model)}",
            "inputs": _digest([list(example_inputs), options.get("example_kwargs") or {}]),
            "device": device, "target": target, "options": opts}


def _error_class(name: str):
    """A recorded exception class: braze's errors and Python's built-in ones replay."""
    import braze.errors

    module, _, qualname = name.rpartition(".")
    cls = getattr(braze.errors if module == "braze.errors" else builtins if module == "builtins" else None,
                  qualname, None)
    return cls if isinstance(cls, type) and issubclass(cls, Exception) else None


def _records(root: Path) -> dict:
    """node id -> the build's record of that test."""
    records = {}
    for path in root.glob("*.json") if root.is_dir() else ():
        record = json.loads(path.read_text())
        records[record["nodeid"]] = record
    return records


def _class_name(cls) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


class Build:
    """--gpu-build: braze.compile for the GPU host, every result saved, the test stopped at the GPU."""

    def __init__(self, config, root: Path):
        self.root = root
        self.host = dict(HOST)
        for pair in filter(None, config.getoption("--gpu-host").split(",")):
            key, sep, value = pair.partition("=")
            if not sep or key.strip() not in HOST:
                raise pytest.UsageError(f"--gpu-host {pair!r}: give KEY=VALUE with KEY one of {', '.join(HOST)}")
            self.host[key.strip()] = value.strip()

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_protocol(self, item, nextitem):
        if not _gpu_marked(item):
            return (yield)
        import braze
        import braze.runtime.program
        import braze.targets
        import torch

        slug = _slug(item.nodeid)
        self.root.mkdir(parents=True, exist_ok=True)
        for old in self.root.glob(f"{slug}*"):
            old.unlink()
        item._gpu_record = record = {"nodeid": item.nodeid, "host": self.host, "calls": [], "stopped": None}
        real = braze.compile

        def compile(model, *example_inputs, device="cpu", target=None, **options):
            call = _call_key(model, example_inputs, device, target, options)
            record["calls"].append(call)
            i = len(record["calls"]) - 1
            try:
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    module = real(model, *example_inputs, device=device, target=target, **options)
            except Exception as e:
                call["error"] = {"class": _class_name(type(e)), "message": str(e)}
                raise
            finally:  # recorded for the run to replay, and warned here as braze.compile did
                call["warnings"] = [[_class_name(w.category), str(w.message)] for w in caught]
                for w in caught:
                    warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
            builds = {"static": module.static, "dynamic": module.dynamic} if isinstance(module, braze.DynamicModule) \
                else {"module": module}
            if not all(b is None or isinstance(b, braze.CompiledModule) for b in builds.values()):
                pytest.fail(f"--gpu-build: braze.compile returned a {type(module).__name__}, which has no "
                            "artifact to record (partial=True?)", pytrace=False)
            call["artifacts"], call["stripped"] = {}, {}
            for kind, build in builds.items():
                if build is not None:
                    call["artifacts"][kind] = name = f"{slug}-{i}-{kind}.braze"
                    call["stripped"][kind] = _strip(build.save(self.root / name), _tensors(model))
                    call["built"] = [build.target.device, build.target.arch]
            call["policy"] = getattr(module, "policy", None)
            return module

        def cuda(*args, **kwargs):
            raise GpuNeeded("torch's CUDA")

        def runnable(target):
            if target.device != "cpu":
                raise GpuNeeded(f"running a module compiled for {target.describe()}")

        mp = pytest.MonkeyPatch()
        mp.setattr(braze, "compile", compile)
        mp.setattr(braze.targets, "detect_cuda_arch", lambda: self.host["cuda"])
        mp.setattr(braze.targets, "detect_vulkan_target", lambda: self.host["vulkan"])
        mp.setattr(braze.targets, "vulkan_device_names", lambda: [self.host["vulkan-device"]])
        devices = lambda: ["cpu", "cuda", "vulkan"]
        mp.setattr(braze.targets, "available_devices", devices)
        mp.setattr(braze, "available_devices", devices)
        mp.setattr(braze.runtime.program, "check_runnable", runnable)
        mp.setattr(torch.cuda, "_lazy_init", cuda)
        try:
            return (yield)
        finally:
            mp.undo()
            (self.root / f"{slug}.json").write_text(json.dumps(record, indent=1))

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item):
        try:
            return (yield)
        except GpuNeeded as e:
            record = getattr(item, "_gpu_record", None)
            if record is None:
                raise
            record["stopped"] = str(e)
            built = sum(len(c.get("artifacts", {})) for c in record["calls"])
            if not record["calls"]:
                pytest.fail(f"--gpu-build: the test uses the GPU ({e}) before its first braze.compile; move "
                            "that after the compile, which the build records up to the first use of the GPU",
                            pytrace=False)
            pytest.skip(f"--gpu-build: built {built} artifact(s) in {len(record['calls'])} compile(s) for the GPU "
                        f"host; stopped at the first use of the GPU ({e})")

    def pytest_terminal_summary(self, terminalreporter):
        calls = [c for r in _records(self.root).values() for c in r["calls"]]
        size = sum(p.stat().st_size for p in self.root.glob("*.braze"))
        terminalreporter.write_line(
            f"--gpu-build: {len(_records(self.root))} GPU tests recorded in {self.root}: "
            f"{sum(len(c.get('artifacts', {})) for c in calls)} artifacts ({size / 2**20:.1f} MiB), "
            f"{sum('error' in c for c in calls)} compile errors to replay")


class Run:
    """--gpu-run: braze.compile loads what --gpu-build recorded for the test and call."""

    def __init__(self, config, root: Path):
        self.root = root
        if not root.is_dir():
            raise pytest.UsageError(f"--gpu-run {root}: no such folder; build it with --gpu-build {root}")
        self.records = _records(root)
        self.files = {nodeid.split("::")[0] for nodeid in self.records}
        self.rootpath = config.rootpath
        self.missing = []

    def pytest_collection_finish(self, session):
        self.missing = sorted(set(self.records) - {item.nodeid for item in session.items})

    def pytest_terminal_summary(self, terminalreporter):
        ran = len(self.records) - len(self.missing)
        terminalreporter.write_line(f"--gpu-run: {ran} of the {len(self.records)} tests recorded in {self.root} "
                                    "selected here" + "".join(f"\n  not selected: {n}" for n in self.missing))

    def pytest_ignore_collect(self, collection_path, config):
        if collection_path.suffix == ".py" and collection_path.name.startswith("test_"):
            rel = collection_path.relative_to(self.rootpath).as_posix() \
                if collection_path.is_relative_to(self.rootpath) else str(collection_path)
            if rel not in self.files:
                return True  # no GPU test recorded there: it may import the compiler
        return None

    @pytest.hookimpl(trylast=True)
    def pytest_runtest_setup(self, item):
        if _gpu_marked(item) and item.nodeid not in self.records:
            pytest.fail(f"--gpu-run: {self.root} has no record of {item.nodeid}; build it with "
                        f"pytest --gpu-build {self.root} on the compile machine", pytrace=False)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_protocol(self, item, nextitem):
        record = self.records.get(item.nodeid)
        if record is None or not _gpu_marked(item):
            return (yield)
        import braze

        item._gpu_replayed = replayed = [0]

        def compile(model, *example_inputs, device="cpu", target=None, **options):
            key = _call_key(model, example_inputs, device, target, options)
            i = replayed[0]
            replayed[0] += 1
            if i >= len(record["calls"]):
                stopped = f" (the build stopped at the first use of the GPU: {record['stopped']})" \
                    if record["stopped"] else ""
                pytest.fail(f"--gpu-run: braze.compile call {i + 1} of {item.nodeid} was not recorded: the build "
                            f"recorded {len(record['calls'])}{stopped}", pytrace=False)
            call = record["calls"][i]
            self._check(item, i, call, key)
            for category, message in call.get("warnings", []):
                cls = _error_class(category)
                warnings.warn(message, cls if cls is not None and issubclass(cls, Warning) else UserWarning)
            if "error" in call:
                cls = _error_class(call["error"]["class"])
                if cls is None:
                    pytest.fail(f"--gpu-run: the build's compile raised {call['error']['class']}, which does not "
                                f"replay: {call['error']['message']}", pytrace=False)
                raise cls(call["error"]["message"])
            loaded, tensors = {}, _tensors(model)
            for kind, name in call["artifacts"].items():
                with tempfile.TemporaryDirectory() as tmp:
                    whole = _restore(self.root / name, call["stripped"][kind], tensors, Path(tmp) / name)
                    loaded[kind] = m = braze.load(whole, device=device, runtime=options.get("runtime"))
                if m.signature.state:
                    m._state = model  # as braze.compile: the model's own buffers, read and updated
                m._source = f"the compiled {type(model).__name__} (--gpu-run: {self.root / name})"
            if "module" in loaded:
                return loaded["module"]
            return braze.DynamicModule(loaded["dynamic"], loaded.get("static"), call["policy"])

        mp = pytest.MonkeyPatch()
        mp.setattr(braze, "compile", compile)
        try:
            return (yield)
        finally:
            mp.undo()

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item):
        result = yield
        replayed, recorded = getattr(item, "_gpu_replayed", [None])[0], self.records.get(item.nodeid)
        if replayed is not None and replayed < len(recorded["calls"]):
            pytest.fail(f"--gpu-run: {item.nodeid} called braze.compile {replayed} time(s), the build "
                        f"{len(recorded['calls'])}: the test took another path on this host", pytrace=False)
        return result

    def _check(self, item, i, call, key):
        """Fail unless call i builds what the build compiled, for the target braze picks here."""
        from braze.targets import resolve

        where = f"--gpu-run: {item.nodeid}, braze.compile call {i + 1}"
        for what in ("model", "inputs", "device", "options"):
            if key[what] != call[what]:
                pytest.fail(f"{where}: not the {what} the build compiled ({key[what]!r} here, {call[what]!r} "
                            f"there): the test built something else on this host; rebuild with --gpu-build "
                            "from this commit, or make the test deterministic", pytrace=False)
        if "error" in call:
            if key["target"] != call["target"]:
                pytest.fail(f"{where}: target={key['target']!r} here, {call['target']!r} in the build", pytrace=False)
            return
        here = resolve(key["device"], key["target"])
        if [here.device, here.arch] != call["built"]:
            pytest.fail(f"{where}: built for {call['built'][0]} {call['built'][1]}, but braze.compile("
                        f"device={key['device']!r}, target={key['target']!r}) compiles for {here.describe()} on "
                        f"this host; rebuild with --gpu-build DIR --gpu-host cuda=...,vulkan=... for it",
                        pytrace=False)
