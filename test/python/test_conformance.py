"""braze's conformance suite in CI (issue 39): every module of braze.testing.conformance
compiled with braze's passes and without (fusion=False), called on fresh random inputs of each
size it lists, and compared with eager PyTorch (in float64, or as it is where its dtypes are the
point), results and the inputs it updates in place alike. Modules the raw torch-mlir + IREE
toolchain cannot run either must be refused with a BrazeError that says so, never a raw
exception or a wrong answer."""

import re

import pytest

import braze
from braze.testing import conformance

VARIANTS = {"fused": {}, "unfused": {"fusion": False}}
CI_MODULES = 150
"""How many modules CI compiles, fused and unfused (issue 39's floor): the first of a round over
the families (each family's first module, then each one's second, ...), so every family is in
CI; the rest are marked extended (--run-extended), for CI's 30 minutes (bench/NOTES.md §55)."""


def _round_over_families(modules) -> list[str]:
    families: dict[str, list[str]] = {}
    for m in modules:
        families.setdefault(m.family, []).append(m.name)
    rounds = max(len(names) for names in families.values())
    return [names[i] for i in range(rounds) for names in families.values() if i < len(names)]


_IN_CI = set(_round_over_families(conformance.MODULES)[:CI_MODULES])


def _params():
    for name in (m.name for m in conformance.MODULES):
        for variant in VARIANTS:
            extended = name not in _IN_CI
            yield pytest.param(name, variant, id=f"{name}-{variant}", marks=[pytest.mark.extended] if extended else [])


@pytest.mark.slow
@pytest.mark.parametrize("name,variant", list(_params()))
def test_module_conforms(name, variant):
    module = conformance.BY_NAME[name]
    if module.unsupported:
        with pytest.raises(braze.BrazeError) as err:
            conformance.check(module, braze.compile, cache=False, **VARIANTS[variant])
        assert re.search(module.unsupported, str(err.value)), str(err.value)
        return
    problems = conformance.check(module, braze.compile, cache=False, **VARIANTS[variant])
    assert not problems, "\n".join(problems)


def test_the_suite_covers_every_family_with_150_modules():
    families = {m.family for m in conformance.MODULES}
    assert {"pooling", "slice_write", "linalg", "complex", "float64", "empty", "index", "conv"} <= families
    assert sum(not m.unsupported for m in conformance.MODULES) >= 150
    # CI compiles 150 of them, fused and unfused, from every family
    assert len(_IN_CI) == CI_MODULES
    assert {m.family for m in conformance.MODULES if m.name in _IN_CI} == families


def test_a_wrong_result_is_reported():
    """check() is not blind: a 'compiler' that returns eager's result plus a tiny error, or a
    NaN, fails, and one that leaves an input it should update untouched fails too."""
    import torch

    module = conformance.BY_NAME["cumsum"]

    def off_by(delta):
        def compile_fn(model, *example, **_):
            return lambda *args: model(*args) + delta
        return compile_fn

    assert conformance.check(module, off_by(0.0)) == []
    assert conformance.check(module, off_by(1e-3))
    assert conformance.check(module, off_by(float("nan")))
    copy = conformance.BY_NAME["slice_copy_basic"]

    def no_write_back(model, *example, **_):
        return lambda x, y: model(x.clone(), y)

    assert any("inputs after the call" in p for p in conformance.check(copy, no_write_back))
    assert torch.is_tensor(copy.example()[0])
