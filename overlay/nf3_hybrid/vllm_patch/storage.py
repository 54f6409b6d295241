"""Compact two-tier expert storage: which parameters a hybrid MoE layer registers.

Parameter names are the ones vLLM's prefix-based expert mapping produces from the
checkpoint names (``…experts.E.gate_proj.weight_packed`` → ``w13_weight_packed``), so
both weight-load paths find them without any mapping patch. ``weight_scale`` is the
one name both tiers share: it lands in the kept tier's ``w13_weight_scale`` or the NF3
tier's ``w13_nf3_scale`` depending on the expert (see ``expert_loader``).

Pure torch; the vLLM-facing code passes sizes in.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Tuple

import torch

from ..backends.base import MXFP4, NF3, NVFP4

E4M3 = torch.float8_e4m3fn
U8 = torch.uint8
F32 = torch.float32

# checkpoint tensor name (per projection) → parameter suffix, per tier format
CKPT_TO_SUFFIX = {
    NVFP4: {"weight": "weight", "weight_scale": "weight_scale", "weight_scale_2": "weight_scale_2",
            "input_scale": "input_scale"},
    MXFP4: {"weight": "weight", "weight_scale": "weight_scale"},
    NF3: {"weight_packed": "weight_packed", "weight_scale": "nf3_scale"},
}
# tensors every expert must deliver (input_scale is accepted but optional: weight-only)
REQUIRED = {
    NVFP4: ("weight", "weight_scale", "weight_scale_2"),
    MXFP4: ("weight", "weight_scale"),
    NF3: ("weight_packed", "weight_scale"),
}
PROJ_OF_SHARD = {"w1": "gate_proj", "w3": "up_proj", "w2": "down_proj"}


@dataclass(frozen=True)
class ParamSpec:
    name: str  # e.g. w13_nf3_scale
    shape: Tuple[int, ...]  # per-rank storage shape, expert dim first
    dtype: torch.dtype
    per_tensor: bool = False  # scalar per expert (and per gate/up half for w13)


def tier_param_specs(fmt: str, n: int, hidden: int, inter: int) -> Dict[str, ParamSpec]:
    """{checkpoint tensor name per projection family ("w13.weight", …): ParamSpec}."""
    H, I = hidden, inter
    if fmt == NVFP4:
        cols = {"weight": (H // 2, I // 2, U8), "weight_scale": (H // 16, I // 16, E4M3)}
    elif fmt == MXFP4:
        cols = {"weight": (H // 2, I // 2, U8), "weight_scale": (H // 32, I // 32, U8)}
    elif fmt == NF3:
        cols = {"weight_packed": (H // 8 * 3, I // 8 * 3, U8), "weight_scale": (H // 32, I // 32, E4M3)}
    else:
        raise ValueError(fmt)
    specs = {}
    for ckpt, (c13, c2, dt) in cols.items():
        suffix = CKPT_TO_SUFFIX[fmt][ckpt]
        specs[f"w13.{ckpt}"] = ParamSpec(f"w13_{suffix}", (n, 2 * I, c13), dt)
        specs[f"w2.{ckpt}"] = ParamSpec(f"w2_{suffix}", (n, H, c2), dt)
    if fmt == NVFP4:
        for ckpt in ("weight_scale_2", "input_scale"):
            specs[f"w13.{ckpt}"] = ParamSpec(f"w13_{ckpt}", (n, 2), F32, per_tensor=True)
            specs[f"w2.{ckpt}"] = ParamSpec(f"w2_{ckpt}", (n,), F32, per_tensor=True)
    return specs


def full_shape(spec: ParamSpec, family: str, tp_size: int) -> Tuple[int, ...]:
    """Shape of one projection's checkpoint tensor (before TP sharding)."""
    if spec.per_tensor:
        return ()
    rows, cols = spec.shape[1], spec.shape[2]
    if family == "w13":
        return (rows // 2 * tp_size, cols)  # one of gate / up, sharded on rows
    return (rows, cols * tp_size)  # down, sharded on columns
