"""llvm-cpu: the tiles of IREE's float32 mmt4d dispatches, chosen by the target CPU
(bench/NOTES.md §48, issue 41).

IREE 3.13 packs a float32 matmul's operands into 16x1 panels on AVX-512 and runs its mmt4d
microkernel on each 16x16 output tile over the whole K; a workgroup gets 2x3 such tiles
(`distribution = [2, 3]`). With K = 768 one 16-wide panel of the packed weight is 48 KiB: each
workgroup reads its three weight panels once per pair of row tiles, so a 128-row matmul reads
the whole weight 4 times from the last-level cache. On an Intel Xeon (Sapphire/Emerald Rapids:
48 KiB L1, 2 MiB L2 per core, a slow mesh L3) that costs a quarter of the time: the 128x3072x768
dispatch ran 3.72 ms (oneDNN 3.1). The microkernel also keeps one 16x16 accumulator tile in
registers, so every FMA waits on a broadcast from the LHS panel.

`configure_mmt4d(module_op, mode)` gives each such dispatch workgroups that cover up to 128 rows
(each weight panel read once from memory, the rows' panels kept in L2) and, by the target CPU
(mode auto), measured side by side on both hosts (bench/NOTES.md §48):
  * AMD Zen 4/5: IREE's microkernel, workgroups of 128 rows x 16 columns (MICROKERNEL);
  * Intel AVX-512: IREE's vectorised loops (LOOPS). Since §57: 8-row register tiles, 8x48 (three
    weight panels per broadcast) or 8x32, in workgroups of 64 rows; 16-row tiles in workgroups
    of 128 rows where the panel count is odd. A 16x32 tile holds 32 accumulators in the 32 zmm
    registers, so LLVM spills and shuffles registers in its inner loop; 8x48 holds 24 and does
    not (the test reads the assembly). On the 2-core Emerald Rapids VM, two threads:
    TransformerEncoderLayer 0.55-0.87x -> 0.67-1.04x eager, BERT 0.62-0.85x -> 0.77-1.04x
    (interleaved runs). Before §57, 16x32 everywhere; on a 16-core Xeon, one thread:
    TransformerEncoderLayer 18.8 -> 17.1 ms, BERT 20.4 -> 17.1, ResNet-18 16.4 -> 14.0; 16
    threads: 2.78 -> 2.45, 2.58 -> 2.42, 4.25 -> 3.45. Workgroups sized to half the L2 were 1-2%
    faster still at one thread but 1.5-2.6x slower at 16 (too few workgroups for the threads).
Other CPUs keep IREE's tiles. `fusion-cpu-pipeline{mmt4d-tiles=iree|microkernel|loops}` overrides.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from braze.compiler._iree_compiler import iree_ir
from braze.irutil import all_ops

INTEL_AVX512 = ("sapphirerapids", "emeraldrapids", "graniterapids", "graniterapids-d", "diamondrapids",
                "icelake-server", "cascadelake", "cooperlake", "skylake-avx512", "tigerlake", "icelake-client",
                "rocketlake")
"""LLVM's names for Intel cores with AVX-512 (a 1-2 MiB private L2 behind a mesh L3 on the servers)."""

AMD_AVX512 = ("znver4", "znver5")
"""LLVM's names for AMD cores with AVX-512 (Zen 4, Zen 5: 1 MiB L2 per core)."""

@dataclass(frozen=True)
class Mmt4dTiles:
    """How braze configures an f32 16x16x1 mmt4d dispatch."""
    codegen: bool = True
    """IREE's vectorised loops (True) or its mmt4d microkernel (False)."""
    vector_n: int = 2
    """Weight panels per register tile, at most (codegen only): vector_m x (16 * vector_n)
    accumulators, each panel's 16 columns one 512-bit register."""
    vector_m: int = 16
    """Rows of the register tile (codegen only): 8 or 16, of the 16 an activation panel holds."""
    max_m1: int = 8
    """Row tiles (16 rows each) per workgroup, at most."""
    l2_bytes: int = 1 << 20
    """Bytes of weight panels a workgroup may read (its share of L2)."""
    max_n1: int = 1 << 30
    """Weight panels (16 columns each) per workgroup, at most."""
    n1_multiple: int = 1
    """These tiles serve only dispatches whose weight panels are a multiple of this many (in a
    tuple of choices, the first that serves a dispatch configures it)."""


MICROKERNEL = Mmt4dTiles(codegen=False, max_n1=1)
"""Workgroups of 128 rows x 16 columns, IREE's microkernel: AMD Zen 4, one thread, 18.9 -> 17.7 ms
for the TransformerEncoderLayer, 19.3 -> 17.7 for the BERT layer; two threads 10.8 -> 9.5 and
10.9 -> 9.7 (§48)."""

LOOPS_16X32 = Mmt4dTiles(codegen=True, vector_n=2, max_n1=2)
"""Workgroups of 128 rows x 32 columns, IREE's vectorised loops with a 16x32 register tile: Intel
Xeon (emeraldrapids), one thread, TransformerEncoderLayer 18.8 -> 17.1 ms, BERT 20.4 -> 17.1; 16
threads 2.78 -> 2.45, 2.58 -> 2.42 (§48). Its 32 accumulators leave no register for the weight
panels and the broadcast: LLVM spills two and moves ~60 registers a step (§57). Since §57 it
serves only odd panel counts, as 16x16 (one panel wide)."""

LOOPS_8X48 = Mmt4dTiles(codegen=True, vector_m=8, vector_n=3, max_m1=4, max_n1=3, n1_multiple=3)
"""Workgroups of 64 rows x 48 columns, an 8x48 register tile: 24 accumulators, 3 panel registers
and a broadcast, no spill. On the 2-core Emerald Rapids VM (§57), one run: the
TransformerEncoderLayer 0.63 -> 0.84x eager at one thread, BERT 0.66 -> 0.88x; two threads
0.87 -> 1.04x and 0.75 -> 1.04x."""

LOOPS_8X32 = Mmt4dTiles(codegen=True, vector_m=8, vector_n=2, max_m1=4, max_n1=2, n1_multiple=2)
"""Workgroups of 64 rows x 32 columns, an 8x32 register tile (16 accumulators): on Linear shapes
whose panels come in twos, 1.03-1.35x the 16x32 tile at one thread (§57)."""

LOOPS = (LOOPS_8X48, LOOPS_8X32, LOOPS_16X32)
"""Intel AVX-512: 8-row register tiles, 48 columns wide where the weight panels come in threes
(widths such as 768, 2304, 3072) and 32 where they come in twos; an odd panel count keeps the
16-row tile (one panel wide: 16x16). ResNet-18 ran as fast with 8x32 as with 16x32 on its
convolutions' products once data tiling took IREE's global-optimization path (§57)."""


Choice = Mmt4dTiles | tuple[Mmt4dTiles, ...]


def tiles_for_cpu(cpu: str) -> Choice | None:
    """braze's mmt4d tiles for an LLVM CPU name (mode auto), or None to keep IREE's."""
    if cpu in AMD_AVX512:
        return MICROKERNEL
    if cpu in INTEL_AVX512:
        return LOOPS
    return None


def tiles_for(mode: str, cpu: str) -> Choice | None:
    """The tiles for fusion-cpu-codegen's mmt4d-tiles mode on an LLVM CPU, or None for IREE's."""
    if mode == "auto":
        return tiles_for_cpu(cpu)
    return {"iree": None, "microkernel": MICROKERNEL, "loops": LOOPS}[mode]


def _cpu_of(target) -> str | None:
    m = re.search(r'\bcpu = "([^"]*)"', str(target))
    return m.group(1) if m else None


def configure_mmt4d(module_op, mode: str = "auto") -> list[str]:
    """At IREE's executable-configurations phase: each llvm-cpu float32 linalg.mmt4d with 16x16x1
    inner tiles gets the tiles `mode` chooses for its variant's CPU (tiles_for). Returns one line
    per dispatch changed (CompiledVmfb.workarounds), each naming the CPU it was chosen for."""
    changed = []
    for variant in all_ops(module_op, "hal.executable.variant"):
        target = variant.attributes["target"]
        text = str(target)
        if '"llvm-cpu"' not in text:
            continue
        cpu = _cpu_of(target) or ""
        choice = tiles_for(mode, cpu)
        if choice is None:
            continue
        choices = choice if isinstance(choice, tuple) else (choice,)
        # IREE looks a function's target up on the function before its variant: the variant's
        # own target must stay, for a variant with another target would be linked as an
        # alternative to the others, not beside them (its exports not found at run time)
        no_microkernel = iree_ir.Attribute.parse(text.replace('ukernels = "all"', 'ukernels = "none"')) \
            if 'ukernels = "all"' in text else None
        for func in all_ops(variant, "func.func"):
            for op in all_ops(func, "linalg.mmt4d"):
                lhs, rhs, _ = (iree_ir.RankedTensorType(v.type) for v in list(op.operands)[:3])
                if {str(t.element_type) for t in (lhs, rhs)} != {"f32"} or list(lhs.shape[2:]) != [16, 1] \
                        or list(rhs.shape[2:]) != [16, 1]:
                    continue
                m1, k1, n1 = lhs.shape[0], lhs.shape[1], rhs.shape[0]
                tiles = next((t for t in choices if n1 % t.n1_multiple == 0), None)
                if tiles is None:
                    continue
                panel = 16 * k1 * 4
                dist_m = min(m1, tiles.max_m1)
                limit = max(1, min(n1, tiles.max_n1, tiles.l2_bytes // panel))
                dist_n = max(d for d in range(1, limit + 1) if n1 % d == 0)
                vec_n = max(d for d in range(1, tiles.vector_n + 1) if dist_n % d == 0) if tiles.codegen else 1
                vec_m = tiles.vector_m if tiles.codegen else 16
                op.attributes["lowering_config"] = iree_ir.Attribute.parse(
                    f"#iree_cpu.lowering_config<distribution = [{dist_m}, {dist_n}, 0, 0, 0, 0], "
                    f"vector_common_parallel = [1, {vec_n}, 0, {vec_m}, 16, 0], vector_reduction = [0, 0, 1, 0, 0, 1]>")
                name = iree_ir.StringAttr(func.attributes["sym_name"]).value
                how = f"loops, {vec_m}x{16 * vec_n} registers" if tiles.codegen else "microkernel"
                changed.append(f"{cpu}: {name}: mmt4d {16 * m1}x{16 * n1}x{k1} in workgroups of "
                               f"{16 * dist_m}x{16 * dist_n} ({how})")
                if no_microkernel is not None and tiles.codegen:
                    func.attributes["hal.executable.target"] = no_microkernel
    return changed


def summary(lines: list[str]) -> str:
    """The report's words for configure_mmt4d's lines: the CPU, how, and how many dispatches."""
    if not lines:
        return "no float32 16x16x1 mmt4d dispatch, or IREE's own tiles for this CPU"
    cpu = lines[0].split(":", 1)[0]
    hows = sorted({line.rsplit("(", 1)[-1].rstrip(")") for line in lines})
    rows = max((int(m.group(1)) for line in lines if (m := re.search(r"in workgroups of (\d+)x", line))), default=0)
    up_to = f", workgroups of up to {rows} rows" if rows else ""
    return f"{len(lines)} dispatches for {cpu}{up_to} ({'; '.join(hows)})"
