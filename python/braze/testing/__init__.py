"""Corpora braze is tested and measured against, importable on a GPU host too (they need only
torch): zoo (the test zoo and the bench workloads), randomgraphs (the differential suite's
random graphs), coverage (op-coverage cases), conformance (small modules by op family, in the
style of torch-mlir's e2e suite)."""
