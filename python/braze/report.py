"""What the compiler did to a model: stages, op counts, kernels, fusion groups."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

STAGES = ("quick key and probe", "export", "cache", "import", "fusion", "iree_compile")


@dataclass
class Report:
    model: str = ""
    target: str = ""
    fusion: bool = True
    pipeline: str = ""
    stage_seconds: dict[str, float] = field(default_factory=dict)
    linalg_ops_before: int | None = None
    """linalg ops (excluding linalg.yield/index) in the imported module."""
    linalg_ops_after: int | None = None
    """linalg ops after braze's pipeline, the module IREE compiles."""
    dispatch_count: int | None = None
    """Kernels per call: IREE's stream dispatch count from its scheduling statistics."""
    executable_count: int | None = None
    groups: list[dict] = field(default_factory=list)
    """Fusion groups from fusion-report (label, kind, ops, sources, bytes saved)."""
    unfused: list[dict] = field(default_factory=list)
    """Adjacent producer/consumer pairs left unfused, with the reason."""
    fusion_text: str = ""
    kernel_configs: list[dict] = field(default_factory=list)
    """GPU kernel configurations braze chose: op, shape, configuration (fusion-configure-kernels)."""
    kernels: list[dict] = field(default_factory=list)
    """CUDA: contractions (matmuls, convolutions, attention) given a generated kernel
    (fusion-generate-kernels: what each computes, its tile, and why its epilogue ends where it
    does: 'epilogue_end') and those left to IREE's code generator, with why ('reason')."""
    launch_plan: str = ""
    """CUDA: what braze's launcher runs (kernels, fills and copies), or 'none: why'."""
    dispatch_fusion: str = ""
    """CUDA: how IREE formed dispatches: 'aggressive' (reductions with their consumers,
    backend.AGGRESSIVE_FUSION) or 'default' with why (aggressive fusion failed to compile)."""
    iree_workarounds: list[str] = field(default_factory=list)
    """Dispatches braze configured differently from IREE to avoid a known IREE bug, with why
    (braze.compiler.vulkan_workarounds: a SPIR-V contraction feeding a permuting copy)."""
    cpu_codegen: str = ""
    """CPU: how IREE compiles the contractions: 'data tiling (...): why' (packed operands, mmt4d
    microkernels; fusion-cpu-codegen) or IREE's default, with why."""
    decisions: list[str] = field(default_factory=list)
    """The rewrites braze's passes decided to make, in order ('pass: what'); see compile(decision_limit=)."""
    attention: dict[str, int] = field(default_factory=dict)
    """Attention compiled as one op: {'fused': how many, 'rewritten': of those, how many were
    written out as matmul/softmax/matmul}; empty when compile(attention=False)."""
    softmaxes: list[dict] = field(default_factory=list)
    """Every softmax of the model ('source' file:line) and whether it became attention, with the
    form recognised ('form') or why not ('why'); empty when compile(attention=False)."""
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def compile_seconds(self) -> float:
        return sum(self.stage_seconds.values())

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict) -> "Report":
        known = {f for f in cls.__dataclass_fields__}
        return cls(**{k: v for k, v in data.items() if k in known})

    def table(self) -> str:
        rows = [
            ("model", self.model),
            ("target", self.target),
            ("fusion", f"{'on' if self.fusion else 'off'} ({self.pipeline})"),
        ]
        for stage in STAGES:
            if stage in self.stage_seconds:
                rows.append((f"time: {stage}", f"{self.stage_seconds[stage] * 1000:.0f} ms"))
        rows.append(("time: total", f"{self.compile_seconds * 1000:.0f} ms"))
        rows.append(("linalg ops before fusion", _show(self.linalg_ops_before)))
        rows.append(("linalg ops after fusion", _show(self.linalg_ops_after)))
        rows.append(("fusion groups", str(len(self.groups))))
        if self.attention:
            rows.append(("attention as one op", f"{self.attention.get('fused', 0)} "
                         f"({self.attention.get('rewritten', 0)} from matmul/softmax/matmul)"))
        for r in self.softmaxes:
            rows.append((f"softmax at {_short(r['source'])}",
                         f"attention ({r['form']})" if r["attention"] else f"kept: {r['why']}"))
        rows.append(("IREE dispatches (kernels)", _show(self.dispatch_count)))
        if self.dispatch_fusion:
            rows.append(("IREE dispatch fusion", self.dispatch_fusion))
        if self.iree_workarounds:
            rows.append(("IREE workarounds", f"{len(self.iree_workarounds)} dispatches: "
                         + "; ".join(self.iree_workarounds)))
        if self.launch_plan:
            rows.append(("CUDA launch plan", self.launch_plan))
        if self.cpu_codegen:
            rows.append(("CPU contractions", self.cpu_codegen))
        for key, label in (("transient_storage", "transient storage"), ("float64", "float64"),
                           ("pad_fusion", "IREE pad fusion")):
            if isinstance(self.extra.get(key), str):
                rows.append((label, self.extra[key]))
        if self.kernel_configs:
            rows.append(("kernel configurations", str(len(self.kernel_configs))))
        if self.kernels:
            row = [k for k in self.kernels if k["kernel"].startswith(("rows ", "row reduction"))]
            other = [k for k in self.kernels if k not in row]
            made = sum(k["generated"] for k in other)
            text = f"{made} of {len(other)} contractions"
            if row:
                text += f", {sum(k['generated'] for k in row)} row programs ({sum(not k['generated'] for k in row)} " \
                        "reductions left to IREE)"
            rows.append(("generated kernels", text))
        width = max(len(k) for k, _ in rows)
        lines = [f"{k.ljust(width)}  {v}" for k, v in rows]
        text = "\n".join(lines)
        if self.kernel_configs:
            text += "\n\nkernel configurations (fusion-configure-kernels):"
            for k in self.kernel_configs:
                text += f"\n  {k['op']:16s} {k['shape']:36s} {k['config']}"
        if self.kernels:
            text += "\n\ncontractions (fusion-generate-kernels):"
            for k in self.kernels:
                what = f"@{k['function']}: {k['kernel']}" if k["generated"] else f"IREE: {k['kernel']} ({k['reason']})"
                text += f"\n  {what}  {k['location']}"
                if k.get("epilogue_end"):
                    text += f"\n    epilogue ends: {k['epilogue_end']}"
                if k.get("tile_from", "cost model") != "cost model":
                    text += f"\n    tile: {k['tile_from']}"
        if self.fusion_text:
            text += "\n\n" + self.fusion_text.rstrip()
        return text

    def __str__(self) -> str:
        return self.table()


def _short(source: str) -> str:
    """file:line with the file's directories dropped."""
    return source.rsplit("/", 1)[-1]


def _show(value) -> str:
    return "n/a" if value is None else str(value)
