"""FP8 non-expert weights in the two dialects hybrid checkpoints use.

rev-2: float8_e4m3fn ``weight`` + bf16 ``weight_scale_fp8`` per output channel
       ``[out]``; value = weight × scale.
rev-3: MXFP8 — float8_e4m3fn ``weight`` + uint8 e8m0 ``weight_scale`` ``[out, in/32]``;
       value = weight × 2**(s−127).
Neither needs packing: the e4m3 tensor is the storage.
"""
from __future__ import annotations

import torch

from .scales import E4M3_MAX, e8m0_from_exponent, e8m0_to_float, grouped, to_e4m3

MX_GROUP = 32
REV2_SCALE_SUFFIX = ".weight_scale_fp8"
REV3_SCALE_SUFFIX = ".weight_scale"


def quantize_rev2(w: torch.Tensor):
    """[out, in] → (weight e4m3, weight_scale_fp8 bf16 [out]).

    The scale is rounded to bf16 *before* dividing, so dequantization with the stored
    scale is the exact inverse of what was encoded.
    """
    if w.dim() != 2:
        raise ValueError(f"fp8 rev-2 quantize expects a 2-D weight, got shape {tuple(w.shape)}")
    amax = w.float().abs().amax(-1)
    scale = (amax / E4M3_MAX).to(torch.bfloat16)
    s = scale.float()
    s = torch.where(s > 0, s, torch.ones_like(s))
    return to_e4m3(w.float() / s.unsqueeze(-1)), scale


def dequantize_rev2(weight: torch.Tensor, scale: torch.Tensor, dtype=torch.bfloat16):
    if weight.dtype != torch.float8_e4m3fn:
        raise TypeError(f"fp8 rev-2 weight must be float8_e4m3fn, got {weight.dtype}")
    if scale.dim() != 1 or scale.shape[0] != weight.shape[0]:
        raise ValueError(
            f"fp8 rev-2: weight_scale_fp8 shape {tuple(scale.shape)} does not match "
            f"{weight.shape[0]} output channels"
        )
    return (weight.float() * scale.float().unsqueeze(-1)).to(dtype)


def quantize_mxfp8(w: torch.Tensor):
    """[out, in] → (weight e4m3, weight_scale uint8 e8m0 [out, in/32])."""
    if w.dim() != 2:
        raise ValueError(f"MXFP8 quantize expects a 2-D weight, got shape {tuple(w.shape)}")
    g = grouped(w.float(), MX_GROUP, "MXFP8 quantize")
    amax = g.abs().amax(-1).clamp(min=torch.finfo(torch.float32).tiny)
    s = e8m0_from_exponent(torch.ceil(torch.log2(amax / E4M3_MAX)))
    q = to_e4m3(g / e8m0_to_float(s).unsqueeze(-1))
    return q.reshape(w.shape), s


def dequantize_mxfp8(weight: torch.Tensor, scale: torch.Tensor, dtype=torch.bfloat16):
    if weight.dtype != torch.float8_e4m3fn:
        raise TypeError(f"MXFP8 weight must be float8_e4m3fn, got {weight.dtype}")
    g = grouped(weight.float(), MX_GROUP, "MXFP8 dequantize")
    if scale.shape != g.shape[:-1]:
        raise ValueError(
            f"MXFP8: weight_scale shape {tuple(scale.shape)} does not match "
            f"{tuple(g.shape[:-1])} groups of {MX_GROUP}"
        )
    return (g * e8m0_to_float(scale).unsqueeze(-1)).reshape(weight.shape).to(dtype)
