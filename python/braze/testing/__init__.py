"""Corpora braze is tested against, importable on a GPU host too (they need only torch):
conformance (small modules by op family, in the style of torch-mlir's e2e suite)."""
