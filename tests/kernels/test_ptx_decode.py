"""The decode GEMV's inline-PTX bit logic, checked on the CPU: the same instruction lists
that are rendered into the kernel are interpreted in Python and compared with the format
decoders (the Triton interpreter cannot run inline assembly; the GPU tests run it)."""
import re

import pytest
import torch

from nf3_hybrid.formats import e2m1, nf3, nf3_nibble
from nf3_hybrid.kernels import ptx_decode


def _fp16_values(bits):
    return torch.tensor(bits, dtype=torch.int32).to(torch.int16).view(torch.float16).float()


@pytest.mark.parametrize("codebook", [None, (-1.3, -0.7, -0.31, -0.05, 0.02, 0.4, 0.77, 2.5)])
def test_nf3_groups_decode_to_the_codebook(codebook):
    """The group block (decode GEMV) on the nibble layout of codes packed like a
    checkpoint's, and the one-word values block (grouped tiles) on its three stored words,
    whose nibbles' top bits hold the fourth word's codes and must be ignored."""
    levels = nf3.validate_codebook(codebook)
    words = ptx_decode.nf3_table_words(levels)
    gen = torch.Generator().manual_seed(0)
    codes = torch.randint(0, 8, (64, 32), generator=gen)
    nib = nf3_nibble.from_packed(nf3.pack(codes))  # [64, 12] bytes: three 32-bit words per row
    want = torch.tensor(levels, dtype=torch.float32).half().float()[codes]
    for r in range(codes.shape[0]):
        abc = [int.from_bytes(bytes(nib[r, 4 * j: 4 * j + 4].tolist()), "little") for j in range(3)]
        got = _fp16_values(ptx_decode.emulate_nf3_group(abc, words))
        assert torch.equal(got, want[r]), (r, got, want[r])
        for j in range(3):
            got = _fp16_values(ptx_decode.emulate("nf3", abc[j], words))
            assert torch.equal(got, want[r, 8 * j: 8 * j + 8]), (r, j)
    # the fourth word's codes really are in the top bits: the test above would not see a
    # block that ignored them if they were all zero
    assert int((nib & 0x88).count_nonzero()) > 0


def test_e2m1_words_decode_like_the_format():
    gen = torch.Generator().manual_seed(1)
    codes = torch.randint(0, 16, (256, 8), generator=gen)
    packed = e2m1.pack(codes)  # [256, 4] bytes, even column in the low nibble
    want = e2m1.decode(codes)
    for r in range(codes.shape[0]):
        word = int.from_bytes(bytes(packed[r].tolist()), "little")
        got = _fp16_values(ptx_decode.emulate("e2m1", word))
        # -0 stays -0: compare bits too
        assert torch.equal(got, want[r]) and torch.equal(torch.signbit(got), torch.signbit(want[r])), r


def test_rendered_ptx_uses_each_operand():
    for asm, cons in ((ptx_decode.NF3_UNIT_DOT_ASM, ptx_decode.NF3_UNIT_DOT_CONSTRAINTS),
                      (ptx_decode.E2M1_DOT_ASM, ptx_decode.E2M1_DOT_CONSTRAINTS)):
        n = len(cons.split(","))
        used = {int(m) for m in re.findall(r"\$(\d+)", asm)}
        assert used == set(range(n)), (used, n)
        assert asm.count("{") == asm.count("}")


def test_table_words_need_eight_levels():
    with pytest.raises(ValueError, match="8 levels"):
        ptx_decode.nf3_table_words([0.0] * 7)
    # fit int32 kernel arguments
    assert all(-(2 ** 31) <= w < 2 ** 31 for w in ptx_decode.nf3_table_words(nf3.CODEBOOK))


def test_grouped_tile_asks_for_registers_only_where_it_can():
    from nf3_hybrid.kernels.expert_mlp import FMT_NF3, FMT_NVFP4, ptx_words

    words = ptx_decode.nf3_table_words(nf3.CODEBOOK)
    assert ptx_words(FMT_NF3, {"ptx": 1}, words, dot_fp32=False) == words
    assert ptx_words(FMT_NF3, {}, words, dot_fp32=False) is None  # the measured default: table lookups
    assert ptx_words(FMT_NF3, {"ptx": 1}, words, dot_fp32=True) is None  # interpreter: no inline assembly
    assert ptx_words(FMT_NVFP4, {"ptx": 1}, None, dot_fp32=False) is None
    assert ptx_words(FMT_NVFP4, {"ptx4": 1}, None, dot_fp32=False) == tuple(ptx_decode.E2M1_TABLE_WORDS) + (0,)
    assert ptx_words(FMT_NVFP4, {"ptx4": 1}, None, dot_fp32=True) is None
    # the values variant renders the same instruction list, returning the eight halves
    used = {int(m) for m in re.findall(r"\$(\d+)", ptx_decode.NF3_VALUES_ASM)}
    assert used == set(range(13)) and ptx_decode.NF3_VALUES_CONSTRAINTS.count("=h") == 8
    used = {int(m) for m in re.findall(r"\$(\d+)", ptx_decode.E2M1_VALUES_ASM)}
    assert used == set(range(12)) and ptx_decode.E2M1_VALUES_CONSTRAINTS.count("=h") == 8
