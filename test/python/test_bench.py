"""braze bench: the harness end to end on one tiny workload, locally and through build/run."""

import json
import subprocess
import sys

import pytest

from braze.tools import bench
from braze.testing.zoo import CPU_DEFAULT, GPU_DEFAULT, QUICK, WORKLOADS, checksum

pytestmark = pytest.mark.filterwarnings("ignore")


CPU_CONTENDERS = ("eager", "inductor", "iree", "braze")


def _check_result(result, contenders=CPU_CONTENDERS):
    assert result["schema"] == bench.SCHEMA
    for key in ("date", "device", "machine", "versions", "copy_bandwidth_gbs", "settings", "workloads"):
        assert key in result, key
    assert result["copy_bandwidth_gbs"] > 0
    (row,) = result["workloads"]
    assert row["name"] == "tiny_chain" and row["memory_bound"] and row["min_bytes"] == 2 * 256 * 256 * 4
    assert set(row["contenders"]) == set(contenders)
    for name, c in row["contenders"].items():
        assert set(bench.METRICS) <= set(c), name
        assert c["status"] == "ok", (name, c["error"])
        assert set(c["latency_ms"]) == set(bench.LATENCY_KEYS)
        assert 0 < c["latency_ms"]["min"] <= c["latency_ms"]["median"] <= c["latency_ms"]["max"]
        assert c["reps"] == 3
        assert c["kernels"] >= 1 and c["kernels_method"]
        assert c["max_rel_err"] < 1e-5
        assert c["bandwidth_gbs"] > 0 and c["bandwidth_fraction"] > 0
        assert c["speedup_vs_eager"] > 0
        assert c["compile_seconds"] is not None
    assert row["contenders"]["eager"]["kernels"] == 6  # mul, add, relu, sigmoid, mul, sub
    for name in ("iree", "braze"):
        assert set(row["contenders"][name]["compile_stages"]) >= {"export", "import", "iree_compile"}
        assert row["contenders"][name]["runtime"] == "iree"  # the CPU has no launcher
    assert row["contenders"]["eager"]["runtime"] == "torch"


@pytest.mark.slow
def test_bench_here(tmp_path):
    out = tmp_path / "r.json"
    # A process of its own: --threads 1 sets braze's CPU threads, which a process that already
    # ran CPU programs (this test's worker) refuses to change.
    p = subprocess.run([sys.executable, "-m", "braze", "bench", "--workloads", "tiny_chain", "--reps", "3",
                        "--threads", "1", "--json", str(out), "--torch-compile-modes", "default,max-autotune"],
                       capture_output=True, text=True, timeout=900)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-4000:]
    result = json.loads(out.read_text())
    _check_result(result, CPU_CONTENDERS + ("inductor-max",))
    assert result["settings"]["cpu_driver"] == "local-sync"
    assert "IREE's local-sync driver" in p.stdout
    text = bench.table(result)
    assert "| tiny_chain | 256x256 float32 | eager |" in text
    assert "| tiny_chain | 256x256 float32 | inductor-max |" in text
    assert "| speedup over torch eager (faster on) |" in text
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        assert bench.chart(result, tmp_path / "c.png").startswith("no chart")
    else:
        assert bench.main(["chart", str(out), "-o", str(tmp_path / "c.png")]) == 0
        assert (tmp_path / "c.png").read_bytes()[:4] == b"\x89PNG"


def test_bench_threads_in_a_process_that_ran_cpu_programs_is_refused(capsys):
    import torch

    import braze

    braze.compile(torch.nn.ReLU(), torch.randn(4), cache=False)(torch.randn(4))  # the CPU device opens
    from braze.runtime.cpu import _CPU_IN_USE

    other = 2 if _CPU_IN_USE[0] != 2 else 3
    assert bench.main(["--workloads", "tiny_chain", "--reps", "3", "--threads", str(other)]) == 1
    assert f"braze.set_cpu_threads({other}): this process already runs CPU programs" in capsys.readouterr().err


def test_build_then_run(tmp_path):
    art = tmp_path / "art"
    assert bench.main(["build", str(art), "--device", "cpu", "--workloads", "tiny_chain"]) == 0
    manifest = json.loads((art / "group-1" / "manifest.json").read_text())
    (entry,) = manifest["workloads"]
    assert entry["workload"] == "tiny_chain" and set(entry["artifacts"]) == {"iree", "braze"}
    assert (art / "group-1" / entry["artifacts"]["iree"]["file"]).exists()
    assert bench.main(["run", str(art / "group-1"), "--reps", "3"]) == 0
    result = json.loads((art / "group-1" / "results-cpu.json").read_text())
    _check_result(result)
    assert result["settings"]["mode"] == "artifacts"
    merged = bench.merge([result, result])
    assert len(merged["workloads"]) == 1


def test_plan_groups_caps_size():
    def entry(name, a, b):
        return {"workload": name, "artifacts": {"iree": {"bytes": a}, "braze": {"bytes": b}}}

    groups = bench.plan_groups([entry("big", 30, 30), entry("mid", 10, 10), entry("small", 1, 1)], 40)
    sizes = [sum(a["bytes"] for e in g for a in e["artifacts"].values()) for g in groups]
    assert max(sizes) <= 40
    placed = sorted((e["workload"], n) for g in groups for e in g for n in e["artifacts"])
    assert placed == sorted((w, n) for w in ("big", "mid", "small") for n in ("iree", "braze"))


def test_workload_table():
    assert set(QUICK) <= set(CPU_DEFAULT) and "tiny_chain" not in GPU_DEFAULT
    assert {"resnet18", "bert_layer", "transformer_encoder", "gelu_mlp_bf16"} <= set(GPU_DEFAULT)
    model, args = WORKLOADS["tiny_chain"].build("cpu")
    model2, args2 = WORKLOADS["tiny_chain"].build("cpu")
    assert checksum(args) == checksum(args2)  # seeded: the GPU host rebuilds the same inputs
    _, bf = WORKLOADS["gelu_mlp_bf16"].build("cpu")
    assert str(bf[0].dtype) == "torch.bfloat16"


def test_torch_compile_modes():
    assert bench.default_modes("cuda") == ["default", "reduce-overhead", "max-autotune"]
    assert bench.default_modes("cpu") == ["default"]
    assert bench._modes("reduce-overhead", "cpu") == ["reduce-overhead"]
    with pytest.raises(bench.UsageError, match="unknown mode.*fastest"):
        bench._modes("default,fastest", "cuda")


def _row(name, **medians):
    return {"name": name, "contenders": {
        n: {"status": "ok", "latency_ms": {"median": m}} for n, m in medians.items()}}


def test_summary_geomeans_by_hand():
    result = {"workloads": [_row("a", eager=2.0, inductor=1.0, braze=4.0),
                            _row("b", eager=8.0, inductor=4.0, braze=1.0),
                            _row("c", eager=1.0, braze=1.0)]}  # no inductor: left out of its means
    header, _, vs_eager, vs_braze = bench.summary(result)
    assert header == "| geomean over workloads | torch eager | torch.compile | braze |"
    # braze over eager: sqrt(0.5 * 8) * 1 -> (0.5 * 8 * 1) ** (1/3) = 1.587; inductor: 2.0 on a and b
    assert vs_eager == "| speedup over torch eager (faster on) | 1.00x (0/3) | 2.00x (2/2) | 1.59x (1/3) |"
    # braze over eager: 1.59 as above; over inductor: 1/4 on a, 4 on b -> 1.00
    assert vs_braze == ("| braze's speedup over it (braze faster on) | 1.59x (1/3) | 1.00x (1/2) | "
                        "1.00x (0/3) |")
