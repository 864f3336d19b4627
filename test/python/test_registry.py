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
