"""The NF3 nibble layout the Triton kernels read (formats/nf3_nibble.py): a lossless
rewrite of the checkpoint's packing, checked bit by bit against the layout's definition."""
import pytest
import torch

from nf3_hybrid.formats import nf3, nf3_nibble


def _word(row, j):
    return int.from_bytes(bytes(row[4 * j: 4 * j + 4].tolist()), "little")


def test_layout_matches_its_definition_and_round_trips():
    gen = torch.Generator().manual_seed(3)
    codes = torch.randint(0, 8, (6, 5, 96), generator=gen)
    packed = nf3.pack(codes)
    nib = nf3_nibble.from_packed(packed)
    assert nib.shape == packed.shape and nib.dtype == torch.uint8
    for r in range(6):
        for g in range(3):  # three 32-code groups per row
            row, c = nib[r, 0, 12 * g: 12 * g + 12], codes[r, 0, 32 * g: 32 * g + 32].tolist()
            a, b, cw = (_word(row, j) for j in range(3))
            for i in range(8):
                assert [(w >> 4 * i) & 7 for w in (a, b, cw)] == [c[i], c[8 + i], c[16 + i]]
                top = sum(((w >> (4 * i + 3)) & 1) << bit for bit, w in enumerate((a, b, cw)))
                assert top == c[24 + i]
    assert torch.equal(nf3_nibble.unpack_codes(nib), codes.to(torch.uint8))
    assert torch.equal(nf3_nibble.to_packed(nib), packed)


def test_in_place_rewrite_in_steps_equals_the_whole():
    gen = torch.Generator().manual_seed(4)
    packed = nf3.pack(torch.randint(0, 8, (7, 11, 64), generator=gen))
    t = packed.clone()
    nf3_nibble.repack_inplace(t, rows_per_step=5)  # 77 rows in uneven steps
    assert torch.equal(t, nf3_nibble.from_packed(packed))


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="32-code groups"):
        nf3_nibble.from_packed(torch.zeros(2, 9, dtype=torch.uint8))
    with pytest.raises(TypeError, match="uint8"):
        nf3_nibble.unpack_codes(torch.zeros(2, 12, dtype=torch.int32))
    with pytest.raises(ValueError, match="0..7"):
        nf3_nibble.pack_codes(torch.full((1, 32), 8))


def test_triton_backend_rewrites_the_tier_once_and_readers_follow():
    """The Triton backend takes an NF3 tier in the checkpoint's packing and leaves it in
    nibble layout, in place; the reference backend's dequantized weights do not change; a
    second TierWeights over the same tensors (and a second backend) sees the layout and does
    not rewrite it again; an unknown layout is refused."""
    from nf3_hybrid.backends.base import TierWeights
    from nf3_hybrid.backends.ref import dequant_w13, dequant_w2
    from nf3_hybrid.backends.triton_tiers import TritonTier, Workspace
    from tests.kernels.tiers import make_tier

    tier = make_tier("nf3", 3, 64, 32, [0, -1, 1, 2], seed=5)
    packed13, packed2 = tier.w13.clone(), tier.w2.clone()
    before = [(dequant_w13(tier, e), dequant_w2(tier, e)) for e in range(3)]
    ws = Workspace(torch.device("cpu"))
    ws.reserve(4, 2, 64, 32, 3)
    TritonTier(tier, ws)
    assert tier.code_layout == "nibble"
    assert torch.equal(tier.w13, nf3_nibble.from_packed(packed13))
    assert torch.equal(tier.w2, nf3_nibble.from_packed(packed2))
    for e in range(3):
        assert torch.equal(dequant_w13(tier, e), before[e][0]) and torch.equal(dequant_w2(tier, e), before[e][1])
    again = TierWeights(**{k: getattr(tier, k) for k in tier.__dataclass_fields__ if k != "code_layout"})
    assert again.code_layout == "nibble"
    TritonTier(again, ws)
    assert torch.equal(again.w13, nf3_nibble.from_packed(packed13))  # not rewritten twice
    odd = make_tier("nf3", 1, 64, 32, [0, -1, -1, -1], seed=6)
    odd.code_layout = "zigzag"
    with pytest.raises(ValueError, match="unknown code layout 'zigzag'"):
        TritonTier(odd, ws)
