"""A saved artifact loads and runs where torch-mlir, iree.compiler and torch cannot be imported."""

import subprocess
import sys
import textwrap

import numpy as np
import torch

import braze

BLOCKER = textwrap.dedent(
    """
    import importlib.abc, sys
    class Block(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in ("torch", "torch_mlir") or name.startswith("iree.compiler"):
                raise ImportError(f"{name} is blocked in this test")
    sys.meta_path.insert(0, Block())
    """
)

COMPILE_ROOMS = ("braze.compiler", "braze.passes", "braze.dialects", "braze.kernels", "braze.testing",
                 "braze.tools", "braze._mlir", "braze.irutil", "braze.check", "braze.dynamo")
"""braze's compile side: the runtime (braze.load, a loaded module's calls) imports none of it."""

RUNTIME_ROOM = {"braze", "braze.runtime", "braze.runtime.module", "braze.runtime.dynamic", "braze.runtime.artifact",
                "braze.errors", "braze.settings", "braze.fileutil", "braze.report", "braze.signature", "braze.targets"}
"""What `import braze.runtime` loads of braze: the runtime room's front and the shared floor
(errors, files, the report, the signature, targets); the IREE program, the CPU policy and the
CUDA launcher load when a module needs them."""


def test_import_braze_runtime_loads_the_runtime_room_and_the_shared_floor_only():
    script = "import sys, braze.runtime\nprint(sorted(n for n in sys.modules if n.split('.')[0] in ('braze', 'torch', 'torch_mlir', 'iree', 'triton', 'numpy')))"
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    loaded = set(eval(result.stdout))
    assert {n for n in loaded if n.startswith("braze")} == RUNTIME_ROOM
    assert not {n for n in loaded if n.split(".")[0] in ("torch", "torch_mlir", "iree", "triton")}


def test_load_and_run_without_compiler_or_torch(tmp_path):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.Linear(16, 4)).eval()
    x = torch.randn(5, 8)
    braze.compile(model, x).save(tmp_path / "mlp.braze")
    np.save(tmp_path / "x.npy", x.numpy())
    with torch.no_grad():
        np.save(tmp_path / "expected.npy", model(x).numpy())
    script = BLOCKER + f"COMPILE_ROOMS = {COMPILE_ROOMS!r}\n" + textwrap.dedent(
        f"""
        import numpy as np, braze
        m = braze.load({str(tmp_path / 'mlp.braze')!r})
        out = m(np.load({str(tmp_path / 'x.npy')!r}))
        assert isinstance(out, np.ndarray), type(out)
        err = np.abs(out - np.load({str(tmp_path / 'expected.npy')!r})).max()
        assert err < 1e-5, err
        assert "torch" not in sys.modules and "torch_mlir" not in sys.modules
        assert not any(n.startswith("iree.compiler") for n in sys.modules)
        compile_side = sorted(n for n in sys.modules if n.split(".")[0] == "triton"
                              or n.startswith(COMPILE_ROOMS))
        assert not compile_side, compile_side
        print("ran", out.shape, err)
        """
    )
    result = subprocess.run([sys.executable, "-c", "import sys\n" + script], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert "ran (5, 4)" in result.stdout
