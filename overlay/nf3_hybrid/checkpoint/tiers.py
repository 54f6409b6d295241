"""One expert's gate/up/down in one tier format → the tensors the checkpoint stores.

Shared by the checkpoint maker (quantize) and the reference (dequantize), so the two
never disagree about which tensor names a tier has.
"""
from __future__ import annotations

from typing import Dict, Tuple

import torch

from ..formats import mxfp4, nf3, nvfp4

NVFP4 = "nvfp4"
MXFP4 = "mxfp4_e8m0k32"
NF3 = "nf3"
TIER_FORMATS = (NVFP4, MXFP4, NF3)

# tensor names each format writes per projection
TENSORS = {
    NVFP4: ("weight", "weight_scale", "weight_scale_2", "input_scale"),
    MXFP4: ("weight", "weight_scale"),
    NF3: ("weight_packed", "weight_scale"),
}

Proj = str  # gate_proj | up_proj | down_proj


def quantize_expert(
    weights: Dict[Proj, torch.Tensor], fmt: str, codebook=None, scale_search: int = nf3.DEFAULT_SCALE_SEARCH
) -> Dict[Tuple[Proj, str], torch.Tensor]:
    """{proj: float weight [out, in]} → {(proj, tensor name): stored tensor}."""
    out: Dict[Tuple[Proj, str], torch.Tensor] = {}
    if fmt == NVFP4:
        # gate and up are fused into one w13 with a single weight_scale_2 in vLLM
        joint = max(float(weights["gate_proj"].float().abs().max()), float(weights["up_proj"].float().abs().max()))
        for proj, w in weights.items():
            amax = joint if proj in ("gate_proj", "up_proj") else None
            q, s, s2 = nvfp4.quantize(w, global_amax=amax)
            out[(proj, "weight")] = q
            out[(proj, "weight_scale")] = s
            out[(proj, "weight_scale_2")] = s2.float()
            # activations stay bf16 (weight-only); kept for ModelOpt layout compatibility
            out[(proj, "input_scale")] = torch.ones((), dtype=torch.float32)
    elif fmt == MXFP4:
        for proj, w in weights.items():
            q, s = mxfp4.quantize(w)
            out[(proj, "weight")] = q
            out[(proj, "weight_scale")] = s
    elif fmt == NF3:
        for proj, w in weights.items():
            q, s = nf3.quantize(w, codebook=codebook, scale_search=scale_search)
            out[(proj, "weight_packed")] = q
            out[(proj, "weight_scale")] = s
    else:
        raise ValueError(f"unknown tier format {fmt!r} (expected one of {TIER_FORMATS})")
    return out


def gptq_expert(weights: Dict[Proj, torch.Tensor], fmt: str, h13: torch.Tensor, h2: torch.Tensor,
                codebook=None, scale_search: int = nf3.DEFAULT_SCALE_SEARCH,
                damp: float = 0.1) -> Dict[Tuple[Proj, str], torch.Tensor]:
    """As ``quantize_expert``, with GPTQ: gate/up against the Hessian of the expert's
    inputs ``h13``, down against the Hessian of its intermediate activations ``h2``."""
    from .. import gptq

    out: Dict[Tuple[Proj, str], torch.Tensor] = {}
    if fmt == NF3:
        for proj, w in weights.items():
            q, s = gptq.gptq_nf3(w, h2 if proj == "down_proj" else h13, codebook, scale_search, damp)
            out[(proj, "weight_packed")] = q
            out[(proj, "weight_scale")] = s
    elif fmt == NVFP4:
        joint = max(float(weights["gate_proj"].float().abs().max()), float(weights["up_proj"].float().abs().max()))
        for proj, w in weights.items():
            down = proj == "down_proj"
            q, s, s2 = gptq.gptq_nvfp4(w, h2 if down else h13, None if down else joint, damp)
            out[(proj, "weight")] = q
            out[(proj, "weight_scale")] = s
            out[(proj, "weight_scale_2")] = s2.float().cpu()
            out[(proj, "input_scale")] = torch.ones((), dtype=torch.float32)
    else:
        raise ValueError(f"GPTQ is implemented for NF3 and NVFP4, not {fmt}")
    return out


def dequantize_proj(fmt: str, tensors: Dict[str, torch.Tensor], codebook=None, dtype=torch.float32) -> torch.Tensor:
    """Stored tensors of one projection ({tensor name: tensor}) → float weight."""
    if fmt == NVFP4:
        return nvfp4.dequantize(tensors["weight"], tensors["weight_scale"], tensors["weight_scale_2"], dtype)
    if fmt == MXFP4:
        return mxfp4.dequantize(tensors["weight"], tensors["weight_scale"], dtype)
    if fmt == NF3:
        return nf3.dequantize(tensors["weight_packed"], tensors["weight_scale"], codebook, dtype)
    raise ValueError(f"unknown tier format {fmt!r}")


def detect_format(tensor_names, scale_dtype=None) -> str:
    """Which tier format a projection's stored tensor names (and scale dtype) spell."""
    names = set(tensor_names)
    if "weight_packed" in names:
        return NF3
    if "weight" in names and "weight_scale" in names:
        if scale_dtype == torch.uint8:
            return MXFP4
        return NVFP4
    raise ValueError(f"cannot tell the format of an expert projection with tensors {sorted(names)}")
