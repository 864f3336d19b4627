"""The first line of a CompileError raised for an IREE failure carries IREE's first diagnostic
(issue 14): it is the line a log, `bench/differential.py` and `bench/gpu_check.py` keep, so it
must say what failed and where, not only "IREE failed to compile the module:"."""

import pytest
import torch

import braze


def _lines(model, *args, **options) -> list[str]:
    with pytest.raises(braze.CompileError) as err:
        braze.compile(model, *args, **options)
    return str(err.value).splitlines()


@pytest.mark.parametrize("fusion", [True, False], ids=["braze", "unfused"])
def test_codegen_failure_names_the_op_on_the_first_line(fusion):
    """IREE 3.13's SPIR-V code generator for Mesa's llvmpipe cannot compile a bfloat16 1x1
    convolution with its bias (a bf16 vector load it cannot legalize): the op's
    diagnostic, with its source location, comes first, and the backend's 'failed to run
    translation' that follows it comes after. (For the GPU targets braze now avoids IREE's
    failure on the same convolution: test_vulkan.py.)"""
    model = torch.nn.Conv2d(16, 96, 1).eval().bfloat16()
    lines = _lines(model, torch.randn(1, 16, 8, 8).bfloat16(), device="vulkan", target="llvmpipe", fusion=fusion)
    first = lines[0]
    assert first.startswith("IREE failed to compile Conv2d for vulkan (llvmpipe): loc("), first
    assert "torch/nn/modules/conv.py" in first, first
    assert "failed to legalize operation 'vector.bitcast'" in first, first
    assert not any("failed to legalize operation 'vector.bitcast'" in line for line in lines[1:]), lines
    assert any("failed to run translation of source executable" in line for line in lines[1:]), lines


def test_unknown_device_alias_is_the_first_line():
    """A flag IREE parses but cannot honour fails in the compile itself, as a diagnostic."""
    lines = _lines(torch.nn.Linear(8, 4).eval(), torch.randn(2, 8),
                   iree_flags=["--iree-hal-target-device=no-such-device"])
    assert lines[0].startswith("IREE failed to compile Linear for cpu"), lines[0]
    assert 'unregistered device alias "no-such-device"' in lines[0], lines[0]
