"""The few facts the tools need from a model's config.json, across architectures."""
from __future__ import annotations

from typing import Optional

_EXPERT_COUNT_KEYS = ("n_routed_experts", "num_experts", "num_local_experts")


def text_config(cfg: dict) -> dict:
    """Multimodal configs nest the language model under ``text_config``."""
    return cfg.get("text_config") or cfg


def routed_expert_count(cfg: dict) -> Optional[int]:
    tc = text_config(cfg)
    for key in _EXPERT_COUNT_KEYS:
        if isinstance(tc.get(key), int):
            return tc[key]
    return None
