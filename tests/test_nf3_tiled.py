"""The NF3 tiled layout (formats/nf3_tiled.py): a lossless reordering of the nibble layout's
words and of the scales, checked element by element against its definition; the Triton
backend's choice of it; and the Triton kernels reading it (under TRITON_INTERPRET on a
CPU: the decode GEMV and the grouped tiles) against the nibble layout's bits and the
reference backend."""
import logging

import pytest
import torch

from nf3_hybrid.formats import nf3, nf3_nibble, nf3_tiled


def _words(t):
    return t.contiguous().view(torch.int32)


def test_layout_matches_its_definition_and_round_trips():
    gen = torch.Generator().manual_seed(11)
    codes = torch.randint(0, 8, (2, 48, 384), generator=gen)  # 3 row blocks, 3 windows
    nib = nf3_nibble.pack_codes(codes)
    scales = torch.randint(0, 120, (2, 48, 12), generator=gen).to(torch.uint8).view(torch.float8_e4m3fn)
    w, s = nib.clone(), scales.clone()
    nf3_tiled.tile_inplace(w, s)
    assert w.shape == nib.shape and s.shape == scales.shape and s.dtype == scales.dtype
    flat_w = _words(w).view(2, -1)
    flat_s = s.view(torch.uint8).view(2, -1)
    row_w = _words(nib).view(2, 48, 12, 3)  # [expert, row, group, word]
    row_s = scales.view(torch.uint8)
    for e in range(2):
        for n in range(48):
            for u in range(12):
                tile = (n // 16) * 3 + u // 4
                lane, r = 4 * (n % 8) + u % 4, (n % 16) // 8
                for h in range(3):
                    assert flat_w[e, tile * 192 + h * 64 + 2 * lane + r] == row_w[e, n, u, h]
                assert flat_s[e, tile * 64 + 2 * lane + r] == row_s[e, n, u]
    assert torch.equal(nf3_tiled.untiled_words(w), nib)
    assert torch.equal(nf3_tiled.untiled_scales(s).view(torch.uint8), scales.view(torch.uint8))
    # whole experts of a tiled tensor convert on their own
    assert torch.equal(nf3_tiled.untiled_words(w[1]), nib[1])


def test_bad_input_is_refused_and_left_as_it_was():
    nib = nf3_nibble.pack_codes(torch.zeros(24, 128, dtype=torch.uint8))
    scales = torch.zeros(24, 4, dtype=torch.uint8)
    before = nib.clone()
    with pytest.raises(ValueError, match="rows in 16s and K in 128s; got 24 rows, K=128"):
        nf3_tiled.tile_inplace(nib, scales)
    assert torch.equal(nib, before)
    with pytest.raises(ValueError, match="K=96"):
        nf3_tiled.untiled_words(torch.zeros(16, 36, dtype=torch.uint8))
    with pytest.raises(ValueError, match="whole 32-code groups"):
        nf3_tiled.untiled_words(torch.zeros(16, 40, dtype=torch.uint8))
    with pytest.raises(TypeError, match="uint8"):
        nf3_tiled.untiled_words(torch.zeros(16, 48, dtype=torch.int32))
    with pytest.raises(ValueError, match="do not match"):
        nf3_tiled.tile_inplace(torch.zeros(16, 48, dtype=torch.uint8), torch.zeros(16, 8, dtype=torch.uint8))
    with pytest.raises(ValueError, match="contiguous"):
        nf3_tiled.untiled_scales(torch.zeros(8, 16, dtype=torch.uint8).t())
    assert nf3_tiled.fits(32, 256) and not nf3_tiled.fits(32, 192) and not nf3_tiled.fits(40, 256)


def test_triton_backend_tiles_the_tier_where_it_fits_and_readers_follow(caplog, monkeypatch):
    """HYBRID_NF3_LAYOUT's default: a tier of whole tiles is left tiled, in place (codes and
    scales), and the reference backend's dequantized weights do not change; a second
    TierWeights over the same tensors keeps it; the nibble layout on request; shapes that
    are not whole tiles stay nibble, said once."""
    from nf3_hybrid.backends import triton_tiers
    from nf3_hybrid.backends.base import TierWeights
    from nf3_hybrid.backends.ref import dequant_w13, dequant_w2
    from nf3_hybrid.backends.triton_tiers import TritonTier, Workspace
    from tests.kernels.tiers import make_tier

    monkeypatch.setattr(triton_tiers, "_MMA_FALLBACK_LOGGED", set())
    ws = Workspace(torch.device("cpu"))
    ws.reserve(4, 2, 128, 256, 3)
    tier = make_tier("nf3", 3, 128, 256, [0, -1, 1, 2], seed=7)
    packed13, scale13 = tier.w13.clone(), tier.w13_scale.clone()
    before = [(dequant_w13(tier, e), dequant_w2(tier, e)) for e in range(3)]
    assert TritonTier(tier, ws).tiled and tier.code_layout == "tiled"
    assert torch.equal(nf3_tiled.untiled_words(tier.w13), nf3_nibble.from_packed(packed13))
    assert torch.equal(nf3_tiled.untiled_scales(tier.w13_scale).view(torch.uint8), scale13.view(torch.uint8))
    assert not torch.equal(tier.w13_scale.view(torch.uint8), scale13.view(torch.uint8))
    for e in range(3):
        assert torch.equal(dequant_w13(tier, e), before[e][0]) and torch.equal(dequant_w2(tier, e), before[e][1])
    again = TierWeights(**{k: getattr(tier, k) for k in tier.__dataclass_fields__ if k != "code_layout"})
    assert again.code_layout == "tiled" and TritonTier(again, ws, nf3_layout="nibble").tiled
    assert torch.equal(again.nf3_packed(again.w13), packed13)  # not rewritten twice

    nib = make_tier("nf3", 1, 128, 256, [0, -1, -1, -1], seed=8)
    assert not TritonTier(nib, ws, nf3_layout="nibble").tiled and nib.code_layout == "nibble"
    odd = make_tier("nf3", 1, 128, 96, [0, -1, -1, -1], seed=9)
    with caplog.at_level(logging.WARNING):
        assert not TritonTier(odd, ws).tiled
        TritonTier(make_tier("nf3", 1, 128, 96, [0, -1, -1, -1], seed=10), ws)
    assert odd.code_layout == "nibble"
    said = [r for r in caplog.records if "stay in nibble layout" in r.getMessage()]
    assert len(said) == 1 and "intermediate 96" in said[0].getMessage()
    with pytest.raises(ValueError, match="unknown kernel layout 'zigzag'"):
        TritonTier(make_tier("nf3", 1, 128, 256, [0, -1, -1, -1], seed=12), ws, nf3_layout="zigzag")


def test_the_layout_flag_is_parsed_and_checked():
    from nf3_hybrid import flags

    assert flags.parse({}).nf3_layout == "tiled"
    assert flags.parse({"HYBRID_NF3_LAYOUT": "Nibble"}).nf3_layout == "nibble"
    with pytest.raises(flags.FlagError, match="HYBRID_NF3_LAYOUT='rows'.*tiled, nibble"):
        flags.parse({"HYBRID_NF3_LAYOUT": "rows"})


@pytest.mark.parametrize("m", [3, 70])
def test_kernels_on_the_tiled_layout_give_the_nibble_bits(m, monkeypatch):
    """The same layer with its NF3 tier tiled and in nibble layout: the same bits (the same
    words reach the same arithmetic), and the reference's result. 3 tokens take the decode
    GEMV, 70 the grouped kernels (on a CPU the Triton tiles; on the H200 the mma ones)."""
    from nf3_hybrid.backends.executor import LayerExecutor
    from nf3_hybrid.backends.ref import RefBackend
    from nf3_hybrid.backends.triton_tiers import TritonTier, Workspace
    from tests.kernels.test_expert_kernels import DEV, TOL, poison, rel
    from tests.kernels.tiers import gemv_up_to, make_tier, routing, split_experts

    gemv_up_to(monkeypatch, 16)
    hidden, inter, experts = 256, 128, 12
    kmap, nmap = split_experts(experts, 4, seed=m)
    kept = make_tier("nvfp4", 4, hidden, inter, kmap, DEV, seed=m + 1)
    ws = Workspace(torch.device(DEV))
    ws.reserve(max(m, 16), 4, hidden, inter, experts - 4)
    outs = {}
    for layout in ("nibble", "tiled"):
        b = make_tier("nf3", experts - 4, hidden, inter, nmap, DEV, seed=m + 2)
        tri = LayerExecutor({0: TritonTier(kept, ws), 1: TritonTier(b, ws, nf3_layout=layout)}, hidden)
        assert b.code_layout == layout
        w, ids = routing(m, experts, 4, seed=m + 3, device=DEV)
        x = (torch.randn(m, hidden, generator=torch.Generator().manual_seed(m)) * 2).to(torch.bfloat16).to(DEV)
        poison(ws)
        outs[layout] = tri.forward(x, w, ids)
    ref = LayerExecutor({0: RefBackend(kept), 1: RefBackend(b)}, hidden)
    assert torch.isfinite(outs["tiled"]).all()
    assert torch.equal(outs["tiled"], outs["nibble"])
    assert rel(outs["tiled"], ref.forward(x, w, ids)) < TOL
