"""Which experts of a layer stay in the 4-bit kept tier.

Two scores, both "how much does this expert contribute to the layer's output":
- ``weights`` (no data needed): router-row norm × the expert's gain
  ‖W_down‖_F · sqrt(‖W_gate‖_F ‖W_up‖_F). The router row norm sets how sharply (and
  how often) the expert is picked; the gain how large its output is when picked.
- ``calib`` (token ids given): a float32 forward of the bf16 source model over the
  calibration tokens; an expert scores Σ over its routed tokens of
  routing weight × ‖expert(x)‖, i.e. routing frequency × output norm.
"""
from __future__ import annotations

import json
import logging
import math
import re
from pathlib import Path
from typing import Dict, List, Sequence

import torch

logger = logging.getLogger(__name__)

_EXPERTS_MODULE_RE = re.compile(r"(?:^|\.)layers\.(\d+)\.mlp\.experts$")


def weight_score(router_row_norm: float, gate_norm: float, up_norm: float, down_norm: float) -> float:
    return float(router_row_norm) * float(down_norm) * math.sqrt(float(gate_norm) * float(up_norm))


def choose_kept(scores: Sequence[float], n_kept: int) -> List[int]:
    """The ``n_kept`` highest-scoring experts (ties → lower id), sorted by id."""
    if not 0 <= n_kept <= len(scores):
        raise ValueError(f"cannot keep {n_kept} of {len(scores)} experts")
    order = sorted(range(len(scores)), key=lambda e: (-float(scores[e]), e))
    return sorted(order[:n_kept])


def load_calib_tokens(path) -> List[List[int]]:
    """Token ids from ``.json`` (a list of ids or of lists) or text (one sequence of
    whitespace-separated ids per line)."""
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"calibration file {p} does not exist")
    text = p.read_text()
    if p.suffix == ".json":
        data = json.loads(text)
        seqs = [data] if data and isinstance(data[0], int) else data
    else:
        seqs = [[int(t) for t in line.split()] for line in text.splitlines() if line.strip()]
    if not seqs or not all(isinstance(s, list) and s and all(isinstance(t, int) for t in s) for s in seqs):
        raise ValueError(f"calibration file {p} holds no token id sequences")
    return seqs


@torch.no_grad()
def calib_scores(src_dir, token_seqs: Sequence[Sequence[int]], device: str = "cpu") -> Dict[int, torch.Tensor]:
    """Per MoE layer, per expert: Σ routing weight × ‖expert output‖ over the calibration
    tokens, from a float32 forward of the source model in HF transformers."""
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(str(src_dir), dtype=torch.float32).to(device).eval()
    scores: Dict[int, torch.Tensor] = {}
    hooks = []

    def make_hook(layer: int, mod):
        if not (hasattr(mod, "gate_up_proj") and hasattr(mod, "down_proj")):
            raise RuntimeError(
                f"calibration needs transformers' fused expert modules (gate_up_proj/down_proj); "
                f"layer {layer} has {type(mod).__name__}"
            )
        act = getattr(mod, "act_fn", torch.nn.functional.silu)

        def hook(module, args, kwargs):
            x = args[0] if args else kwargs["hidden_states"]
            idx = args[1] if len(args) > 1 else kwargs["top_k_index"]
            wts = args[2] if len(args) > 2 else kwargs["top_k_weights"]
            x = x.reshape(-1, x.shape[-1]).float()
            acc = scores.setdefault(layer, torch.zeros(module.gate_up_proj.shape[0], dtype=torch.float64))
            for e in torch.unique(idx).tolist():
                if e < 0 or e >= acc.numel():
                    continue
                tok, slot = torch.where(idx == e)
                g, u = (x[tok] @ module.gate_up_proj[e].float().t()).chunk(2, dim=-1)
                y = (act(g) * u) @ module.down_proj[e].float().t()
                acc[e] += float((wts[tok, slot].float() * y.norm(dim=-1)).sum())

        return hook

    for name, mod in model.named_modules():
        m = _EXPERTS_MODULE_RE.search(name)
        if m:
            hooks.append(mod.register_forward_pre_hook(make_hook(int(m.group(1)), mod), with_kwargs=True))
    if not hooks:
        raise RuntimeError(f"{src_dir}: no MoE expert modules found for calibration")
    try:
        for seq in token_seqs:
            model(torch.tensor([list(seq)], device=device))
    finally:
        for h in hooks:
            h.remove()
    n_tok = sum(len(s) for s in token_seqs)
    logger.info("calibration: %d tokens through %d MoE layers", n_tok, len(scores))
    return scores
