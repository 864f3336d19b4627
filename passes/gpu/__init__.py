"""braze's GPU (CUDA) passes and the leaves they share.

Leaves (no passes, no import of each other's passes): `configs` (the configuration and
signature formats, no MLIR), `cost_model` (the choices, no MLIR), `matchers` (shapes and
signatures read off the IR), `options` (the target and tuning-cache options). Passes:
`conv_to_matmul`, `channels_last`, `generate_kernels`, `pad_matmuls`, `split_k`, `configure_kernels`; each imports
leaves only (and braze.kernels, the generated kernels' spec and templates).
"""
