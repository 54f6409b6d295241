"""HYBRID_KEPT=b12x: the kept NVFP4 / MXFP4 tier through b12x's fused MoE (SM120/121 only).

vLLM 0.33's own b12x experts class refuses expert maps, and the kept tier is a subset
of the layer's experts, so this backend drives b12x 1.5.1's planned API itself, W4A16
(bf16 activations, the NF3 tier's contract too): ``plan_weights(quant_modes="w4a16")``
→ ``prepare_weights`` once at load; ``plan(Caps(...))`` and a scratch buffer per batch
size, made before CUDA-graph capture; per call ``bind(..., route_expert_map=local_map)``
→ ``run``. The route map sends every global expert id to its local kept index and the
NF3 tier's experts to −1, which b12x skips (it accepts an expert map on W4A16 plans
only). b12x writes the tier's routed sum in bf16; it is added into the shared fp32
output.

What has run where: :func:`b12x_source` (our tier tensors → b12x's ModelOpt-NVFP4
source convention: rows [up; gate] as b12x's W4A16 reference reads them when the
layout is "w31", block scales in 128×4-tile swizzled storage, one global scale per
expert) is checked on the CPU against b12x's own CPU reference,
``b12x.testing.reference.w4a16_reference.moe_reference_w4a16``, in ``make test``; the
MXFP4 form (same rows, linear e8m0 K/32 scales) only against b12x's scale validator —
b12x ships no CPU reference for it.
:class:`B12xKeptBackend` itself — b12x's preparation, planning and kernels — needs an
SM120/121 GPU, which we do not have: **it has never been run**. Once b12x has its
prepared copy, the hybrid method releases the kept tier's checkpoint-layout tensors
(``copies_formats``; kept while HYBRID_DEBUG needs them for its reference).
"""
from __future__ import annotations

from typing import Dict, Tuple

import torch

from ..backends.base import MXFP4, NVFP4, TierBackend, TierWeights
from ..backends.select import BackendError
from ..formats import e2m1, nvfp4
from .log import get_logger

logger = get_logger(__name__)

SOURCE_FORMAT = {NVFP4: "modelopt_nvfp4", MXFP4: "fp4_e8m0_k32"}
W13_LAYOUT = "w31"  # rows handed over as [up; gate]


def shared_global_scales(tier: TierWeights) -> Tuple[torch.Tensor, torch.Tensor]:
    """(block scales of w13, one global scale per expert). b12x fuses gate and up with
    one global scale, as vLLM does; our maker writes them equal. Where a checkpoint's
    differ, the half with the smaller one is re-expressed in the larger (block scales
    re-rounded to e4m3) and the largest relative change is logged once."""
    g = tier.w13_scale_2.float()
    common = g.max(dim=1).values
    scale = tier.w13_scale
    if torch.equal(g[:, 0], g[:, 1]):
        return scale, common
    ratio = (g / common[:, None]).repeat_interleave(tier.inter, dim=1)[..., None]  # [n, 2I, 1]
    requant = (scale.float() * ratio).to(torch.float8_e4m3fn)
    change = ((requant.float() - scale.float() * ratio).abs() / (scale.float() * ratio).clamp_min(1e-30)).max()
    logger.warning("nf3-hybrid: b12x kept tier: gate and up global scales differ; block scales re-rounded to one "
                   "global scale per expert (largest relative change %.3g)", float(change))
    return requant, common


def b12x_source(tier: TierWeights) -> Dict[str, torch.Tensor]:
    """The kept tier as b12x's W4A16 preparation takes a ModelOpt NVFP4 checkpoint
    (swizzled e4m3 K/16 block scales, one global scale per expert) or an MXFP4 one
    (linear e8m0 K/32 scales ``[E, N, K/32]``, unit global scales)."""
    if tier.fmt not in SOURCE_FORMAT:
        raise BackendError(f"HYBRID_KEPT=b12x serves NVFP4 and MXFP4 kept tiers, not {tier.fmt}")
    half = tier.inter

    def up_gate(t):
        return torch.cat([t[:, half:], t[:, :half]], dim=1)

    fp4 = dict(w1_fp4=e2m1.clear_zero_signs(up_gate(tier.w13)), w2_fp4=e2m1.clear_zero_signs(tier.w2))
    if tier.fmt == MXFP4:
        ones = torch.ones(tier.num_experts, dtype=torch.float32, device=tier.device)
        return dict(fp4,
                    w1_blockscale=up_gate(tier.w13_scale.view(torch.uint8)).contiguous(), w1_global_scale=ones,
                    w2_blockscale=tier.w2_scale.view(torch.uint8).contiguous(), w2_global_scale=ones.clone())
    w13_scale, w13_global = shared_global_scales(tier)
    return dict(fp4,
                w1_blockscale=nvfp4.swizzle_scales(up_gate(w13_scale)), w1_global_scale=w13_global.contiguous(),
                w2_blockscale=nvfp4.swizzle_scales(tier.w2_scale),
                w2_global_scale=tier.w2_scale_2.float().reshape(-1).contiguous())


class B12xKeptBackend(TierBackend):
    """Never run (no SM120/121 GPU here): see the module docstring."""

    name = "b12x"
    graph_safe = True
    copies_formats = (NVFP4, MXFP4)

    def __init__(self, tier: TierWeights, workspace=None):
        super().__init__(tier)
        from b12x.moe import fused_moe

        self._fm = fused_moe
        dev = tier.device
        if dev.type != "cuda" or torch.cuda.get_device_capability(dev)[0] != 12:
            raise BackendError("HYBRID_KEPT=b12x runs only on SM120/121 GPUs")
        self._plans: Dict[Tuple[int, int, bool], tuple] = {}
        self._experts = None
        if tier.num_experts == 0:
            return
        src = b12x_source(tier)
        ones = torch.ones(tier.num_experts, dtype=torch.float32, device=dev)
        plan = fused_moe.plan_weights(
            quant_modes="w4a16", source_format=SOURCE_FORMAT[tier.fmt], activation="silu", params_dtype=torch.bfloat16,
            num_experts=tier.num_experts, hidden_size=tier.hidden, intermediate_size=tier.inter,
            w13_layout=W13_LAYOUT)
        self._experts = fused_moe.prepare_weights(plan=plan, a1_gscale=ones, a2_gscale=ones,
                                                  params_dtype=torch.bfloat16, **src)
        self._route_map = tier.local_map.to(torch.int32).contiguous()

    def _plan(self, m: int, topk: int, on_input: bool):
        key = (m, topk, on_input)
        got = self._plans.get(key)
        if got is not None:
            return got
        if torch.cuda.is_current_stream_capturing():
            raise RuntimeError(f"nf3-hybrid: b12x kept tier has no plan for {m} tokens; plans are made before "
                               "CUDA-graph capture (vLLM's warm-up runs every captured size first)")
        fm = self._fm
        plan = fm.plan(fm.Caps(
            max_tokens=m, num_topk=topk, device=self.tier.device, weight_plan=self._experts.plan,
            core_token_counts=(m,), route_num_experts=int(self._route_map.numel()), quant_mode="w4a16",
            apply_router_weight_on_input=on_input, frozen=True))
        (spec,) = plan.scratch_specs()
        scratch = torch.empty(spec.shape, dtype=spec.dtype, device=self.tier.device)
        out = torch.empty((m, self.tier.hidden), dtype=torch.bfloat16, device=self.tier.device)
        self._plans[key] = got = (plan, scratch, out)
        return got

    def run_into(self, out, x, topk_weights, topk_ids, weights_on_input=False):
        if self._experts is None:
            return
        m, topk = topk_ids.shape
        plan, scratch, result = self._plan(m, topk, bool(weights_on_input))
        binding = self._fm.bind(
            plan, scratch=scratch, a=x, experts=self._experts, topk_weights=topk_weights.float().contiguous(),
            topk_ids=topk_ids.to(torch.int32).contiguous(), output=result, input_scales_static=True,
            unit_scale_contract=True, route_expert_map=self._route_map)
        self._fm.run(binding=binding)
        out += result.float()
