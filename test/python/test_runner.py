"""A failing pass in braze.compile: a braze error naming the pass, the first diagnostic, a
reproducer file holding the IR before the pass, and a braze-opt command that replays it."""

import re
import shlex
import pytest
import torch

import braze
from braze.irutil import all_ops
from braze.passes.form_groups import FormGroupsPass
from braze.passes.registry import PassFailure


class Chain(torch.nn.Module):
    def forward(self, x):
        return torch.tanh(torch.relu(x * 2.0 + 1.0))


def _replay(message: str, capsys) -> tuple[int, str]:
    """Run the braze-opt command the message prints (in this process, so a monkeypatched pass
    fails again); its exit status and stderr."""
    from braze.tools import braze_opt

    command = re.search(r"replay with: (braze-opt .+)$", message).group(1)
    capsys.readouterr()
    code = braze_opt.main(shlex.split(command)[1:] + ["-o", "/dev/null"])
    return code, capsys.readouterr().err


@pytest.fixture(autouse=True)
def reproducers(tmp_path, monkeypatch):
    monkeypatch.setenv("BRAZE_REPRODUCER_DIR", str(tmp_path))
    return tmp_path


def test_a_failing_braze_pass_is_an_internal_error_with_a_reproducer(monkeypatch, reproducers, capsys):
    def fail(self, module):
        raise PassFailure("fusion-form-groups: made to fail by the test")

    monkeypatch.setattr(FormGroupsPass, "run", fail)
    with pytest.raises(braze.InternalError) as caught:
        braze.compile(Chain(), torch.randn(4, 8))
    message = str(caught.value)
    assert "pass 'fusion-form-groups' failed on Chain" in message
    assert "made to fail by the test" in message and "a bug in braze" in message
    files = list(reproducers.glob("braze-reproducer-*.mlir"))
    assert len(files) == 1 and str(files[0]) in message
    text = files[0].read_text()
    # The IR before the failing pass: after fusion-fold-broadcast-matmul, with locations, no group yet.
    assert "// Replay: braze-opt" in text and "func.func @main" in text and "fusion.group" not in text
    assert "loc(" in text
    assert f"braze-opt {files[0]} -p fusion-form-groups" in message
    code, err = _replay(message, capsys)
    assert code == 1 and "made to fail by the test" in err


def test_ir_that_does_not_verify_is_caught_after_the_pass(monkeypatch):
    """A pass that breaks dominance (moves an op after its user) fails at the verifier, inside
    braze, not later in IREE as the user's compile error."""

    def break_dominance(self, module):
        ops = [op for op in all_ops(module) if op.name.startswith("linalg.") and op.name != "linalg.yield"]
        ops[0].move_after(ops[-1])

    monkeypatch.setattr(FormGroupsPass, "run", break_dominance)
    with pytest.raises(braze.InternalError, match="pass 'fusion-form-groups' failed on Chain: .*dominate"):
        braze.compile(Chain(), torch.randn(4, 8))


def test_a_pipeline_the_user_chose_fails_as_a_compile_error(monkeypatch, capsys):
    """pipeline=... is the user's choice: its failure is a CompileError (with the same
    reproducer), not a braze bug."""

    def fail(self, module):
        raise PassFailure("refused")

    monkeypatch.setattr(FormGroupsPass, "run", fail)
    with pytest.raises(braze.CompileError) as caught:
        braze.compile(Chain(), torch.randn(4, 8), pipeline="cse,fusion-form-groups{fuse-siblings=false}")
    assert not isinstance(caught.value, braze.InternalError)
    message = str(caught.value)
    assert "pass 'fusion-form-groups{fuse-siblings=false}' failed on Chain" in message and "refused" in message
    code, err = _replay(message, capsys)
    assert code == 1 and "refused" in err


def test_a_pass_that_raises_is_an_internal_error_not_a_crash(monkeypatch):
    def crash(self, module):
        return {}["missing"]

    monkeypatch.setattr(FormGroupsPass, "run", crash)
    with pytest.raises(braze.InternalError, match=r"fusion-form-groups raised KeyError: 'missing' \(at test_runner.py:\d+"):
        braze.compile(Chain(), torch.randn(4, 8))


def test_a_template_that_does_not_parse_names_itself():
    """A pass's rewrite template that is not valid IR is reported with its text (torch-mlir's
    parser throws std::bad_alloc, not a parse error, for an iterator type written as an
    attribute: that surfaced as a bare MemoryError)."""
    from braze._mlir import ir
    from braze.dialects.fusion import new_context
    from braze.passes.template import TemplateError, inline_template

    bad = ("func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {\n  %y = linalg.generic {indexing_maps = "
           "[affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = [#linalg.iterator_type<parallel>]} "
           "ins(%x : tensor<2xf32>) outs(%x : tensor<2xf32>) {\n  ^bb0(%a: f32, %b: f32):\n    linalg.yield %a : f32\n"
           "  } -> tensor<2xf32>\n  return %y : tensor<2xf32>\n}\n")
    with new_context(), ir.Location.unknown():
        module = ir.Module.parse("func.func @g(%x: tensor<2xf32>) -> tensor<2xf32> {\n  return %x : tensor<2xf32>\n}\n")
        ret = module.body.operations[0].regions[0].blocks[0].operations[0].operation
        arg = module.body.operations[0].regions[0].blocks[0].arguments[0]
        for text in (bad, bad.replace("f32", "f33", 1)):
            with pytest.raises(TemplateError, match=r"did not parse[\s\S]*func.func @f"):
                inline_template(text, [arg], ret)
