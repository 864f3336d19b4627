"""braze's MLIR dialects, defined in Python on top of IRDL."""
