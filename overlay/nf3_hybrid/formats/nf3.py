"""NF3: 3-bit codebook quantization with float8_e4m3fn scales per 32 weights.

On disk (``weight_packed`` uint8 ``[rows, cols/8*3]``): eight codes make one little-endian
24-bit word, code k at bits 3k..3k+2, stored as 3 bytes. ``weight_scale`` is
float8_e4m3fn ``[rows, cols/32]``; value = codebook[code] × scale.

There is no per-tensor scale: a group whose best scale is below e4m3's smallest normal
(2**-6) loses precision in the subnormal range. ``scale_underflow_counts`` lets the
checkpoint maker report how often that happens.
"""
from __future__ import annotations

import math
from typing import Optional, Sequence

import torch

from .scales import grouped, to_e4m3

CODEBOOK = (-1.0, -0.6047, -0.3563, -0.1275, 0.1275, 0.3563, 0.6047, 1.0)
GROUP = 32
CODES_PER_WORD = 8
BYTES_PER_WORD = 3
# How many representable e4m3 scales (from the absmax scale downwards) the quantizer tries.
DEFAULT_SCALE_SEARCH = 8
_E4M3_MAX_FINITE_CODE = 0x7E  # 448; the bit patterns 0x00..0x7E are ordered by value
_E4M3_MIN_NORMAL = 2.0 ** -6


def validate_codebook(values: Optional[Sequence[float]]) -> tuple:
    """Checks a checkpoint-supplied codebook: 8 finite, strictly increasing levels."""
    if values is None:
        return CODEBOOK
    try:
        vals = tuple(float(v) for v in values)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"nf3_codebook must be a list of 8 numbers, got {values!r}") from exc
    if len(vals) != 8:
        raise ValueError(f"nf3_codebook must have exactly 8 levels, got {len(vals)}")
    if not all(math.isfinite(v) for v in vals):
        raise ValueError(f"nf3_codebook levels must be finite, got {vals}")
    if any(b <= a for a, b in zip(vals, vals[1:])):
        raise ValueError(f"nf3_codebook levels must be strictly increasing, got {vals}")
    if max(abs(v) for v in vals) == 0:
        raise ValueError("nf3_codebook must have a non-zero level")
    return vals


def codebook_tensor(codebook=None, device=None, dtype=torch.float32) -> torch.Tensor:
    return torch.tensor(validate_codebook(codebook), dtype=torch.float64).to(device=device, dtype=dtype)


def pack(codes: torch.Tensor) -> torch.Tensor:
    """[..., C] codes 0..7 (C multiple of 8) → [..., C/8*3] uint8."""
    cols = codes.shape[-1]
    if cols % CODES_PER_WORD:
        raise ValueError(f"NF3 pack: {cols} columns is not a multiple of {CODES_PER_WORD}")
    c = codes.to(torch.int32).reshape(*codes.shape[:-1], cols // CODES_PER_WORD, CODES_PER_WORD)
    if c.numel() and (int(c.min()) < 0 or int(c.max()) > 7):
        raise ValueError("NF3 pack: codes must be in 0..7")
    shifts = torch.arange(0, 3 * CODES_PER_WORD, 3, dtype=torch.int32, device=codes.device)
    word = (c << shifts).sum(-1, dtype=torch.int32)
    b = torch.stack([word & 0xFF, (word >> 8) & 0xFF, (word >> 16) & 0xFF], dim=-1)
    return b.to(torch.uint8).reshape(*codes.shape[:-1], cols // CODES_PER_WORD * BYTES_PER_WORD)


def unpack(packed: torch.Tensor) -> torch.Tensor:
    """[..., C/8*3] uint8 → [..., C] codes (uint8)."""
    if packed.dtype != torch.uint8:
        raise TypeError(f"NF3 unpack expects uint8, got {packed.dtype}")
    nbytes = packed.shape[-1]
    if nbytes % BYTES_PER_WORD:
        raise ValueError(f"NF3 unpack: {nbytes} bytes per row is not a multiple of 3")
    p = packed.to(torch.int32).reshape(*packed.shape[:-1], nbytes // BYTES_PER_WORD, BYTES_PER_WORD)
    word = p[..., 0] | (p[..., 1] << 8) | (p[..., 2] << 16)
    shifts = torch.arange(0, 3 * CODES_PER_WORD, 3, dtype=torch.int32, device=packed.device)
    codes = (word.unsqueeze(-1) >> shifts) & 0x7
    return codes.to(torch.uint8).reshape(*packed.shape[:-1], nbytes // BYTES_PER_WORD * CODES_PER_WORD)


def _nearest_codes(xs: torch.Tensor, cb: torch.Tensor) -> torch.Tensor:
    mids = (cb[1:] + cb[:-1]) / 2
    return torch.bucketize(xs, mids)


def _e4m3_at_least(s: torch.Tensor) -> torch.Tensor:
    """uint8 bit pattern of the smallest e4m3 value ≥ s (saturating at 448)."""
    code = to_e4m3(s).view(torch.uint8).to(torch.int32)
    below = code.to(torch.uint8).view(torch.float8_e4m3fn).float() < s
    return (code + below.to(torch.int32)).clamp(max=_E4M3_MAX_FINITE_CODE)


def quantize_codes(
    w: torch.Tensor,
    codebook=None,
    scale_search: int = DEFAULT_SCALE_SEARCH,
    row_chunk: int = 1024,
):
    """Quantize ``w`` [rows, cols] → (codes uint8 [rows, cols], scale e4m3 [rows, cols/32]).

    Each group's scale is chosen among ``scale_search`` consecutive e4m3 values, starting
    at the smallest one that covers the group's absmax, to minimise squared error with
    round-to-nearest codes. ``scale_search=1`` is plain absmax scaling.
    """
    if w.dim() != 2:
        raise ValueError(f"NF3 quantize expects a 2-D weight, got shape {tuple(w.shape)}")
    if scale_search < 1:
        raise ValueError("scale_search must be ≥ 1")
    cb = codebook_tensor(codebook, w.device)
    cb_max = float(cb.abs().max())
    codes_out = torch.empty(w.shape, dtype=torch.uint8, device=w.device)
    scale_out = torch.empty((w.shape[0], w.shape[1] // GROUP), dtype=torch.float8_e4m3fn, device=w.device)
    steps = torch.arange(scale_search, device=w.device, dtype=torch.int32)
    for r0 in range(0, w.shape[0], row_chunk):
        g = grouped(w[r0:r0 + row_chunk].float(), GROUP, "NF3 quantize")  # [R, G, 32]
        top = _e4m3_at_least(g.abs().amax(-1) / cb_max)  # [R, G]
        cand_codes = (top.unsqueeze(-1) - steps).clamp(min=0)  # [R, G, S]
        cand = cand_codes.to(torch.uint8).view(torch.float8_e4m3fn).float()
        safe = torch.where(cand > 0, cand, torch.ones_like(cand))
        xs = g.unsqueeze(-2) / safe.unsqueeze(-1)  # [R, G, S, 32]
        idx = _nearest_codes(xs, cb)
        err = ((cb[idx] * cand.unsqueeze(-1) - g.unsqueeze(-2)) ** 2).sum(-1)  # [R, G, S]
        best = err.argmin(-1, keepdim=True)
        best_idx = torch.gather(idx, 2, best.unsqueeze(-1).expand(*best.shape, GROUP)).squeeze(2)
        codes_out[r0:r0 + row_chunk] = best_idx.reshape(best_idx.shape[0], -1).to(torch.uint8)
        scale_out[r0:r0 + row_chunk] = torch.gather(cand, 2, best).squeeze(-1).to(torch.float8_e4m3fn)
    return codes_out, scale_out


def quantize(w: torch.Tensor, codebook=None, scale_search: int = DEFAULT_SCALE_SEARCH):
    """[rows, cols] → (weight_packed uint8 [rows, cols/8*3], weight_scale e4m3 [rows, cols/32])."""
    codes, scale = quantize_codes(w, codebook, scale_search)
    return pack(codes), scale


def dequantize_codes(codes: torch.Tensor, scale: torch.Tensor, codebook=None, dtype=torch.float32):
    cb = codebook_tensor(codebook, codes.device)
    vals = grouped(cb[codes.long()], GROUP, "NF3 dequantize")
    if scale.shape != vals.shape[:-1]:
        raise ValueError(
            f"NF3 dequantize: scale shape {tuple(scale.shape)} does not match "
            f"{tuple(vals.shape[:-1])} groups of {GROUP}"
        )
    return (vals * scale.float().unsqueeze(-1)).reshape(codes.shape).to(dtype)


def dequantize(packed: torch.Tensor, scale: torch.Tensor, codebook=None, dtype=torch.float32):
    """Inverse of ``quantize``: codebook[code] × scale, computed in float32."""
    return dequantize_codes(unpack(packed), scale, codebook, dtype)


def scale_underflow_counts(scale: torch.Tensor):
    """(non-zero group scales stored as e4m3 subnormals — reduced precision, non-zero
    group scales): summed over tensors, their ratio is the underflow fraction."""
    s = scale.float()
    nz = s > 0
    return int(((s < _E4M3_MIN_NORMAL) & nz).sum()), int(nz.sum())
