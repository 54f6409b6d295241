"""FP4 E2M1 element codes, shared by NVFP4 and MXFP4.

A code is 4 bits: bit 3 is the sign, bits 0..2 index the magnitudes below. Two codes
share a byte with the *even* column in the low nibble, which is how ModelOpt writes
NVFP4 and how OCP MX writes MXFP4, so one packer serves both formats.
"""
from __future__ import annotations

import torch

# Magnitudes of codes 0..7; codes 8..15 are the same magnitudes negated.
E2M1_MAGNITUDES = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0)
E2M1_MAX = 6.0


def decode_table(device=None, dtype=torch.float32) -> torch.Tensor:
    """All 16 code values in code order (used as a lookup table)."""
    mags = torch.tensor(E2M1_MAGNITUDES, dtype=torch.float64)
    return torch.cat([mags, -mags]).to(device=device, dtype=dtype)


def encode(x: torch.Tensor) -> torch.Tensor:
    """Round ``x`` (already divided by its scale) to the nearest E2M1 code.

    Magnitudes above 6 saturate to 6; exact ties go to the even code (round-half-even,
    as hardware converters do). Returns uint8 codes 0..15.
    """
    xf = x.float()
    mag = xf.abs().clamp(max=E2M1_MAX)
    mags = torch.tensor(E2M1_MAGNITUDES, device=x.device, dtype=torch.float32)
    mids = (mags[1:] + mags[:-1]) / 2
    idx = torch.bucketize(mag, mids)  # on a tie picks the lower code
    tie = (idx < 7) & (mag == mids[idx.clamp(max=6)]) & (idx % 2 == 1)
    idx = idx + tie.to(idx.dtype)
    neg = (xf < 0) & (idx > 0)
    return (idx + 8 * neg.to(idx.dtype)).to(torch.uint8)


def decode(codes: torch.Tensor, dtype=torch.float32) -> torch.Tensor:
    return decode_table(codes.device, dtype)[codes.long()]


def pack(codes: torch.Tensor) -> torch.Tensor:
    """[..., C] codes (C even) → [..., C/2] bytes, even column in the low nibble."""
    if codes.shape[-1] % 2:
        raise ValueError(f"e2m1 pack needs an even number of columns, got {codes.shape[-1]}")
    c = codes.to(torch.uint8)
    return (c[..., 0::2] & 0xF) | ((c[..., 1::2] & 0xF) << 4)


def unpack(packed: torch.Tensor) -> torch.Tensor:
    """[..., C/2] bytes → [..., C] codes."""
    if packed.dtype != torch.uint8:
        raise TypeError(f"e2m1 unpack expects uint8, got {packed.dtype}")
    lo = packed & 0xF
    hi = packed >> 4
    return torch.stack([lo, hi], dim=-1).reshape(*packed.shape[:-1], packed.shape[-1] * 2)


def clear_zero_signs(packed: torch.Tensor) -> torch.Tensor:
    """A copy of packed e2m1 bytes with −0 (code 8) written as +0 (code 0): the same
    values; b12x's kernels expect zeros unsigned (vLLM clears them the same way)."""
    b = packed.view(torch.uint8)
    lo_zero = (b & 0x07) == 0
    hi_zero = (b & 0x70) == 0
    keep = torch.full_like(b, 0xFF)
    keep = torch.where(lo_zero, keep & 0xF7, keep)
    keep = torch.where(hi_zero, keep & 0x7F, keep)
    return b & keep
