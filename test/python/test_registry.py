"""Every registered pass is named, documented, and found under its own name."""

import sys

from braze.passes import PASSES


def test_keys_equal_names():
    for key, cls in PASSES.items():
        assert key == cls.name


def test_summaries_and_docstrings():
    for cls in PASSES.values():
        assert cls.summary.strip(), cls.name
        module = sys.modules[cls.__module__]
        assert module.__doc__ and module.__doc__.strip(), cls.__module__


def test_options_documented():
    for cls in PASSES.values():
        for f in cls.options():
            assert f.metadata.get("doc", "").strip(), f"{cls.name}: option {f.name}"


def _defined_in(module: str) -> set[str]:
    """Names of the passes and pipelines a module defines (read from its source, not imported)."""
    import ast
    import importlib.util

    tree = ast.parse(open(importlib.util.find_spec(module).origin).read())
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            for stmt in node.body:
                if isinstance(stmt, ast.Assign) and [getattr(t, "id", None) for t in stmt.targets] == ["name"] \
                        and isinstance(stmt.value, ast.Constant) and str(stmt.value.value).startswith("fusion-"):
                    names.add(stmt.value.value)
    return names


def test_the_lazy_table_names_every_pass_and_pipeline_where_it_is_defined():
    import pkgutil

    import braze.passes
    from braze.passes.registry import PASS_MODULES, PIPELINE_MODULES

    table = {**PASS_MODULES, **PIPELINE_MODULES}
    found = {}
    for info in pkgutil.walk_packages(braze.passes.__path__, "braze.passes."):
        for name in _defined_in(info.name):
            found[name] = info.name
    assert found == table
    for name, cls in [*PASSES.items(), *braze.passes.PIPELINES.items()]:
        assert cls.__module__ == table[name]


def test_pipelines_print_and_parse_without_mlir():
    """The compile cache keys on the pipeline's text: printing it must not load MLIR (a cache hit
    would pay ~0.25 s), and parsing it loads only the passes it names."""
    import subprocess

    script = (
        "import sys\n"
        "from braze.passes import pipelines\n"
        "from braze.passes.registry import PASSES, parse_pipeline\n"
        "text = pipelines.for_device('cuda', 'sm_90', '', 'highest').pipeline_text(('target',))\n"
        "assert 'fusion-cuda-pipeline' in text, text\n"
        "assert not [m for m in sys.modules if m.startswith(('torch_mlir', 'braze._mlir', 'iree'))]\n"
        "assert PASSES['fusion-split-k'].name == 'fusion-split-k'\n"
        "assert 'braze.passes.gpu.split_k' in sys.modules and 'braze.passes.form_groups' not in sys.modules\n"
        "print('ok')\n")
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert result.returncode == 0 and result.stdout == "ok\n", result.stderr


def test_a_name_listed_under_another_module_is_refused():
    import pytest

    from braze.passes.registry import ModulePass, register

    class Impostor(ModulePass):
        name = "fusion-split-k"
        summary = "not the real one"

    with pytest.raises(RuntimeError, match="'fusion-split-k' is listed in passes/registry.py under braze.passes.gpu.split_k"):
        register(Impostor)
