"""braze.check: finds the first rewrite decision that breaks a model, and says the model is
fine when it is."""

import re
import shlex
import subprocess
import sys

import pytest
import torch
import torch.nn.functional as F

import braze
from braze.passes import lower_to_linalg


class Net(torch.nn.Module):
    """Three independent elementwise chains (three groups, three decisions) and a softmax."""

    def forward(self, x, y, z):
        a = torch.tanh(x * 2.0 + 1.0)
        b = torch.sigmoid(y) * y - 0.5
        c = torch.relu(z * 3.0) + 2.0
        return a, b, F.softmax(c, dim=-1)


def _inputs():
    torch.manual_seed(0)
    return torch.randn(8, 16), torch.randn(8, 16), torch.randn(8, 16)


def test_a_correct_model_checks_ok():
    result = braze.check(Net().eval(), *_inputs())
    assert result.ok and result.verdict == "braze matches eager" and result.first_bad_decision is None
    assert set(result.errors) == {"eager", "unfused", "braze"}
    assert "braze matches eager" in str(result)


def test_bisects_to_the_group_a_broken_lowering_miscompiles(monkeypatch, tmp_path):
    """Lowering is made to miscompile only groups holding a sigmoid: check names that group's
    decision, and its reproducer replays right and wrong in braze-opt."""
    monkeypatch.setenv("BRAZE_REPRODUCER_DIR", str(tmp_path))
    original = lower_to_linalg.lower_group

    def broken(group):
        has_sigmoid = any(o.operation.name in ("linalg.generic",) and "negf" in str(o.operation)
                          for o in group.regions[0].blocks[0].operations)
        fused = original(group)
        if fused is not None and has_sigmoid:
            for op in fused.regions[0].blocks[0].operations:
                if op.operation.name == "arith.mulf":
                    a, b = op.operation.operands
                    with braze._mlir.ir.InsertionPoint(op), op.operation.location:
                        wrong = braze._mlir.arith.AddFOp(a, b).result
                    op.operation.results[0].replace_all_uses_with(wrong)
                    break
        return fused

    monkeypatch.setattr(lower_to_linalg, "lower_group", broken)
    result = braze.check(Net().eval(), *_inputs())
    assert result.verdict == "braze's passes break the model", str(result)
    assert result.errors["unfused"] <= result.tolerance < result.errors["braze"]
    k = result.first_bad_decision
    groups = [d for d in result.decisions if d.startswith("fusion-form-groups")]
    assert len(groups) == 2 and k == 2, str(result)  # the third chain feeds the softmax: IREE fuses it
    assert "fusion-form-groups" in result.decisions[k - 1] and "negf" in result.decisions[k - 1]
    assert result.bisect_errors[k] > result.tolerance and result.bisect_errors.get(k - 1, 0.0) <= result.tolerance
    text = open(result.reproducer).read()
    assert f"--decision-limit={k} --print-decisions  # wrong" in text and "func.func @main" in text
    command = re.search(r"// (braze-opt .+) --print-decisions  # wrong", text).group(1)
    replay = subprocess.run([sys.executable, "-m", "braze.tools.braze_opt", *shlex.split(command)[1:], "--print-decisions"],
                            capture_output=True, text=True)
    assert replay.returncode == 0, replay.stderr
    assert f"decision {k}: " in replay.stderr
    if k < len(result.decisions):
        assert f"decision {k + 1} (skipped): " in replay.stderr


def test_check_from_the_command_line(tmp_path):
    model = tmp_path / "net.py"
    model.write_text("import torch\n"
                     "def make():\n"
                     "    return torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.GELU()).eval(), (torch.randn(4, 8),)\n")
    done = subprocess.run([sys.executable, "-m", "braze.tools.cli", "check", f"{model}:make"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "verdict: braze matches eager" in done.stdout
    assert "Traceback" not in done.stderr
