"""Scale encodings shared by the formats: float8_e4m3fn block scales and e8m0 exponents."""
from __future__ import annotations

import torch

E4M3_MAX = 448.0
E8M0_BIAS = 127


def to_e4m3(x: torch.Tensor) -> torch.Tensor:
    """Round to float8_e4m3fn, saturating at ±448 (torch's cast would give NaN above it)."""
    return x.float().clamp(-E4M3_MAX, E4M3_MAX).to(torch.float8_e4m3fn)


def e8m0_to_float(s: torch.Tensor) -> torch.Tensor:
    """uint8 biased exponent → 2**(s-127) in float32 (exact for every finite code)."""
    if s.dtype != torch.uint8:
        raise TypeError(f"e8m0 scales must be uint8, got {s.dtype}")
    return torch.ldexp(torch.ones_like(s, dtype=torch.float32), s.to(torch.int32) - E8M0_BIAS)


def e8m0_from_exponent(e: torch.Tensor) -> torch.Tensor:
    """Unbiased integer exponent → uint8 code, clamped to the finite range 0..254."""
    return (e.to(torch.int32) + E8M0_BIAS).clamp(0, 254).to(torch.uint8)


def grouped(x: torch.Tensor, group: int, what: str) -> torch.Tensor:
    """[..., C] → [..., C/group, group], with an error that says which format and size."""
    if x.shape[-1] % group:
        raise ValueError(
            f"{what}: last dimension {x.shape[-1]} is not a multiple of the group size {group}"
        )
    return x.reshape(*x.shape[:-1], x.shape[-1] // group, group)
