"""What every tier backend gets and must provide."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Tuple

import torch

NVFP4 = "nvfp4"
MXFP4 = "mxfp4_e8m0k32"
NF3 = "nf3"


@dataclass
class TierWeights:
    """One tier of one MoE layer, as stored after loading (TP-sharded, compact).

    ``w13`` holds gate rows [0, I) and up rows [I, 2I) of each local expert.
    ``local_map[g]`` is the local index of global expert g in this tier, −1 elsewhere.
    """

    fmt: str
    num_experts: int
    hidden: int
    inter: int  # intermediate size of this TP rank
    w13: torch.Tensor  # nvfp4/mxfp4: uint8 [n, 2I, H/2]; nf3: uint8 [n, 2I, H/8*3]
    w13_scale: torch.Tensor  # nvfp4: e4m3 [n, 2I, H/16]; mxfp4: uint8 [n, 2I, H/32]; nf3: e4m3 [n, 2I, H/32]
    w2: torch.Tensor
    w2_scale: torch.Tensor
    local_map: torch.Tensor  # int32 [E_global]
    w13_scale_2: Optional[torch.Tensor] = None  # nvfp4: fp32 [n, 2] (gate, up)
    w2_scale_2: Optional[torch.Tensor] = None  # nvfp4: fp32 [n]
    codebook: Optional[Tuple[float, ...]] = None  # nf3
    # nf3: "packed" (the checkpoint's 24-bit words), "nibble" (formats/nf3_nibble.py) or
    # "tiled" (formats/nf3_tiled.py: nibble words and the scales reordered by 16 × 128
    # tiles), which the Triton backend rewrites w13 / w2 (and their scales) into, in place,
    # when it takes the tier
    code_layout: str = "packed"

    def __post_init__(self):
        # a tensor rewritten earlier (by another TierWeights over the same storage) says so
        self.code_layout = getattr(self.w13, "nf3_code_layout", self.code_layout)

    def nf3_packed(self, t: torch.Tensor) -> torch.Tensor:
        """An NF3 code tensor of this tier (or whole experts of one) in the checkpoint's
        packing, whatever layout the tier holds (a converted copy unless "packed")."""
        if self.code_layout == "packed":
            return t
        from ..formats import nf3_nibble, nf3_tiled

        if self.code_layout == "tiled":
            t = nf3_tiled.untiled_words(t)
        return nf3_nibble.to_packed(t)

    def nf3_scales(self, s: torch.Tensor) -> torch.Tensor:
        """An NF3 scale tensor of this tier (or whole experts of one) row-major, as the
        checkpoint has it (a converted copy for "tiled")."""
        if self.code_layout != "tiled":
            return s
        from ..formats import nf3_tiled

        return nf3_tiled.untiled_scales(s)

    @property
    def device(self) -> torch.device:
        return self.w13.device


class TierBackend:
    """Runs the expert MLP ``down(silu(gate(x)) * up(x))`` of one tier's experts for the
    routed tokens and adds the routing-weighted result into a shared float32 ``[M, H]``
    output (tokens routed to no expert of this tier are left as they are)."""

    name = "base"
    # may run inside a captured CUDA graph (no host sync, no scratch allocation per call)
    graph_safe = False
    # the tiers (formats) this backend has copied into a layout of its own at construction:
    # their checkpoint-layout tensors are dead weight afterwards
    copies_formats: tuple = ()

    def __init__(self, tier: TierWeights):
        self.tier = tier

    def run_into(self, out: torch.Tensor, x: torch.Tensor, topk_weights: torch.Tensor,
                 topk_ids: torch.Tensor, weights_on_input: bool = False) -> None:
        raise NotImplementedError
