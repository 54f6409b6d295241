"""Reference backend: dequantize each touched expert and compute in float32.

For validation (``HYBRID_KEPT=ref``, ``HYBRID_NF3=ref``), not speed: it loops over the
experts present in the batch on the host, so it cannot run inside a CUDA graph.
Dequantization goes through the pure-torch formats, the same code the float32 HF
reference of a checkpoint uses.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from ..formats import mxfp4, nf3, nvfp4
from .base import MXFP4, NVFP4, TierBackend, TierWeights


def dequant_w13(t: TierWeights, e: int) -> torch.Tensor:
    """float32 [2I, H] of local expert ``e``."""
    if t.fmt == NVFP4:
        half = t.inter
        g = nvfp4.dequantize(t.w13[e, :half], t.w13_scale[e, :half], t.w13_scale_2[e, 0])
        u = nvfp4.dequantize(t.w13[e, half:], t.w13_scale[e, half:], t.w13_scale_2[e, 1])
        return torch.cat([g, u], 0)
    if t.fmt == MXFP4:
        return mxfp4.dequantize(t.w13[e], t.w13_scale[e])
    return nf3.dequantize(t.nf3_packed(t.w13[e]), t.nf3_scales(t.w13_scale[e]), t.codebook)


def dequant_w2(t: TierWeights, e: int) -> torch.Tensor:
    """float32 [H, I] of local expert ``e``."""
    if t.fmt == NVFP4:
        return nvfp4.dequantize(t.w2[e], t.w2_scale[e], t.w2_scale_2[e])
    if t.fmt == MXFP4:
        return mxfp4.dequantize(t.w2[e], t.w2_scale[e])
    return nf3.dequantize(t.nf3_packed(t.w2[e]), t.nf3_scales(t.w2_scale[e]), t.codebook)


class RefBackend(TierBackend):
    name = "ref"
    graph_safe = False

    def run_into(self, out, x, topk_weights, topk_ids, weights_on_input=False):
        t = self.tier
        if t.num_experts == 0:
            return
        local = t.local_map[topk_ids.long()]
        for e in torch.unique(local[local >= 0]).tolist():
            tok, slot = torch.where(local == e)
            w = topk_weights[tok, slot].float().unsqueeze(1)
            xe = x[tok].float()
            if weights_on_input:
                xe = xe * w
            gate, up = (xe @ dequant_w13(t, e).t()).chunk(2, dim=-1)
            y = (F.silu(gate) * up) @ dequant_w2(t, e).t()
            out.index_add_(0, tok, y if weights_on_input else y * w)
