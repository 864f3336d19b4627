"""lit configuration: `lit test/` runs braze's lit suite with no CMake step.

Substitutions: `braze-opt` and `braze` (the console scripts beside this Python, else
`python -m`), `%PYTHON`, and `FileCheck` backed by the PyPI `filecheck` package.
pytest files (test/python/, conftest.py) are not lit tests.
"""

import os
import shutil
import sys

import lit.formats

config.name = "braze"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir", ".py"]
config.excludes = ["python", "Inputs", "conftest.py", "lit.cfg.py", "__pycache__", "Output"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.test_source_root, "Output")

python = sys.executable
bindir = os.path.dirname(python)


def _tool(name: str, module: str) -> str:
    path = shutil.which(name, path=bindir)
    return f'"{path}"' if path else f'"{python}" -m {module}'


filecheck = shutil.which("filecheck", path=bindir) or shutil.which("filecheck")
if filecheck is None:
    lit_config.fatal("FileCheck: the `filecheck` executable is missing; pip install filecheck")

config.substitutions.append(("%PYTHON", f'"{python}"'))
# Word boundaries keep `braze-opt` from matching inside paths and `braze` inside `braze-opt`.
config.substitutions.append((r"(?<![\w/.-])braze-opt(?![\w.-])", _tool("braze-opt", "braze.tools.braze_opt")))
config.substitutions.append((r"(?<![\w/.-])braze(?![\w.-])", _tool("braze", "braze.tools.cli")))
config.substitutions.append((r"(?<![\w/.-])FileCheck(?![\w.-])", f'"{filecheck}"'))
# IREE's own compiler CLI (iree-base-compiler's console script), for replaying `--emit iree-input`.
iree_compile = shutil.which("iree-compile", path=bindir) or shutil.which("iree-compile")
if iree_compile:
    config.substitutions.append((r"(?<![\w/.-])iree-compile(?![\w.-])", f'"{iree_compile}"'))
    config.available_features.add("iree-compile")
config.substitutions.append(("%inputs", os.path.join(config.test_source_root, "tools", "Inputs")))
# `cmd 2>&1 | %no-traceback | FileCheck ...`: fails when the output holds a traceback anywhere.
config.substitutions.append(("%no-traceback", f'"{python}" "{os.path.join(config.test_source_root, "tools", "Inputs", "no_traceback.py")}"'))

# Tests must not depend on the caller's environment beyond the Python that runs lit.
config.environment["PYTHONDONTWRITEBYTECODE"] = "1"
# An empty tuning cache: a kernel configuration measured on this machine must not change a test.
import tempfile  # noqa: E402

config.environment["BRAZE_CACHE_DIR"] = tempfile.mkdtemp(prefix="braze-lit-cache-")
config.environment["BRAZE_COMPILE_CACHE"] = "0"  # every compile in a test compiles
for var in ("PYTHONPATH", "HOME", "TMPDIR", "TEMP", "TMP"):
    if var in os.environ:
        config.environment[var] = os.environ[var]
