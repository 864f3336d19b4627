"""dialects/fusion.irdl.mlir must be exactly what the Python definition emits."""

from braze.dialects import fusion


def test_irdl_file_matches_definition():
    assert fusion.IRDL_PATH.read_text() == fusion.emit_irdl(), (
        "dialects/fusion.irdl.mlir is stale; regenerate it with `braze-opt --emit-irdl`"
    )
