"""MXFP4 (OCP microscaling): E2M1 elements with one e8m0 power-of-two scale per 32.

On disk: ``weight`` uint8 ``[rows, cols/2]`` (as NVFP4) and ``weight_scale`` uint8
``[rows, cols/32]`` holding the biased exponent; value = e2m1 × 2**(s−127).
This is the kept tier when ``kept_format = "mxfp4_e8m0k32"``.
"""
from __future__ import annotations

import torch

from . import e2m1
from .scales import e8m0_from_exponent, e8m0_to_float, grouped

GROUP = 32
KEPT_FORMAT = "mxfp4_e8m0k32"


def quantize(w: torch.Tensor):
    """[rows, cols] → (weight uint8 [rows, cols/2], weight_scale uint8 [rows, cols/32]).

    Each group tries the exponent that just avoids saturation (amax/2**e ≤ 6) and the one
    below it (which saturates the largest values but resolves the rest better), keeping
    whichever has the smaller squared error.
    """
    if w.dim() != 2:
        raise ValueError(f"MXFP4 quantize expects a 2-D weight, got shape {tuple(w.shape)}")
    g = grouped(w.float(), GROUP, "MXFP4 quantize")
    amax = g.abs().amax(-1)
    tiny = torch.finfo(torch.float32).tiny
    e_hi = torch.ceil(torch.log2(amax.clamp(min=tiny) / e2m1.E2M1_MAX))
    best_codes, best_scale, best_err = None, None, None
    for e in (e_hi, e_hi - 1):
        s = e8m0_from_exponent(e)
        sv = e8m0_to_float(s).unsqueeze(-1)
        codes = e2m1.encode(g / sv)
        err = ((e2m1.decode(codes) * sv - g) ** 2).sum(-1)
        if best_err is None:
            best_codes, best_scale, best_err = codes, s, err
        else:
            take = err < best_err
            best_codes = torch.where(take.unsqueeze(-1), codes, best_codes)
            best_scale = torch.where(take, s, best_scale)
            best_err = torch.minimum(err, best_err)
    return e2m1.pack(best_codes.reshape(w.shape)), best_scale


def dequantize(packed: torch.Tensor, scale: torch.Tensor, dtype=torch.float32) -> torch.Tensor:
    vals = grouped(e2m1.decode(e2m1.unpack(packed)), GROUP, "MXFP4 dequantize")
    if scale.shape != vals.shape[:-1]:
        raise ValueError(
            f"MXFP4 dequantize: scale shape {tuple(scale.shape)} does not match "
            f"{tuple(vals.shape[:-1])} groups of {GROUP}"
        )
    out = vals * e8m0_to_float(scale).unsqueeze(-1)
    return out.reshape(*packed.shape[:-1], packed.shape[-1] * 2).to(dtype)
