"""The CUDA launch plan read off IREE's HAL program (cross-compiled here; it runs on a GPU host,
bench/launch_check.py): every zoo model gets one, with IREE's own dispatch count, kernels whose
names, block sizes and PTX come from IREE's executable, and a plan that survives save/load."""

import json
import re

import pytest
import torch

import braze
from braze import artifact
from braze.cuda.plan import LaunchPlan
from braze.zoo import CASES


@pytest.fixture(scope="module")
def compiled():
    out = {}
    for case in CASES:
        model, args, kwargs = case.build()
        out[case.name] = braze.compile(model, *args, example_kwargs=kwargs, device="cuda", target="sm_90")
    return out


@pytest.mark.parametrize("name", [c.name for c in CASES])
def test_every_zoo_model_has_a_plan_with_ireees_dispatches(compiled, name):
    module = compiled[name]
    plan = module.plan
    assert plan is not None, module.report.launch_plan
    assert sum(s.op == "dispatch" for s in plan.steps) == module.report.dispatch_count
    assert len(plan.outputs) == len(module.signature.outputs)
    assert plan.inputs == len(module.signature.program_inputs)
    for executable in plan.executables:
        for kernel in executable.kernels:
            ptx = executable.ptx[kernel.module]
            assert re.search(rf"\.entry {re.escape(kernel.name)}\(", ptx), kernel.name
            assert ".target sm_90" in ptx
            assert all(b >= 1 for b in kernel.block) and kernel.block[0] * kernel.block[1] * kernel.block[2] <= 1024
    for step in plan.steps:
        if step.op == "dispatch":
            assert all(g >= 1 for g in step.grid)
            kernel = plan.executables[step.executable].kernels[step.kernel]
            # the kernel's parameters in PTX: one pointer per binding, one .b32 per constant
            params = re.search(rf"\.entry {re.escape(kernel.name)}\((.*?)\)", plan.executables[step.executable]
                               .ptx[kernel.module], re.S).group(1)
            assert params.count(".param") == kernel.bindings + kernel.constants
    assert "kernels" in module.report.launch_plan


def test_the_plan_survives_save_and_load(compiled, tmp_path):
    module = compiled["transformer_encoder"]
    path = module.save(tmp_path / "m.braze")
    _, meta, _, files = artifact.read(path)
    assert meta["runtime"] == "auto"
    plan = LaunchPlan.from_json(json.loads(files["cuda/plan.json"]), files)
    assert plan.to_json() == module.plan.to_json()
    assert plan.constants == module.plan.constants and plan.executables[0].ptx == module.plan.executables[0].ptx


def test_weights_in_the_plan_are_the_models():
    """The constant buffers are the weights' bytes (a Linear's, found inside a constant; IREE
    inlines constants up to 256 bytes into the kernels, so this bias is larger)."""
    torch.manual_seed(0)
    model = torch.nn.Linear(64, 128).eval()
    module = braze.compile(model, torch.randn(16, 64), device="cuda", target="sm_90")
    blob = b"".join(module.plan.constants)
    assert model.weight.detach().numpy().tobytes()[:256] in blob
    assert model.bias.detach().numpy().tobytes() in blob


def test_runtime_iree_compiles_no_plan_and_launch_without_one_fails():
    module = braze.compile(torch.nn.ReLU(), torch.randn(8), device="cuda", target="sm_90", runtime="iree")
    assert module.plan is None and module.report.launch_plan == ""
    with pytest.raises(braze.CompileError, match="no CUDA launch plan"):
        braze.compile(torch.nn.ReLU(), torch.randn(8), device="cuda", target="sm_90", runtime="launch",
                      output_storage=False)
    with pytest.raises(braze.InputError, match="runtime="):
        braze.compile(torch.nn.ReLU(), torch.randn(8), runtime="fast")
