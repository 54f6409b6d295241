"""The tier-demuxing expert weight loader of one hybrid MoE layer.

vLLM hands each checkpoint expert tensor to ``param.weight_loader`` — with keywords
from ``RoutedExperts.load_weights`` (glm4_moe, qwen3_moe) and with the first three
arguments positional from hand-written loaders (deepseek_v2, GLM-5, MTP). Both land in
``__call__``. The parameter tells which tensor family arrived; the expert id and this
layer's plan tell which tier and local slot it goes to. Every arrival is recorded, so
a checkpoint that misses or repeats a tensor is an error naming layer, expert, tensor.
"""
from __future__ import annotations

from typing import Dict, List, Tuple

import torch

from ..bitmap import KEPT, TIER_NAMES, LayerPlan
from .storage import CKPT_TO_SUFFIX, PROJ_OF_SHARD, REQUIRED, ParamSpec, full_shape

FAMILY_OF_SHARD = {"w1": "w13", "w3": "w13", "w2": "w2"}


class ExpertLoadError(ValueError):
    """An expert tensor the hybrid layer cannot accept."""


class ExpertLoader:
    def __init__(self, layer_name: str, plan: LayerPlan, fmt: Dict[int, str],
                 specs: Dict[int, Dict[str, ParamSpec]], params: Dict[int, Dict[str, torch.nn.Parameter]],
                 tp_rank: int, tp_size: int):
        self.layer_name = layer_name
        self.plan = plan
        self.fmt = fmt
        self.specs = specs
        self.params = params
        self.tp_rank = tp_rank
        self.tp_size = tp_size
        self.arrived: Dict[Tuple[int, int, str, str], int] = {}

    def _where(self, expert=None) -> str:
        s = f"{self.layer_name} (layer {self.plan.layer})"
        return s if expert is None else f"{s} expert {expert}"

    def __call__(self, param, loaded_weight, weight_name=None, shard_id=None, expert_id=None,
                 return_success=False, **_unused):
        family, ckpt = param.nf3_family, param.nf3_ckpt
        if expert_id is None or shard_id not in FAMILY_OF_SHARD:
            raise ExpertLoadError(
                f"{self._where()}: expert tensor {weight_name or family} arrived without an expert id / "
                f"shard id (got expert_id={expert_id!r}, shard_id={shard_id!r})"
            )
        if FAMILY_OF_SHARD[shard_id] != family:
            raise ExpertLoadError(f"{self._where(expert_id)}: shard {shard_id} cannot load into {family} ({weight_name})")
        e = int(expert_id)
        if not 0 <= e < self.plan.num_experts:
            raise ExpertLoadError(
                f"{self._where()}: expert id {e} is outside the bit map's {self.plan.num_experts} experts"
            )
        tier, local = self.plan.remap[e]
        fmt = self.fmt[tier]
        proj = PROJ_OF_SHARD[shard_id]
        what = f"{proj}.{ckpt}"
        if ckpt not in CKPT_TO_SUFFIX[fmt]:
            raise ExpertLoadError(
                f"{self._where(e)}: the checkpoint has {what}, but the bit map puts this expert in the "
                f"{TIER_NAMES[tier]} tier ({fmt}), which stores {', '.join(sorted(CKPT_TO_SUFFIX[fmt]))}"
            )
        spec = self.specs[tier][f"{family}.{ckpt}"]
        target = self.params[tier][f"{family}.{ckpt}"].data
        if loaded_weight.dtype != spec.dtype:
            raise ExpertLoadError(
                f"{self._where(e)}: {what} is {loaded_weight.dtype}, the {fmt} tier needs {spec.dtype}"
            )
        want = full_shape(spec, family, self.tp_size)
        got = tuple(loaded_weight.shape)
        if spec.per_tensor:
            if loaded_weight.numel() != 1:
                raise ExpertLoadError(f"{self._where(e)}: {what} must be a scalar, got shape {list(got)}")
        elif got != want:
            raise ExpertLoadError(f"{self._where(e)}: {what} has shape {list(got)}, expected {list(want)}")
        key = (tier, local, proj, ckpt)
        if key in self.arrived:
            raise ExpertLoadError(f"{self._where(e)}: {what} arrived twice")
        self._copy(target, spec, family, shard_id, local, loaded_weight)
        self.arrived[key] = e
        return True if return_success else None

    def _copy(self, target, spec: ParamSpec, family, shard_id, local, loaded):
        if spec.per_tensor:
            value = loaded.reshape(()).to(target.dtype)
            if family == "w13":
                target[local, 0 if shard_id == "w1" else 1] = value
            else:
                target[local] = value
            return
        r, t = self.tp_rank, self.tp_size
        if family == "w13":
            rows = spec.shape[1] // 2
            src = loaded.narrow(0, r * rows, rows) if t > 1 else loaded
            dst = target[local, :rows] if shard_id == "w1" else target[local, rows:]
        else:
            cols = spec.shape[2]
            src = loaded.narrow(1, r * cols, cols) if t > 1 else loaded
            dst = target[local]
        dst.copy_(src.to(dst.device))

    def missing(self) -> List[str]:
        """'expert E proj.tensor' for every required tensor that never arrived."""
        out = []
        for e, (tier, local) in enumerate(self.plan.remap):
            for proj in ("gate_proj", "up_proj", "down_proj"):
                for ckpt in REQUIRED[self.fmt[tier]]:
                    if (tier, local, proj, ckpt) not in self.arrived:
                        out.append(f"expert {e} {proj}.{ckpt}")
        return out

    def check_complete(self):
        lost = self.missing()
        if lost:
            shown = "; ".join(lost[:12]) + (f"; … {len(lost) - 12} more" if len(lost) > 12 else "")
            raise ExpertLoadError(
                f"{self._where()}: {len(lost)} expert tensors never arrived from the checkpoint: {shown}"
            )
        self.check_shared_global_scales()

    def check_shared_global_scales(self):
        """Gate and up of a kept NVFP4 expert are fused into one w13; the format says they
        share weight_scale_2. Different values are allowed (each half keeps its own) but
        reported, since other NVFP4 consumers (stock vLLM) would use only the gate's."""
        p = self.params.get(KEPT, {}).get("w13.weight_scale_2")
        if p is None or p.shape[0] == 0:
            return None
        diff = (p.data[:, 0] != p.data[:, 1]).nonzero().flatten().tolist()
        return [self.plan.kept[i] for i in diff]
