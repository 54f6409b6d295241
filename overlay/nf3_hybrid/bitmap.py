"""The checkpoint's ``hybrid_bit_map`` → a validated per-layer tier plan.

A hybrid checkpoint says, for each MoE decoder layer, how many bits each routed expert
has: 4 = kept tier (NVFP4, or MXFP4 with ``kept_format``), 3 = NF3 tier. Everything that
stores or runs experts works from a ``LayerPlan``: which global expert ids sit in which
tier and at which local index, so each tier can be stored compactly.

No vLLM import (usable by the checkpoint maker anywhere). Every malformed input raises ``HybridConfigError``
naming the layer and what is wrong.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Dict, Mapping, Optional, Tuple

from .formats.nf3 import CODEBOOK, validate_codebook

KEPT = 0  # tier index of the 4-bit (NVFP4/MXFP4) experts: "tier A"
NF3 = 1  # tier index of the 3-bit NF3 experts: "tier B"
TIER_NAMES = {KEPT: "kept", NF3: "nf3"}
BITS_TO_TIER = {4: KEPT, 3: NF3}

KEPT_NVFP4 = "nvfp4"
KEPT_MXFP4 = "mxfp4_e8m0k32"
KEPT_FORMATS = (KEPT_NVFP4, KEPT_MXFP4)

BIT_MAP_KEY = "hybrid_bit_map"
KEPT_FORMAT_KEY = "kept_format"
CODEBOOK_KEY = "nf3_codebook"
MXFP8_MODULES_KEY = "hybrid_mxfp8_modules"
HYBRID_KEYS = (BIT_MAP_KEY, KEPT_FORMAT_KEY, CODEBOOK_KEY)

_LAYER_RE = re.compile(r"(?:^|\.)layers\.(\d+)(?:\.|$)")


class HybridConfigError(ValueError):
    """A hybrid quantization config that cannot be served as written."""


@dataclass(frozen=True)
class LayerPlan:
    """Tier assignment of one MoE layer's routed experts."""

    layer: int
    bits: Tuple[int, ...]
    kept: Tuple[int, ...] = field(init=False)
    nf3: Tuple[int, ...] = field(init=False)
    # remap[e] = (tier, local index of e inside that tier)
    remap: Tuple[Tuple[int, int], ...] = field(init=False)

    def __post_init__(self):
        kept = tuple(e for e, b in enumerate(self.bits) if b == 4)
        nf3 = tuple(e for e, b in enumerate(self.bits) if b == 3)
        remap = [None] * len(self.bits)
        for i, e in enumerate(kept):
            remap[e] = (KEPT, i)
        for i, e in enumerate(nf3):
            remap[e] = (NF3, i)
        object.__setattr__(self, "kept", kept)
        object.__setattr__(self, "nf3", nf3)
        object.__setattr__(self, "remap", tuple(remap))

    @property
    def num_experts(self) -> int:
        return len(self.bits)

    def count(self, tier: int) -> int:
        return len(self.kept) if tier == KEPT else len(self.nf3)

    def experts(self, tier: int) -> Tuple[int, ...]:
        return self.kept if tier == KEPT else self.nf3

    def local_map(self, tier: int) -> list:
        """global expert id → local index in ``tier``, −1 where the expert is elsewhere."""
        return [li if t == tier else -1 for t, li in self.remap]

    @classmethod
    def all_kept(cls, layer: int, num_experts: int) -> "LayerPlan":
        return cls(layer, (4,) * num_experts)


@dataclass(frozen=True)
class HybridSpec:
    """Everything a hybrid checkpoint's quantization config adds to plain NVFP4."""

    bit_map: Mapping[int, LayerPlan]
    kept_format: str = KEPT_NVFP4
    nf3_codebook: Tuple[float, ...] = CODEBOOK
    # non-expert linear modules stored as MXFP8 rev-3 (checkpoint names, without .weight)
    mxfp8_modules: Tuple[str, ...] = ()

    def plan_for(self, layer: int, num_experts: int) -> LayerPlan:
        """The layer's plan; layers absent from the map (e.g. MTP) are all kept.

        Absent layers are NVFP4 even when ``kept_format`` is MXFP4: the maker writes
        them as uniform NVFP4 and so does the checkpoint this format comes from.
        """
        plan = self.bit_map.get(layer)
        if plan is None:
            return LayerPlan.all_kept(layer, num_experts)
        if plan.num_experts != num_experts:
            raise HybridConfigError(
                f"hybrid_bit_map layer {layer}: has {plan.num_experts} entries but the "
                f"model's MoE layer has {num_experts} routed experts"
            )
        return plan

    def kept_format_for(self, layer: int) -> str:
        return self.kept_format if layer in self.bit_map else KEPT_NVFP4

    def to_config(self) -> dict:
        """The JSON form the checkpoint maker writes into ``quantization_config``."""
        out = {BIT_MAP_KEY: {str(k): list(p.bits) for k, p in sorted(self.bit_map.items())}}
        if self.kept_format != KEPT_NVFP4:
            out[KEPT_FORMAT_KEY] = self.kept_format
        if tuple(self.nf3_codebook) != CODEBOOK:
            out[CODEBOOK_KEY] = list(self.nf3_codebook)
        return out


def layer_index_from_name(name: str) -> Optional[int]:
    """``model.layers.12.mlp.experts`` → 12; None if the name has no ``layers.N``."""
    m = _LAYER_RE.search(str(name))
    return int(m.group(1)) if m else None


def hybrid_section(quant_config: Optional[Mapping]) -> Optional[Mapping]:
    """The mapping that carries the hybrid keys: the quantization config itself, or its
    nested ``"quantization"`` section (the ``hf_quant_config.json`` layout). None when
    neither has a bit map."""
    if not isinstance(quant_config, Mapping):
        return None
    if BIT_MAP_KEY in quant_config:
        return quant_config
    nested = quant_config.get("quantization")
    if isinstance(nested, Mapping) and BIT_MAP_KEY in nested:
        return nested
    return None


def parse_bit_map(raw, num_experts: Optional[int] = None) -> Dict[int, LayerPlan]:
    if not isinstance(raw, Mapping):
        raise HybridConfigError(
            f"hybrid_bit_map must map layer indices to lists of bits, got {type(raw).__name__}"
        )
    if not raw:
        raise HybridConfigError("hybrid_bit_map is empty: it must list at least one layer")
    plans: Dict[int, LayerPlan] = {}
    for key, bits in raw.items():
        skey = str(key)
        if not skey.isdigit():
            raise HybridConfigError(
                f"hybrid_bit_map key {key!r} is not a decoder layer index (expected e.g. \"3\")"
            )
        layer = int(skey)
        if layer in plans:
            raise HybridConfigError(f"hybrid_bit_map layer {layer} is listed twice")
        if isinstance(bits, (str, bytes)) or not hasattr(bits, "__iter__"):
            raise HybridConfigError(
                f"hybrid_bit_map layer {layer}: expected a list of bits per expert, got {bits!r}"
            )
        bits = list(bits)
        if not bits:
            raise HybridConfigError(f"hybrid_bit_map layer {layer}: empty list of experts")
        for e, b in enumerate(bits):
            if isinstance(b, bool) or not isinstance(b, int) or b not in BITS_TO_TIER:
                raise HybridConfigError(
                    f"hybrid_bit_map layer {layer} expert {e}: bits must be 4 (kept) or "
                    f"3 (NF3), got {b!r}"
                )
        if num_experts is not None and len(bits) != num_experts:
            raise HybridConfigError(
                f"hybrid_bit_map layer {layer}: lists {len(bits)} experts but the model has "
                f"{num_experts} routed experts per layer"
            )
        plans[layer] = LayerPlan(layer, tuple(bits))
    counts = {p.num_experts for p in plans.values()}
    if len(counts) > 1:
        detail = ", ".join(f"layer {k}: {p.num_experts}" for k, p in sorted(plans.items()))
        raise HybridConfigError(f"hybrid_bit_map layers disagree on the expert count ({detail})")
    return plans


def parse_hybrid_spec(quant_config: Optional[Mapping], num_experts: Optional[int] = None) -> Optional[HybridSpec]:
    """Reads the hybrid keys from a quantization config; None for a non-hybrid config."""
    section = hybrid_section(quant_config)
    if section is None:
        return None
    plans = parse_bit_map(section[BIT_MAP_KEY], num_experts)
    kept_format = section.get(KEPT_FORMAT_KEY) or KEPT_NVFP4
    if kept_format not in KEPT_FORMATS:
        raise HybridConfigError(
            f"kept_format {kept_format!r} is not supported (use one of {', '.join(KEPT_FORMATS)})"
        )
    try:
        codebook = validate_codebook(section.get(CODEBOOK_KEY))
    except ValueError as exc:
        raise HybridConfigError(str(exc)) from exc
    mx = section.get(MXFP8_MODULES_KEY) or []
    if not isinstance(mx, (list, tuple)) or not all(isinstance(m, str) and m for m in mx):
        raise HybridConfigError(f"{MXFP8_MODULES_KEY} must be a list of module names, got {mx!r}")
    return HybridSpec(plans, kept_format, codebook, tuple(mx))
