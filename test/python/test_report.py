"""CompiledModule.report: stages, op counts, dispatches, fusion groups with their source lines,
and why adjacent ops stayed apart."""

import torch

import braze


class ChainThenSum(torch.nn.Module):
    def forward(self, x, y):
        a = torch.exp(x) * y  # line A: a group of exp and mul ...
        b = torch.tanh(a) + 1.0  # ... and tanh and add, one kernel
        return b, b.view(-1).sum()  # the reshape and the reduction stay outside


def test_report_names_groups_sources_and_reasons():
    compiled = braze.compile(ChainThenSum(), torch.randn(8, 16), torch.randn(8, 16))
    report = compiled.report
    assert set(report.stage_seconds) == {"export", "import", "fusion", "iree_compile"}
    assert report.linalg_ops_after < report.linalg_ops_before
    assert report.dispatch_count >= 1
    assert len(report.groups) == 1
    group = report.groups[0]
    assert group["kind"] == "elementwise" and group["label"] == "group0"
    ops = " ".join(m["op"] for m in group["members"])
    assert "exp" in ops and "mulf" in ops and "tanh" in ops and "addf" in ops
    lines = {m["location"] for m in group["members"]}
    assert any("test_report.py:11" in loc for loc in lines)  # line A
    assert any("test_report.py:12" in loc for loc in lines)
    reasons = {u["reason"] for u in report.unfused}
    assert any(r.startswith("non-elementwise: tensor.collapse_shape") for r in reasons)
    text = str(report)
    assert "IREE dispatches (kernels)" in text and "group0 [elementwise]" in text
    assert "adjacent pairs (report.unfused lists each), by reason:" in text


def test_fusion_off_reports_no_groups():
    report = braze.compile(ChainThenSum(), torch.randn(8, 16), torch.randn(8, 16), fusion=False).report
    assert report.groups == [] and report.linalg_ops_after == report.linalg_ops_before
    assert "fusion-baseline-pipeline" in str(report)


def test_report_survives_save_and_load(tmp_path):
    compiled = braze.compile(ChainThenSum(), torch.randn(8, 16), torch.randn(8, 16))
    compiled.save(tmp_path / "m.braze")
    loaded = braze.load(tmp_path / "m.braze")
    assert loaded.report.groups == compiled.report.groups
    assert loaded.report.dispatch_count == compiled.report.dispatch_count


def test_compile_progress_only_where_asked(capsys, monkeypatch):
    """A bar on a terminal (forced here with BRAZE_PROGRESS=1) naming the stages; nothing when
    stderr is not a terminal (as under pytest and CI) or BRAZE_PROGRESS=0."""
    import torch

    import braze

    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU()).eval()
    monkeypatch.delenv("BRAZE_PROGRESS", raising=False)
    braze.compile(model, torch.randn(2, 8))
    assert "braze:" not in capsys.readouterr().err
    monkeypatch.setenv("BRAZE_PROGRESS", "1")
    braze.compile(model, torch.randn(2, 8))
    err = capsys.readouterr().err
    assert "braze: Sequential" in err and "IREE and generated kernels" in err
    monkeypatch.setenv("BRAZE_PROGRESS", "0")
    braze.compile(model, torch.randn(2, 8))
    assert "braze:" not in capsys.readouterr().err
