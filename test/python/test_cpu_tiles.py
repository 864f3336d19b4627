"""braze's tiles for IREE's float32 mmt4d dispatches on AVX-512 CPUs (braze.compiler.cpu_tiles,
fusion-cpu-codegen's mmt4d-tiles): the configuration IREE compiles, results against eager in
float64 on ragged sizes, and the choice in the report."""

import re

import pytest
import torch
import torch.nn.functional as F

import braze
from braze.compiler import cpu_tiles
from braze.targets import host_cpu_fields

AVX512 = "avx512f" in host_cpu_fields().get("flags", "").split()
needs_avx512 = pytest.mark.skipif(not AVX512, reason="16x16x1 mmt4d tiles are IREE's choice on AVX-512 CPUs only")


class Mlp(torch.nn.Module):
    """Two Linears on ragged sizes: 100 rows (7 row tiles, the last ragged), 333 -> 1024 -> 77
    features (64 and 5 weight panels of 16)."""

    def __init__(self):
        super().__init__()
        self.up = torch.nn.Linear(333, 1024)
        self.down = torch.nn.Linear(1024, 77)

    def forward(self, x):
        return self.down(F.gelu(self.up(x)))


class WideMlp(Mlp):
    """As Mlp, 333 -> 768 -> 77: the 768 features are 48 weight panels, a multiple of three."""

    def __init__(self):
        super().__init__()
        self.up = torch.nn.Linear(333, 768)
        self.down = torch.nn.Linear(768, 77)


def _model(cls=Mlp):
    torch.manual_seed(0)
    return cls().eval(), torch.randn(100, 333)


def _compile(mode, cls=Mlp):
    model, x = _model(cls)
    return model, x, braze.compile(model, x, device="cpu", pipeline=f"fusion-cpu-pipeline{{mmt4d-tiles={mode}}}",
                                   cache=False)


@needs_avx512
@pytest.mark.parametrize("cls", [Mlp, WideMlp])
@pytest.mark.parametrize("mode", ["microkernel", "loops", "iree", "auto"])
def test_each_mode_matches_float64(mode, cls):
    model, x, compiled = _compile(mode, cls)
    with torch.no_grad():
        want = model.double()(x.double())
    got = compiled(x).double()
    err = float((got - want).abs().max() / want.abs().max())
    assert err < 1e-5, err  # a NaN fails too
    line = compiled.report.cpu_codegen
    if mode == "iree":
        assert "mmt4d tiles" not in line
    elif mode == "auto":
        assert "float32 mmt4d tiles (auto): " in line, line  # 2 dispatches, or none for an unlisted CPU
    else:
        assert f"float32 mmt4d tiles ({mode}): 2 dispatches for " in line, line


def _aliases(text: str) -> dict[str, str]:
    return dict(re.findall(r"^(#\w+) = (.*)$", text, re.M))


def _configured(mode, monkeypatch, cls=Mlp):
    """(IREE's module text as braze configured it, each mmt4d's lowering_config up to its vector
    reduction, sorted, the compiled module) for the mode."""
    seen = []
    real = cpu_tiles.configure_mmt4d

    def configure(module_op, how):
        lines = real(module_op, how)
        seen.append(module_op.get_asm(large_elements_limit=16))
        return lines

    monkeypatch.setattr(cpu_tiles, "configure_mmt4d", configure)
    _, _, compiled = _compile(mode, cls)
    (text,) = seen
    aliases = _aliases(text)
    configs = []
    for line in text.splitlines():
        if "linalg.mmt4d" in line:
            ref = re.search(r"lowering_config = (#[\w.]+(?:<.*?>)?)[,}]", line).group(1)
            configs.append(aliases.get(ref, ref).split("vector_reduction")[0])
    return text, sorted(configs), compiled


@needs_avx512
def test_microkernel_workgroups_cover_the_rows(monkeypatch):
    text, configs, compiled = _configured("microkernel", monkeypatch)
    # 100 rows: 7 row tiles in one workgroup, one 16-wide weight panel each; the narrow 1024 -> 77
    # product IREE transposes (the weight's 5 panels are its rows): all 5 in one workgroup
    assert configs == ["#iree_cpu.lowering_config<distribution = [5, 1, 0, 0, 0, 0], vector_common_parallel = [1, 1, 0, 16, 16, 0], ",
                       "#iree_cpu.lowering_config<distribution = [7, 1, 0, 0, 0, 0], vector_common_parallel = [1, 1, 0, 16, 16, 0], "], configs
    assert 'ukernels = "none"' not in text
    assert "(microkernel)" in compiled.report.cpu_codegen


@needs_avx512
def test_loops_use_two_panel_register_tiles_without_the_microkernel(monkeypatch):
    text, configs, _ = _configured("loops", monkeypatch)
    # 64 weight panels: two per workgroup of 4 row tiles, an 8x32 register tile; the transposed
    # 1024 -> 77 has 7 activation panels (no even divisor): one per workgroup, a 16x16 register tile
    assert configs == ["#iree_cpu.lowering_config<distribution = [4, 2, 0, 0, 0, 0], vector_common_parallel = [1, 2, 0, 8, 16, 0], ",
                       "#iree_cpu.lowering_config<distribution = [5, 1, 0, 0, 0, 0], vector_common_parallel = [1, 1, 0, 16, 16, 0], "], configs
    # the microkernel is turned off on each configured function, not on its variant (a variant
    # with another target is linked as an alternative: its exports would not be found at run time)
    targets = re.findall(r"hal.executable.target = (#[\w]+)", text)
    assert len(targets) == 2, targets
    aliases = _aliases(text)
    assert all('ukernels = "none"' in aliases.get(t, t) for t in targets)


@needs_avx512
def test_loops_use_8x48_register_tiles_where_panels_come_in_threes(monkeypatch):
    text, configs, compiled = _configured("loops", monkeypatch, WideMlp)
    # 768 features: 48 weight panels, three per workgroup of 4 row tiles (64 rows), an 8x48
    # register tile (24 accumulators: no spill); the transposed 768 -> 77 keeps 16x16 (5 row tiles: 80 rows)
    assert configs == ["#iree_cpu.lowering_config<distribution = [4, 3, 0, 0, 0, 0], vector_common_parallel = [1, 3, 0, 8, 16, 0], ",
                       "#iree_cpu.lowering_config<distribution = [5, 1, 0, 0, 0, 0], vector_common_parallel = [1, 1, 0, 16, 16, 0], "], configs
    line = compiled.report.cpu_codegen
    assert "2 dispatches for " in line and "workgroups of up to 80 rows (loops, 16x16 registers; loops, 8x48 registers)" in line, line


def test_auto_follows_the_cpu():
    assert cpu_tiles.tiles_for("auto", "emeraldrapids") == cpu_tiles.LOOPS
    assert cpu_tiles.tiles_for("auto", "znver4") == cpu_tiles.MICROKERNEL
    assert cpu_tiles.tiles_for("auto", "skylake") is None  # AVX2: 8x8 tiles, not measured
    assert cpu_tiles.tiles_for("iree", "znver4") is None
    assert cpu_tiles.tiles_for("microkernel", "skylake") == cpu_tiles.MICROKERNEL


def _hottest_block(asm: str) -> str:
    """The basic block of the dumped assembly with the most FMAs: an mmt4d's inner loop."""
    blocks = [re.split(r"^\s+j\w+\s", b, maxsplit=1, flags=re.M)[0]  # up to its branch: the stores after it are not the loop
              for b in re.split(r"^\.LBB\w+:", asm, flags=re.M)]
    return max(blocks, key=lambda b: b.count("vfmadd"))


@needs_avx512
@pytest.mark.parametrize("tiles", ["LOOPS_8X48", "LOOPS_16X32"])
def test_the_8x48_inner_loop_keeps_its_accumulators_in_registers(tiles, tmp_path, monkeypatch):
    # why 8x48 (bench/notes/57): its 24 accumulators, 3 weight panels and a broadcast fit the 32
    # zmm registers; 16x32's 32 accumulators do not, and LLVM spills to the stack in the loop
    monkeypatch.setattr(cpu_tiles, "tiles_for_cpu", lambda cpu: getattr(cpu_tiles, tiles))
    torch.manual_seed(0)
    model = torch.nn.Linear(768, 768, bias=False).eval()
    braze.compile(model, torch.randn(128, 768), device="cpu", cache=False,
                  iree_flags=[f"--iree-hal-dump-executable-files-to={tmp_path}"])
    (asm,) = [p.read_text() for p in tmp_path.glob("*.s")]
    loop = _hottest_block(asm)
    assert loop.count("vfmadd231ps") == {"LOOPS_8X48": 24, "LOOPS_16X32": 32}[tiles], loop
    spills = re.findall(r"\(%rsp\)", loop)
    if tiles == "LOOPS_8X48":
        assert not spills, loop
    else:  # the canary: if IREE or LLVM ever keep 16x32 in registers, §48's choice needs measuring again
        assert spills, loop
