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


def test_invalid_ir_braze_hands_iree_is_an_internal_error_with_a_reproducer(tmp_path, monkeypatch):
    """A rewrite braze makes in IREE's context (the backend's hooks) that leaves invalid IR is
    braze's bug: an InternalError naming the verifier's complaint, with the module written as a
    reproducer, not a diagnostic from deep inside IREE's pipeline."""
    from braze.compiler._iree_compiler import compile_module

    monkeypatch.setenv("BRAZE_REPRODUCER_DIR", str(tmp_path))
    source = ("func.func @main(%a: tensor<4xf32>, %b: tensor<8xf32>) -> tensor<4xf32> {\n"
              "  return %a : tensor<4xf32>\n}")

    def wrong_operand(module):  # return %b (tensor<8xf32>) from a function declared to return tensor<4xf32>
        func = module.body.operations[0]
        block = func.regions[0].blocks[0]
        ret = list(block.operations)[-1]
        ret.operands[0] = block.arguments[1]

    compile_module(source, ["--iree-hal-target-device=local", "--iree-hal-local-target-device-backends=llvm-cpu"])
    with pytest.raises(braze.InternalError, match="braze's rewrites for IREE left invalid IR") as err:
        compile_module(source, ["--iree-hal-target-device=local", "--iree-hal-local-target-device-backends=llvm-cpu"],
                       module_hook=wrong_operand, what="M")
    assert "type of return operand 0" in str(err.value)
    written = list(tmp_path.glob("braze-iree-input-*.mlir"))
    assert len(written) == 1 and "tensor<8xf32>" in written[0].read_text()
