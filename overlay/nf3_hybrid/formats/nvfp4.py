"""NVFP4 exactly as NVIDIA ModelOpt writes it (and vLLM reads it).

``weight`` uint8 ``[rows, cols/2]`` (two E2M1 codes per byte, even column low),
``weight_scale`` float8_e4m3fn ``[rows, cols/16]`` in LINEAR (row-major, not swizzled)
layout, ``weight_scale_2`` fp32 scalar; value = e2m1 × (weight_scale × weight_scale_2).
The product is formed in that order, in float32, so dequantization is bit-identical to
vLLM's ``dequantize_to_dtype(..., swizzle=False)``.

ModelOpt's convention for the global scale is amax / (6 × 448): the largest block scale
then lands at e4m3's maximum. Gate and up projections of one expert must share one
global scale (vLLM fuses them into w13 with a single ``weight_scale_2``), so callers
pass the joint amax through ``global_amax``.
"""
from __future__ import annotations

from typing import Optional

import torch

from . import e2m1
from .scales import E4M3_MAX, grouped, to_e4m3

GROUP = 16


def global_scale_for(amax) -> torch.Tensor:
    """weight_scale_2 for a tensor (or tensors) whose largest magnitude is ``amax``."""
    a = torch.as_tensor(amax, dtype=torch.float32)
    s = a / (e2m1.E2M1_MAX * E4M3_MAX)
    return torch.where(s > 0, s, torch.ones_like(s))


def quantize(w: torch.Tensor, global_amax: Optional[float] = None):
    """[rows, cols] → (weight uint8 [rows, cols/2], weight_scale e4m3 [rows, cols/16],
    weight_scale_2 fp32 scalar tensor)."""
    if w.dim() != 2:
        raise ValueError(f"NVFP4 quantize expects a 2-D weight, got shape {tuple(w.shape)}")
    g = grouped(w.float(), GROUP, "NVFP4 quantize")
    amax = float(g.abs().max()) if global_amax is None else float(global_amax)
    ws2 = global_scale_for(amax)
    block = to_e4m3(g.abs().amax(-1) / e2m1.E2M1_MAX / ws2)
    eff = block.float() * ws2
    safe = torch.where(eff > 0, eff, torch.ones_like(eff))
    codes = e2m1.encode(g / safe.unsqueeze(-1))
    codes = torch.where((eff > 0).unsqueeze(-1), codes, torch.zeros_like(codes))
    return e2m1.pack(codes.reshape(w.shape)), block, ws2.reshape(())


def dequantize(packed: torch.Tensor, scale: torch.Tensor, scale_2, dtype=torch.float32) -> torch.Tensor:
    """[rows, cols/2] + [rows, cols/16] + scalar → [rows, cols]."""
    vals = grouped(e2m1.decode(e2m1.unpack(packed)), GROUP, "NVFP4 dequantize")
    if scale.shape != vals.shape[:-1]:
        raise ValueError(
            f"NVFP4 dequantize: weight_scale shape {tuple(scale.shape)} does not match "
            f"{tuple(vals.shape[:-1])} blocks of {GROUP}"
        )
    s2 = torch.as_tensor(scale_2, dtype=torch.float32, device=packed.device)
    eff = scale.view(torch.float8_e4m3fn).float() * s2
    out = vals * eff.unsqueeze(-1)
    return out.reshape(*packed.shape[:-1], packed.shape[-1] * 2).to(dtype)


def swizzle_scales(scale: torch.Tensor) -> torch.Tensor:
    """Linear block scales ``[..., rows, cols]`` → the 128×4-tile swizzled layout that
    CUTLASS-style FP4 kernels (vLLM's ``swizzle_blockscale``, b12x) read:
    ``[..., rows↑128, cols↑4]``, zero-padded. Inside a tile of 128 rows × 4 columns,
    row 32·d + c, column e is stored at [c, d, e]; tiles are ordered row-tile-major."""
    *lead, rows, cols = scale.shape
    rp, cp = -(-rows // 128) * 128, -(-cols // 4) * 4
    bits = scale.view(torch.uint8) if scale.element_size() == 1 else scale
    padded = bits.new_zeros((*lead, rp, cp))
    padded[..., :rows, :cols] = bits
    n = len(lead)
    tiles = padded.reshape(*lead, rp // 128, 4, 32, cp // 4, 4)
    out = tiles.permute(*range(n), n, n + 3, n + 2, n + 1, n + 4).reshape(*lead, rp, cp)
    return out.view(scale.dtype) if scale.element_size() == 1 else out


def unswizzle_scales(swizzled: torch.Tensor, rows: int, cols: int) -> torch.Tensor:
    """Inverse of :func:`swizzle_scales` (padding dropped)."""
    *lead, rp, cp = swizzled.shape
    bits = swizzled.view(torch.uint8) if swizzled.element_size() == 1 else swizzled
    n = len(lead)
    tiles = bits.reshape(*lead, rp // 128, cp // 4, 32, 4, 4)
    out = tiles.permute(*range(n), n, n + 3, n + 2, n + 1, n + 4).reshape(*lead, rp, cp)[..., :rows, :cols]
    return out.view(swizzled.dtype) if swizzled.element_size() == 1 else out
