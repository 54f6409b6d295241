"""HYBRID_KEPT=b12x_nf3: both tiers of a layer in one launch of b12x 1.1.0's two-tier
W4A16 fused MoE — tier 0 the kept NVFP4 experts ("packed"), tier 1 the NF3 experts
("nf3_2p1") — on SM120/121 only.

b12x 1.5.1 (the pinned release) has no NF3 layout; 1.1.0 has it, behind internal names
(``b12x.moe._shared.kernels.w4a16``): ``prepare_w4a16_modelopt_nvfp4_weights``,
``prepare_nf3_moe_weights``, ``build_w4a16_tier_local_map``, ``run_w4a16_moe_hybrid``.
``backends.b12x_support.capabilities`` checks that the installed b12x exports all of
them before this backend is chosen; `scripts/install_overlay.sh --profile b12x-nf3`
installs that release (it conflicts with vLLM 0.33's nvidia-cutlass-dsl pin: see README).

What this module has to get right, and how each piece was checked:
- the tile configuration: b12x's hybrid kernel takes one pinned (FC1 tile K/N, FC2 tile
  K/N) for both tiers, and the NF3 packing depends on its N tiles. :func:`tile_config`
  asks b12x's own selector for the NF3 tier and checks that the NVFP4 tier fits the same
  tiles (pure Python in b12x: run on the CPU in the b12x 1.1.0 side environment).
- the NF3 inputs: integer codes [E, 2I, H] with rows [up; gate] (the fused-row order
  b12x's W4A16 kernels consume, as for the kept tier in ``vllm_patch/b12x_kept.py``) and
  float K/32 scales; b12x applies its own 2**-4 / 2**116 scale convention when packing.
  :func:`nf3_inputs` is checked on the CPU (codebook[code] × scale equals our
  dequantized tier) and b12x 1.1.0's packers accept it with the chosen tiles.
- the expert map: global id → (tier << 8) | local id, built by b12x from each tier's
  global ids (:func:`tier_global_ids`; checked on the CPU).
- what the kernel cannot do is refused at load (:func:`check_supported`): a checkpoint
  codebook other than b12x's built-in NF3 levels, an MXFP4 kept tier, an empty tier.
- both tiers' checkpoint-layout tensors are released by the hybrid method once this
  backend holds b12x's copies (``copies_formats``).

**Never run**: b12x's preparation, compilation and kernels need an SM120/121 GPU, which
we do not have. Not known until the first run there: whether [up; gate] is also what
the hybrid kernel's NF3 tier expects (derived from the kept-tier contract, not tested),
and the speed.
"""
from __future__ import annotations

from typing import Dict, List, Tuple

import torch

from ..formats import nf3
from .base import NF3, NVFP4, TierBackend, TierWeights
from .select import BackendError

W4A16 = "b12x.moe._shared.kernels.w4a16"
MOE_BLOCK_SIZE = 8  # the hybrid kernel's v1 geometry (TC-decode, direct top-k)


def check_supported(kept: TierWeights, nf3_tier: TierWeights) -> None:
    """What b12x 1.1.0's two-tier kernel can serve; anything else is a load-time error."""
    if kept.fmt != NVFP4:
        raise BackendError(f"HYBRID_KEPT=b12x_nf3 serves NVFP4 kept tiers (b12x's hybrid tier 0), not {kept.fmt}; "
                           "use HYBRID_KEPT=b12x with HYBRID_NF3=fast")
    if nf3_tier.fmt != NF3:
        raise BackendError(f"HYBRID_KEPT=b12x_nf3: the second tier must be NF3, not {nf3_tier.fmt}")
    if kept.num_experts == 0 or nf3_tier.num_experts == 0:
        raise BackendError("HYBRID_KEPT=b12x_nf3 needs experts in both tiers of every hybrid layer (b12x's hybrid "
                           f"kernel has no empty tier); this layer has {kept.num_experts} kept and "
                           f"{nf3_tier.num_experts} NF3 experts. Use HYBRID_KEPT=b12x with HYBRID_NF3=fast")
    if tuple(nf3.validate_codebook(nf3_tier.codebook)) != tuple(nf3.CODEBOOK):
        raise BackendError("HYBRID_KEPT=b12x_nf3: b12x's NF3 kernel has the standard NF3 levels built in; this "
                           f"checkpoint's nf3_codebook {nf3_tier.codebook} differs. Use HYBRID_NF3=fast")


def tier_global_ids(tier: TierWeights) -> List[int]:
    """Global expert id of each local expert, in the order the tier's weights are stored."""
    lm = tier.local_map.cpu().tolist()
    ids = [-1] * tier.num_experts
    for g, local in enumerate(lm):
        if local >= 0:
            ids[local] = g
    if -1 in ids:
        raise BackendError(f"tier local map covers {tier.num_experts - ids.count(-1)} of {tier.num_experts} experts")
    return ids


def nf3_inputs(tier: TierWeights) -> Dict[str, torch.Tensor]:
    """The NF3 tier as b12x's ``prepare_nf3_moe_weights`` takes it: uint8 codes
    [E, 2I, H] (rows [up; gate]) and [E, H, I], float K/32 scales beside them."""
    half = tier.inter

    def up_gate(t):
        return torch.cat([t[:, half:], t[:, :half]], dim=1)

    return dict(w13_codes=up_gate(nf3.unpack(tier.nf3_packed(tier.w13))).contiguous(),
                w13_scale=up_gate(tier.nf3_scales(tier.w13_scale).float()).contiguous(),
                w2_codes=nf3.unpack(tier.nf3_packed(tier.w2)).contiguous(),
                w2_scale=tier.nf3_scales(tier.w2_scale).float().contiguous())


def tile_config(kernel_module, hidden: int, inter: int, topk: int, sms: int, max_shared_mem: int) -> Tuple[int, ...]:
    """(FC1 tile K, FC1 tile N, FC2 tile K, FC2 tile N) from b12x's own selector for the
    NF3 tier, checked to fit the NVFP4 tier too (the kernel shares them)."""
    tiles = []
    for n, k in ((2 * inter, hidden), (hidden, inter)):
        tile_k, tile_n, threads, _ = kernel_module._select_tile_config(
            problem_m=1, problem_n=n, problem_k=k, top_k=topk, moe_block_size=MOE_BLOCK_SIZE, sms=sms,
            max_shared_mem=max_shared_mem, scale_format="e4m3_k32", weight_layout="nf3_2p1", weight_bits=3)
        if not kernel_module._candidate_tile_fits(
                problem_n=n, problem_k=k, cta_m_blocks=1, tile_n=tile_n, tile_k=tile_k, cta_threads=threads,
                max_shared_mem=max_shared_mem - 512, scale_format="e4m3_k16", weight_layout="packed", weight_bits=4):
            raise BackendError(f"HYBRID_KEPT=b12x_nf3: b12x's tile {tile_k}x{tile_n} for the NF3 tier (N={n}, K={k}) "
                               "does not fit the NVFP4 tier; use HYBRID_KEPT=b12x with HYBRID_NF3=fast")
        tiles += [tile_k, tile_n]
    return tuple(tiles)


class B12xNF3Backend(TierBackend):
    """Both tiers (constructed with the kept and the NF3 tier). Never run: see above."""

    name = "b12x_nf3"
    graph_safe = True
    copies_formats = (NVFP4, NF3)

    def __init__(self, kept: TierWeights, nf3_tier: TierWeights):
        super().__init__(kept)
        import importlib

        from ..vllm_patch.b12x_kept import b12x_source

        dev = kept.device
        if dev.type != "cuda" or torch.cuda.get_device_capability(dev)[0] != 12:
            raise BackendError("HYBRID_KEPT=b12x_nf3 runs only on SM120/121 GPUs")
        check_supported(kept, nf3_tier)
        prep = importlib.import_module(f"{W4A16}.prepare")
        self._kernel = importlib.import_module(f"{W4A16}.kernel")
        props = torch.cuda.get_device_properties(dev)
        smem = int(getattr(props, "shared_memory_per_block_optin", 0)) or 101376
        self._tiles = tile_config(self._kernel, kept.hidden, kept.inter, 8, int(props.multi_processor_count), smem)
        src = b12x_source(kept)
        self._tier0 = prep.prepare_w4a16_modelopt_nvfp4_weights(
            src["w1_fp4"], src["w1_blockscale"], src["w1_global_scale"],
            src["w2_fp4"], src["w2_blockscale"], src["w2_global_scale"], activation="silu", w13_layout="w31")
        self._tier1 = prep.prepare_nf3_moe_weights(**nf3_inputs(nf3_tier), activation="silu",
                                                   fc1_tile_n=self._tiles[1], fc2_tile_n=self._tiles[3])
        self._map = self._kernel.build_w4a16_tier_local_map(
            tier_global_ids(kept), tier_global_ids(nf3_tier), map_slots=int(kept.local_map.numel()), device=dev)
        self._buffers: Dict[Tuple[int, int], tuple] = {}

    def _scratch(self, m: int, topk: int):
        got = self._buffers.get((m, topk))
        if got is None:
            if torch.cuda.is_current_stream_capturing():
                raise RuntimeError(f"nf3-hybrid: b12x_nf3 has no buffers for {m} tokens; they are made before "
                                   "CUDA-graph capture (vLLM's warm-up runs every captured size first)")
            t, dev = self.tier, self.tier.device
            rows = m * topk
            got = (torch.empty(rows * 2 * t.inter, dtype=torch.bfloat16, device=dev),
                   torch.empty(rows * t.inter, dtype=torch.bfloat16, device=dev),
                   torch.empty((m, t.hidden), dtype=torch.bfloat16, device=dev))
            self._buffers[(m, topk)] = got
        return got

    def run_into(self, out, x, topk_weights, topk_ids, weights_on_input=False):
        if weights_on_input:
            raise BackendError("HYBRID_KEPT=b12x_nf3: b12x's hybrid kernel cannot apply router weights on the input "
                               "(this model asks for it); use HYBRID_KEPT=b12x with HYBRID_NF3=fast")
        m, topk = topk_ids.shape
        cache13, cache2, result = self._scratch(m, topk)
        self._kernel.run_w4a16_moe_hybrid(
            x, self._tier0, self._tier1, topk_weights.float().contiguous(), topk_ids.to(torch.int32).contiguous(),
            self._map, activation="silu", intermediate_cache13=cache13, intermediate_cache2=cache2, output=result,
            force_tile_config=self._tiles, size_m=m)
        out += result.float()
