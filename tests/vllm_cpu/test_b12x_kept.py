"""HYBRID_KEPT=b12x on a GPU-less machine: what runs on a CPU is checked against b12x
1.5.1's own code — its scale unswizzlers and its CPU reference of the W4A16 NVFP4 MoE.
The backend's GPU path (b12x preparation, plans, kernels) needs SM120/121: not run."""
import logging

import pytest
import torch

from nf3_hybrid.backends.base import MXFP4, NVFP4
from nf3_hybrid.backends.ref import RefBackend
from nf3_hybrid.backends.select import BackendError, DeviceInfo, choose
from nf3_hybrid.formats import e2m1, nvfp4
from nf3_hybrid.vllm_patch import b12x_kept
from tests.kernels.tiers import make_tier, routing

OK = lambda m: None  # noqa: E731


def test_swizzled_scales_are_what_b12x_unswizzles():
    from b12x.moe._shared.kernels.w4a16.prepare import unswizzle_expert_scales
    from b12x.testing.reference.w4a16_reference import unswizzle_block_scale

    s = torch.randint(0, 126, (3, 200, 24), dtype=torch.uint8).view(torch.float8_e4m3fn)
    sw = nvfp4.swizzle_scales(s)
    assert sw.shape == (3, 256, 24)
    for e in range(3):
        assert torch.equal(unswizzle_block_scale(sw[e], 200, 24), s[e].float())
    assert torch.equal(unswizzle_expert_scales(sw, rows=200, cols=24 * 16).view(torch.uint8), s.view(torch.uint8))
    assert torch.equal(nvfp4.unswizzle_scales(sw, 200, 24).view(torch.uint8), s.view(torch.uint8))


def test_zero_signs_cleared_values_kept():
    b = torch.arange(256, dtype=torch.int32).to(torch.uint8)
    c = e2m1.clear_zero_signs(b)
    assert torch.equal(e2m1.decode(e2m1.unpack(c)), e2m1.decode(e2m1.unpack(b)))
    assert not bool(((c & 0x0F) == 8).any()) and not bool(((c >> 4) == 8).any())


@pytest.mark.parametrize("m,topk", [(1, 4), (5, 8)])
def test_converted_tier_through_b12x_cpu_reference_matches_ours(m, topk):
    from b12x.testing.reference.w4a16_reference import moe_reference_w4a16

    E, n_kept, H, I = 16, 6, 128, 64
    kmap = [-1] * E
    for i, g in enumerate(range(3, 3 + n_kept)):
        kmap[g] = i
    tier = make_tier("nvfp4", n_kept, H, I, kmap, "cpu", seed=m)
    # this checkpoint convention: one global scale for gate and up (what the maker writes)
    tier.w13_scale_2[:, 1] = tier.w13_scale_2[:, 0]
    w, ids = routing(m, E, topk, seed=m, device="cpu")
    x = (torch.randn(m, H, generator=torch.Generator().manual_seed(m))).to(torch.bfloat16)
    want = torch.zeros(m, H)
    RefBackend(tier).run_into(want, x, w, ids)
    src = b12x_kept.b12x_source(tier)
    local = tier.local_map[ids.long()]
    got = moe_reference_w4a16(
        x, src["w1_fp4"], src["w1_blockscale"], src["w1_global_scale"], src["w2_fp4"], src["w2_blockscale"],
        src["w2_global_scale"], local.clamp_min(0).to(torch.int32), torch.where(local >= 0, w, torch.zeros_like(w)),
        n_kept, H, I, activation="silu")
    assert float((got.float() - want).norm() / want.norm()) < 2e-2


def test_gate_and_up_scales_that_differ_are_folded_into_one(caplog):
    tier = make_tier("nvfp4", 3, 128, 64, [0, 1, 2, -1], "cpu", seed=4)
    tier.w13_scale_2[:, 1] = tier.w13_scale_2[:, 0] * 0.37
    before = torch.stack([nvfp4.dequantize(tier.w13[e], tier.w13_scale[e], 1.0) for e in range(3)])
    with caplog.at_level(logging.WARNING):
        scale, common = b12x_kept.shared_global_scales(tier)
    assert any("global scales differ" in r.getMessage() for r in caplog.records)
    assert torch.equal(common, tier.w13_scale_2.max(dim=1).values)
    for e in range(3):
        want = torch.cat([before[e, :64] * tier.w13_scale_2[e, 0], before[e, 64:] * tier.w13_scale_2[e, 1]])
        got = nvfp4.dequantize(tier.w13[e], scale[e], common[e])
        # e4m3 re-rounding of the block scales: within half an e4m3 step (2**-4)
        assert float((got - want).norm() / want.norm()) < 2 ** -4


def test_mxfp4_tier_in_the_form_b12x_validates():
    """No CPU reference for b12x's e8m0 path: its own validator takes our MXFP4 scales
    ([E, N, K/32] e8m0 bytes), rows in the order the NVFP4 test above pins down."""
    from b12x.moe._shared.kernels.w4a16.prepare import _validate_e8m0_k32_scales

    tier = make_tier("mxfp4_e8m0k32", 2, 128, 64, [0, 1], "cpu", seed=1)
    src = b12x_kept.b12x_source(tier)
    _validate_e8m0_k32_scales(src["w1_blockscale"], rows=128, cols=128, name="w13")
    _validate_e8m0_k32_scales(src["w2_blockscale"], rows=128, cols=64, name="w2")
    assert torch.equal(src["w1_blockscale"][:, :64], tier.w13_scale.view(torch.uint8)[:, 64:])  # up first
    assert torch.equal(src["w1_global_scale"], torch.ones(2))


def test_non_sm120_is_refused_by_the_backend_itself():
    nv = make_tier("nvfp4", 2, 128, 64, [0, 1], "cpu", seed=1)
    with pytest.raises(BackendError, match="runs only on SM120/121"):
        b12x_kept.B12xKeptBackend(nv)


def test_selection_on_sm120_with_this_build():
    sm120 = DeviceInfo("cuda", (12, 0), "NVIDIA RTX PRO 6000")
    c = choose("auto", "fast", sm120, NVFP4, probe=OK)
    assert (c.kept, c.nf3) == ("b12x", "triton")
    c = choose("auto", "fast", sm120, MXFP4, probe=OK)
    assert (c.kept, c.nf3) == ("b12x", "triton") and "MXFP4 kept tier through b12x" in c.reason
