"""NF3 codes in "nibble" layout: the in-memory layout the Triton kernels read, rewritten once
at load from the checkpoint's packing (formats/nf3.py). Same bytes per group, same shape.

A group of 32 codes (12 bytes, one scale) is three little-endian 32-bit words A, B, C:
codes 0-7 sit in the low three bits of A's eight nibbles (code i at bits 4i..4i+2), codes
8-15 in B, 16-23 in C; the nibbles' top bits hold codes 24-31 — bit b of code 24 + i at
bit 4i + 3 of word b (A for bit 0, B for bit 1, C for bit 2).

Why: the kernels decode codes with byte permutes whose selectors are nibbles. From the
checkpoint's 24-bit words each selector takes a three-step bit spread (six integer
instructions) plus cutting the word out of the 96-bit group; here three of the four
selectors are one AND, the fourth three shifts and three logic ops. Measured on the H200
(session 8, ``bench/results/bench_moe_h200_s8_nibble_{old,new}.json``, with the decode
GEMV's group-wide inline block that the layout allows): the NF3 tier 8-16 % faster from 1
to 64 tokens, the GEMV being bound by the integer pipe; prefill 1-2 %.
"""
from __future__ import annotations

import torch

from . import nf3

GROUP_BYTES = 12
LAYOUTS = ("packed", "nibble")  # TierWeights.code_layout: the checkpoint's, this one


def _check(t: torch.Tensor, what: str) -> None:
    if t.dtype != torch.uint8:
        raise TypeError(f"NF3 {what} expects uint8, got {t.dtype}")
    if t.shape[-1] % GROUP_BYTES:
        raise ValueError(f"NF3 {what}: {t.shape[-1]} bytes per row is not a whole number of "
                         f"32-code groups ({GROUP_BYTES} bytes each)")


def pack_codes(codes: torch.Tensor) -> torch.Tensor:
    """[..., C] codes 0..7 (C multiple of 32) → [..., C/32*12] uint8 in nibble layout."""
    if codes.shape[-1] % nf3.GROUP:
        raise ValueError(f"NF3 nibble pack: {codes.shape[-1]} codes per row is not a multiple of 32")
    c = codes.to(torch.uint8).reshape(*codes.shape[:-1], -1, nf3.GROUP)
    if bool((c > 7).any()):
        raise ValueError("NF3 nibble pack: codes must be in 0..7")
    words = []
    tail = c[..., 24:]  # codes 24-31, spread over the three words' top bits
    for b in range(3):
        low = c[..., 8 * b: 8 * b + 8] | (((tail >> b) & 1) << 3)  # one nibble per code
        words.append(low[..., 0::2] | (low[..., 1::2] << 4))  # four bytes, little-endian
    out = torch.cat(words, dim=-1)  # [..., G, 12]
    return out.reshape(*codes.shape[:-1], -1)


def unpack_codes(nib: torch.Tensor) -> torch.Tensor:
    """Inverse of ``pack_codes``: [..., C/32*12] uint8 → [..., C] codes (uint8)."""
    _check(nib, "nibble unpack")
    g = nib.reshape(*nib.shape[:-1], -1, 3, 4)  # [..., G, word, byte]
    nibbles = torch.stack([g & 0xF, g >> 4], dim=-1).reshape(*g.shape[:-2], 3, 8)  # [..., G, word, 8]
    head = (nibbles & 7).reshape(*g.shape[:-2], 24)
    tail = ((nibbles >> 3) << torch.arange(3, dtype=torch.uint8, device=nib.device).view(3, 1)).sum(-2)
    return torch.cat([head, tail.to(torch.uint8)], dim=-1).reshape(*nib.shape[:-1], -1)


def from_packed(packed: torch.Tensor) -> torch.Tensor:
    """The checkpoint's packing → nibble layout (a new tensor, same shape)."""
    _check(packed, "nibble repack")
    return pack_codes(nf3.unpack(packed))


def to_packed(nib: torch.Tensor) -> torch.Tensor:
    """Nibble layout → the checkpoint's packing (a new tensor, same shape)."""
    return nf3.pack(unpack_codes(nib))


def repack_inplace(t: torch.Tensor, rows_per_step: int = 4096) -> None:
    """Rewrites a checkpoint-packed tensor [..., C/8*3] into nibble layout in place, a few
    thousand rows at a time (the codes as bytes are 2.7× the packed size: bounded scratch
    at load instead of a whole layer's)."""
    _check(t, "nibble repack")
    flat = t.view(-1, t.shape[-1])
    for r0 in range(0, flat.shape[0], rows_per_step):
        part = flat[r0: r0 + rows_per_step]
        part.copy_(from_packed(part))
