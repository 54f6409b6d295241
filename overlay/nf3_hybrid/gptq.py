"""GPTQ for the hybrid formats: quantize a weight column by column along its input
dimension, pushing each column's rounding error onto the columns not yet quantized
through the inverse Hessian of the layer's inputs (Frantar et al., 2022).

Only the inputs an expert actually sees matter, so each expert gets the Hessian of the
tokens routed to it (for gate/up: the layer input; for down: silu(gate)·up of those
tokens). Group scales are chosen when a group is reached, from the already-updated
weights, with the same scale search as round-to-nearest (so GPTQ never starts from a
worse grid). Output: exactly the tensors the checkpoint format stores.
"""
from __future__ import annotations

from typing import Optional, Tuple

import torch

from .formats import e2m1, nf3, nvfp4
from .formats.scales import to_e4m3

BLOCK = 128


class GPTQError(RuntimeError):
    """The Hessian could not be factorised even with strong damping."""


def hessian(x: torch.Tensor) -> torch.Tensor:
    """Xᵀ X / n in float32 (the scale cancels in GPTQ; damping is relative to its diagonal)."""
    x = x.float()
    return x.t() @ x / max(x.shape[0], 1)


def _inverse_cholesky(h: torch.Tensor, damp: float) -> torch.Tensor:
    h = h.clone()
    dead = torch.diag(h) == 0
    h[dead, dead] = 1.0  # inputs this expert never sees: no error propagation through them
    mean = float(torch.diag(h).mean())
    for attempt in range(4):
        try:
            hd = h + (damp * 10**attempt) * mean * torch.eye(h.shape[0], device=h.device, dtype=h.dtype)
            inv = torch.cholesky_inverse(torch.linalg.cholesky(hd))
            return torch.linalg.cholesky(inv, upper=True)
        except torch.linalg.LinAlgError:
            continue
    raise GPTQError("Hessian is not positive definite even with 1000× damping")


def _gptq(w: torch.Tensor, h: torch.Tensor, group: int, choose_scale, quantize_col, damp: float):
    """Generic GPTQ loop. ``choose_scale(cols [out, group]) → scale [out]`` picks a group's
    scale; ``quantize_col(col [out], scale [out]) → (q [out], code [out])``."""
    out_f, in_f = w.shape
    if in_f % group or BLOCK % group:
        raise ValueError(f"GPTQ: in-features {in_f} must be a multiple of the group size {group}")
    w = w.float().clone()
    hinv = _inverse_cholesky(h.float(), damp)
    codes = torch.empty((out_f, in_f), dtype=torch.uint8, device=w.device)
    scales = torch.empty((out_f, in_f // group), dtype=torch.float32, device=w.device)
    for i1 in range(0, in_f, BLOCK):
        i2 = min(i1 + BLOCK, in_f)
        w1 = w[:, i1:i2].clone()
        err1 = torch.zeros_like(w1)
        hinv1 = hinv[i1:i2, i1:i2]
        for i in range(i2 - i1):
            col = i1 + i
            if col % group == 0:
                scale = choose_scale(w1[:, i:i + group])
                scales[:, col // group] = scale
            q, code = quantize_col(w1[:, i], scale)
            codes[:, col] = code
            err = (w1[:, i] - q) / hinv1[i, i]
            w1[:, i:] -= err[:, None] * hinv1[i, i:][None, :]
            err1[:, i] = err
        w[:, i2:] -= err1 @ hinv[i1:i2, i2:]
    return codes, scales


def gptq_nf3(w: torch.Tensor, h: torch.Tensor, codebook=None, scale_search: int = nf3.DEFAULT_SCALE_SEARCH,
             damp: float = 0.01) -> Tuple[torch.Tensor, torch.Tensor]:
    """[out, in] weight + [in, in] Hessian → (weight_packed, weight_scale e4m3) in NF3."""
    cb = nf3.codebook_tensor(codebook, w.device)
    mids = (cb[1:] + cb[:-1]) / 2

    def choose(cols):
        return nf3.quantize_codes(cols, codebook, scale_search)[1].float()[:, 0]

    def quant(col, s):
        safe = torch.where(s > 0, s, torch.ones_like(s))
        idx = torch.bucketize(col / safe, mids)
        return cb[idx] * s, idx.to(torch.uint8)

    codes, scales = _gptq(w, h, nf3.GROUP, choose, quant, damp)
    return nf3.pack(codes), scales.to(torch.float8_e4m3fn)


def gptq_nvfp4(w: torch.Tensor, h: torch.Tensor, global_amax: Optional[float] = None, damp: float = 0.01):
    """[out, in] weight + Hessian → (weight, weight_scale e4m3, weight_scale_2) in NVFP4.
    The global scale comes from the original weights' amax (or ``global_amax``, shared
    by gate and up), exactly as round-to-nearest sets it."""
    amax = float(w.float().abs().max()) if global_amax is None else float(global_amax)
    s2 = nvfp4.global_scale_for(amax).to(w.device)

    def choose(cols):
        return to_e4m3(cols.abs().amax(-1) / e2m1.E2M1_MAX / s2).float()

    def quant(col, s):
        eff = s * s2
        safe = torch.where(eff > 0, eff, torch.ones_like(eff))
        code = e2m1.encode(col / safe)
        code = torch.where(eff > 0, code, torch.zeros_like(code))
        return e2m1.decode(code) * eff, code

    codes, scales = _gptq(w, h, nvfp4.GROUP, choose, quant, damp)
    return e2m1.pack(codes), scales.to(torch.float8_e4m3fn), s2.reshape(())
