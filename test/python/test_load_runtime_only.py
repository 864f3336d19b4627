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


def test_load_and_run_without_compiler_or_torch(tmp_path):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.Linear(16, 4)).eval()
    x = torch.randn(5, 8)
    braze.compile(model, x).save(tmp_path / "mlp.braze")
    np.save(tmp_path / "x.npy", x.numpy())
    with torch.no_grad():
        np.save(tmp_path / "expected.npy", model(x).numpy())
    script = BLOCKER + textwrap.dedent(
        f"""
        import numpy as np, braze
        m = braze.load({str(tmp_path / 'mlp.braze')!r})
        out = m(np.load({str(tmp_path / 'x.npy')!r}))
        assert isinstance(out, np.ndarray), type(out)
        err = np.abs(out - np.load({str(tmp_path / 'expected.npy')!r})).max()
        assert err < 1e-5, err
        assert "torch" not in sys.modules and "torch_mlir" not in sys.modules
        assert not any(n.startswith("iree.compiler") for n in sys.modules)
        print("ran", out.shape, err)
        """
    )
    result = subprocess.run([sys.executable, "-c", "import sys\n" + script], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert "ran (5, 4)" in result.stdout
