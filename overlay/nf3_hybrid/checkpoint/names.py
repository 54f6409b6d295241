"""Tensor names of MoE checkpoints (GLM-4.5 / Qwen3-MoE / DeepSeek-V3 / GLM-5 naming).

Routed experts are stored per expert:
``<prefix>.layers.L.mlp.experts.E.{gate_proj,up_proj,down_proj}.<tensor>``.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

PROJS = ("gate_proj", "up_proj", "down_proj")
EXPERT_TENSORS = ("weight", "weight_packed", "weight_scale", "weight_scale_2", "input_scale")

_EXPERT_RE = re.compile(
    r"^(?P<moe>(?:.*\.)?layers\.(?P<layer>\d+)\.mlp\.experts)\.(?P<expert>\d+)\."
    r"(?P<proj>gate_proj|up_proj|down_proj)\.(?P<tensor>[a-z_0-9]+)$"
)
_FUSED_EXPERT_RE = re.compile(r"^(?:.*\.)?layers\.(\d+)\.mlp\.experts\.(gate_up_proj|down_proj|gate_proj|up_proj)(?:\.weight)?$")
_LAYER_RE = re.compile(r"(?:^|\.)layers\.(\d+)\.")
_ROUTER_RE = re.compile(r"^(?P<moe>(?:.*\.)?layers\.(?P<layer>\d+)\.mlp)\.gate\.weight$")


@dataclass(frozen=True)
class ExpertName:
    moe_prefix: str  # e.g. model.layers.3.mlp.experts
    layer: int
    expert: int
    proj: str
    tensor: str

    def with_tensor(self, tensor: str) -> str:
        return f"{self.moe_prefix}.{self.expert}.{self.proj}.{tensor}"


def parse_expert(name: str) -> Optional[ExpertName]:
    m = _EXPERT_RE.match(name)
    if not m:
        return None
    return ExpertName(m["moe"], int(m["layer"]), int(m["expert"]), m["proj"], m["tensor"])


def expert_name(moe_prefix: str, expert: int, proj: str, tensor: str) -> str:
    return f"{moe_prefix}.{expert}.{proj}.{tensor}"


def is_fused_expert(name: str) -> bool:
    """Experts stored as one stacked tensor per layer (not supported by the format)."""
    return bool(_FUSED_EXPERT_RE.match(name))


def layer_of(name: str) -> Optional[int]:
    m = _LAYER_RE.search(name)
    return int(m.group(1)) if m else None


def router_layer(name: str) -> Optional[int]:
    m = _ROUTER_RE.match(name)
    return int(m["layer"]) if m else None


def is_linear_weight(name: str, ndim: int) -> bool:
    """Non-expert linear-layer weights that may be stored as fp8 (attention projections,
    shared experts, dense MLPs, MTP's eh_proj). Embeddings, norms, routers and the LM head
    always stay in the source dtype."""
    return ndim == 2 and name.endswith("_proj.weight") and parse_expert(name) is None


def exclude_pattern(linear_weight_name: str) -> str:
    """ModelOpt-style exclude pattern covering the module that owns this weight.

    ``model.layers.7.self_attn.q_proj.weight`` → ``model.layers.*.self_attn*`` (one pattern
    covers vLLM's fused qkv_proj in every layer); a dense MLP keeps its layer index
    (``model.layers.0.mlp*``) so the pattern can never reach a MoE layer's experts.
    """
    module = linear_weight_name[: -len(".weight")]
    parent = module.rsplit(".", 1)[0]
    if re.search(r"(?:^|\.)layers\.\d+$", parent):
        return module  # directly under a decoder layer (MTP's eh_proj): exact name
    if parent.endswith(".mlp"):
        return parent + "*"
    return re.sub(r"\.layers\.\d+\.", ".layers.*.", parent) + "*"


def router_layer_pattern(router_weight_name: str) -> str:
    """``model.layers.3.mlp.gate.weight`` → ``model.layers.*.mlp.gate`` (exact module match)."""
    module = router_weight_name[: -len(".weight")]
    return re.sub(r"\.layers\.\d+\.", ".layers.*.", module)
