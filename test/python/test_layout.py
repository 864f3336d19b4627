"""The layout holds: no import cycles between braze's modules (function-level imports count),
one definition of each attribute name braze puts on IR, and every pass has its lit file and a
before/after example in its docstring."""

import ast
import re
import sys
from pathlib import Path

import pytest

from braze.passes import PASSES, PIPELINES

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = {"braze": ROOT / "python" / "braze", "braze.dialects": ROOT / "dialects",
            "braze.passes": ROOT / "passes", "braze.tools": ROOT / "tools"}
"""The one import root and the folders pyproject.toml maps into it."""


def _modules() -> dict[str, Path]:
    found = {}
    for package, folder in PACKAGES.items():
        for path in folder.rglob("*.py"):
            rel = path.relative_to(folder).with_suffix("")
            parts = [p for p in rel.parts if p != "__init__"]
            name = ".".join([package, *parts])
            if name.startswith("braze.") and name.count(".") >= 1 and name.split(".")[1] in ("dialects", "passes", "tools") \
                    and package == "braze":
                continue  # python/braze has no such subfolders; skip stray matches
            found[name] = path
    return found


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """braze modules `name` imports anywhere in its file (top level or inside functions)."""
    is_package = path.name == "__init__.py"
    base = name.split(".") if is_package else name.split(".")[:-1]
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        targets = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                anchor = base[: len(base) - (node.level - 1)]
                module = ".".join(anchor + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            targets = [f"{module}.{a.name}" for a in node.names] + [module]
        for t in targets:
            while t and t not in modules:
                t = t.rpartition(".")[0]
            if t and t != name:
                out.add(t)
    return out


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on, result, counter = {}, {}, [], set(), [], [0]
    sys.setrecursionlimit(max(10000, sys.getrecursionlimit()))

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                result.append(sorted(component))

    for v in graph:
        if v not in index:
            visit(v)
    return result


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    # A package's __init__ importing its own submodules (registration) is not a dependency of
    # those submodules on the package: edges into a package from inside it are dropped.
    graph = {}
    for name, path in modules.items():
        graph[name] = {t for t in _imports(name, path, modules)
                       if not (modules[t].name == "__init__.py" and name.startswith(t + "."))}
    return graph


def test_no_import_cycles():
    assert _cycles(_graph()) == []


ROOMS = [
    ("floor", ("braze.errors", "braze.settings", "braze.fileutil", "braze.nativeio", "braze.signature", "braze.targets",
               "braze.report", "braze.progress", "braze.accuracy", "braze._mlir", "braze.irutil")),
    ("kernels", ("braze.kernels",)), ("dialects", ("braze.dialects",)), ("runtime", ("braze.runtime",)),
    ("testing", ("braze.testing",)),
    ("passes", ("braze.passes",)),
    ("compiler", ("braze.compiler",)),
    ("front", ("braze.check", "braze.dynamo")), ("tools", ("braze.tools",)), ("main", ("braze.__main__",)),
]
"""The house, bottom up: a room imports only rooms listed before it (the floor: formats and
helpers both sides share). The runtime (braze.load) and the compiler's rooms meet only where the
compiler returns a CompiledModule. `braze` itself, the package everything passes through, is
no room: it loads the runtime and, on first use, braze.compile."""

LAYER = {"floor": 0, "kernels": 1, "dialects": 1, "runtime": 1, "testing": 1, "passes": 2, "compiler": 3,
         "front": 4, "tools": 5, "main": 6}


def _room(module: str) -> str | None:
    for room, prefixes in ROOMS:
        if any(module == p or module.startswith(p + ".") for p in prefixes):
            return room
    return None


def _upward_imports(graph: dict[str, set[str]]) -> list[str]:
    wrong = []
    for module, targets in graph.items():
        for target in targets:
            a, b = _room(module), _room(target)
            if None not in (a, b) and a != b and LAYER[b] >= LAYER[a]:
                wrong.append(f"{module} ({a}) imports {target} ({b})")
    return sorted(wrong)


def test_every_module_has_a_room():
    assert [m for m in _modules() if m != "braze" and _room(m) is None] == []


def test_rooms_import_only_rooms_below_them():
    assert _upward_imports(_graph()) == []


def test_an_upward_import_is_found():
    assert _upward_imports({"braze.runtime.module": {"braze.compiler.stages", "braze.errors"},
                            "braze.passes.gpu.split_k": {"braze.kernels.spec"}}) == [
        "braze.runtime.module (runtime) imports braze.compiler.stages (compiler)"]


def _reads_braze_variables(source: str) -> list[str]:
    """BRAZE_ names a module reads from the environment itself: os.environ[X], os.environ.get(X)
    or os.getenv(X), X a "BRAZE_..." literal or a module constant holding one."""
    tree = ast.parse(source)
    constants = {t.id: node.value.value for node in tree.body if isinstance(node, ast.Assign)
                 and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)
                 for t in node.targets if isinstance(t, ast.Name)}

    def braze_name(arg):
        value = arg.value if isinstance(arg, ast.Constant) else constants.get(getattr(arg, "id", None))
        return value if isinstance(value, str) and value.startswith("BRAZE_") else None

    def is_environ(n):
        return isinstance(n, ast.Attribute) and n.attr == "environ" and getattr(n.value, "id", None) == "os"

    found = set()
    for node in ast.walk(tree):
        key = None
        if isinstance(node, ast.Subscript) and is_environ(node.value):
            key = node.slice
        elif isinstance(node, ast.Call) and node.args and isinstance(node.func, ast.Attribute) and (
                (node.func.attr == "get" and is_environ(node.func.value))
                or (node.func.attr == "getenv" and getattr(node.func.value, "id", None) == "os")):
            key = node.args[0]
        if key is not None and braze_name(key):
            found.add(braze_name(key))
    return sorted(found)


def test_only_settings_reads_braze_variables():
    """Every BRAZE_ variable is read through braze.settings (its table is what `braze env` and
    the README list); a module reading one itself would bypass its check and its entry."""
    from braze import settings

    readers = {name: _reads_braze_variables(path.read_text()) for name, path in _modules().items()}
    assert {n: r for n, r in readers.items() if r and n != "braze.settings"} == {}
    assert _reads_braze_variables('x = os.environ.get("BRAZE_CPU_WAIT", "batch")') == ["BRAZE_CPU_WAIT"]
    assert _reads_braze_variables('W = "BRAZE_CPU_WAIT"\ndef f():\n    return os.environ[W]') == ["BRAZE_CPU_WAIT"]
    assert _reads_braze_variables('import os\nos.getenv("BRAZE_X")\nos.environ.get("CI")') == ["BRAZE_X"]
    named = set()
    for path in _modules().values():
        named |= set(re.findall(r"\bBRAZE_[A-Z_0-9]*[A-Z0-9]\b", path.read_text()))
    assert named - {"BRAZE_TEST_SABOTAGE"} <= set(settings.VARIABLES), named - set(settings.VARIABLES)


def test_cycle_finder_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def _defines_a_pass(path: Path) -> bool:
    """Whether the module defines a ModulePass subclass (registered or not)."""
    return any(isinstance(node, ast.ClassDef) and any(
        (b.id if isinstance(b, ast.Name) else b.attr if isinstance(b, ast.Attribute) else None) == "ModulePass"
        for b in node.bases) for node in ast.parse(path.read_text()).body)


def test_gpu_passes_import_only_leaves():
    graph = _graph()
    gpu_passes = {name for name, path in _modules().items()
                  if name.startswith("braze.passes.gpu.") and _defines_a_pass(path)}
    registered = {cls.__module__ for cls in PASSES.values() if cls.__module__.startswith("braze.passes.gpu.")}
    assert gpu_passes == registered, f"GPU pass modules found {sorted(gpu_passes)}, registered {sorted(registered)}"
    for name in gpu_passes:
        assert not (graph[name] & gpu_passes), f"{name} imports another GPU pass: {graph[name] & gpu_passes}"
    for leaf in ("configs", "cost_model"):  # formats and choices: no MLIR
        assert not any(t.startswith("braze._mlir") for t in graph[f"braze.passes.gpu.{leaf}"])


def _names_an_attribute(constant: str) -> bool:
    return constant == "ATTR" or constant.endswith("_ATTR")


def _attribute_definitions() -> dict[str, list[str]]:
    """{attribute name: modules defining it} from module-level `ATTR = "..."` and
    `NAME_ATTR = "..."` constants."""
    found: dict[str, list[str]] = {}
    for name, path in _modules().items():
        for node in ast.parse(path.read_text()).body:
            if (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                    and _names_an_attribute(node.targets[0].id) and isinstance(node.value, ast.Constant)
                    and isinstance(node.value.value, str)):
                found.setdefault(node.value.value, []).append(name)
    return found


def _string_literals(path: Path) -> list[str]:
    return [n.value for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, ast.Constant)
            and isinstance(n.value, str)]


def test_each_attribute_name_is_defined_once():
    defined = _attribute_definitions()
    assert {"braze.kernel", "braze.kernel_config", "braze.matmul_config", "braze.im2col", "fusion.unfused"} <= set(defined)
    assert all(len(v) == 1 for v in defined.values()), {k: v for k, v in defined.items() if len(v) > 1}
    spelled: dict[str, list[str]] = {k: [] for k in defined}
    files = list(_modules().values()) + [p for p in (ROOT / "test" / "python").glob("*.py") if p.name != "test_layout.py"]
    for path in files:
        for literal in _string_literals(path):
            if literal in spelled:
                spelled[literal].append(str(path.relative_to(ROOT)))
    # Each name is written once (its definition); everything else uses the constant.
    assert all(len(v) == 1 for v in spelled.values()), {k: v for k, v in spelled.items() if len(v) != 1}


def _literal_attribute_keys(path: Path) -> list[str]:
    """String literals used as keys of an `.attributes` (`x.attributes["k"]`, `"k" in x.attributes`)."""
    def is_attributes(node) -> bool:
        return isinstance(node, ast.Attribute) and node.attr == "attributes"

    keys = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Subscript) and is_attributes(node.value):
            keys.append(node.slice)
        elif isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], (ast.In, ast.NotIn)) \
                and is_attributes(node.comparators[0]):
            keys.append(node.left)
    return [k.value for k in keys if isinstance(k, ast.Constant) and isinstance(k.value, str)]


def test_braze_attributes_are_named_by_their_constant():
    """An attribute in braze's namespaces (braze.*, fusion.*) is read and written through its
    ATTR constant, so the test above sees every one of them."""
    inline = {str(path.relative_to(ROOT)): keys for path in _modules().values()
              if (keys := [k for k in _literal_attribute_keys(path) if k.startswith(("braze.", "fusion."))])}
    assert inline == {}, inline


@pytest.mark.parametrize("name", sorted(PASSES))
def test_pass_has_its_lit_test(name):
    path = ROOT / "test" / "passes" / f"{name}.mlir"
    assert path.exists(), f"{name} has no {path.relative_to(ROOT)}"
    assert f"-p {name}" in path.read_text() or f"{name}{{" in path.read_text() or f"-p '{name}" in path.read_text(), \
        f"{path.name} does not run {name}"


@pytest.mark.parametrize("name", sorted(PASSES))
def test_pass_docstring_has_before_and_after(name):
    doc = sys.modules[PASSES[name].__module__].__doc__ or ""
    summary, _, rest = doc.strip().partition("\n")
    assert summary.startswith(f"{name}:"), f"{name}: the docstring starts with '{name}: <what it changes>'"
    example = [line for line in rest.splitlines() if line.startswith("    ")]
    assert any("->" in line for line in example) or "  ->" in rest, f"{name}: no before -> after example"


@pytest.mark.parametrize("name", sorted(PIPELINES))
def test_pipelines_expand_to_registered_passes(name):
    from braze.passes.registry import parse_pipeline

    steps = parse_pipeline(PIPELINES[name]().expand())
    assert steps and all(s.braze_pass is not None or s.text in ("canonicalize", "cse") for s in steps)


def test_every_package_is_installed():
    """pyproject.toml lists every package folder (a regular install, as on a GPU host, would
    silently lack one it forgot)."""
    import tomllib

    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {name for name, path in _modules().items() if path.name == "__init__.py"}
    assert found <= listed, f"packages missing from pyproject.toml: {sorted(found - listed)}"
