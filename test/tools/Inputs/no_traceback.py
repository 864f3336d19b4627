"""Pass stdin through to stdout; exit 1 if it holds a Python traceback anywhere.

lit's `%no-traceback` (test/lit.cfg.py): `cmd 2>&1 | %no-traceback | FileCheck ...` fails the
RUN line (lit runs pipelines with pipefail) when any line of the output is a traceback, which a
`CHECK-NOT` after the positive matches would miss. The PyPI filecheck braze pins has no
`--implicit-check-not`."""

import sys

text = sys.stdin.read()
sys.stdout.write(text)
sys.exit(1 if "Traceback (most recent call last)" in text else 0)
