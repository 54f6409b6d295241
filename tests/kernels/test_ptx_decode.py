"""The decode GEMV's inline-PTX bit logic, checked on the CPU: the same instruction lists
that are rendered into the kernel are interpreted in Python and compared with the format
decoders (the Triton interpreter cannot run inline assembly; the GPU tests run it)."""
import re
from fractions import Fraction

import numpy as np
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


def _pairs(x):
    """fp16 activations → the 32-bit pair words the blocks take (2q low, 2q + 1 high)."""
    bits = [int(b) & 0xFFFF for b in x.half().view(torch.int16).tolist()]
    return [bits[2 * q] | (bits[2 * q + 1] << 16) for q in range(len(bits) // 2)]


def _fp16_sum_model(values, x, words_per_sum):
    """The dot as the blocks are specified, written out independently of their instruction
    lists: activation i meets weight i; the products of each half (even / odd i) summed in
    fp16 in order — the first rounded on its own, each next one fused with the sum so far
    — over ``words_per_sum`` words of eight, then both halves in fp32, the sums in order."""
    def rn16(q):
        return Fraction(float(np.float16(float(q)))) if abs(q) < 65520 else None

    total = None
    for start in range(0, len(values), 8 * words_per_sum):
        halves = []
        for h in (0, 1):
            acc = None
            for i in range(start + h, min(start + 8 * words_per_sum, len(values)), 2):
                prod = Fraction(float(values[i])) * Fraction(float(x[i]))
                acc = rn16(prod if acc is None else prod + acc)
            halves.append(np.float32(float(acc)))
        part = halves[0] + halves[1]
        total = part if total is None else np.float32(total + part)
    return float(total)


@pytest.mark.parametrize("block", ["nf3_group", "nf3_group4", "e2m1_word", "e2m1_pair"])
def test_dot_blocks_meet_each_weight_with_its_activation(block):
    """The decode GEMV's dot blocks, run instruction by instruction (``emulate_dot``):
    equal to the specified fp16 summation of the decoded weights times their activations,
    and within its rounding of the float64 dot. A block that paired a value with a
    neighbour's activation, or summed a word twice, fails both."""
    gen = torch.Generator().manual_seed(5)
    levels = nf3.validate_codebook(None)
    tables = ptx_decode.nf3_table_words(levels)
    for trial in range(40):
        if block.startswith("nf3_group"):
            codes = torch.randint(0, 8, (32,), generator=gen)
            nib = nf3_nibble.from_packed(nf3.pack(codes[None]))[0]
            words = [int.from_bytes(bytes(nib[4 * j: 4 * j + 4].tolist()), "little") for j in range(3)]
            values = torch.tensor(levels, dtype=torch.float32).half().float()[codes]
            # the built-in block sums two words in fp16, tile option nf3x4's all four
            asm, per_sum = ((ptx_decode.NF3_UNIT4_DOT_ASM, 4) if block == "nf3_group4"
                            else (ptx_decode.NF3_UNIT_DOT_ASM, ptx_decode.UNIT_FP16_WORDS))
            extra = list(tables)
        else:
            n = 2 if block == "e2m1_pair" else 1
            codes = torch.randint(0, 16, (8 * n,), generator=gen)
            packed = e2m1.pack(codes.view(n, 8))
            words = [int.from_bytes(bytes(packed[j].tolist()), "little") for j in range(n)]
            values = e2m1.decode(codes)
            asm = ptx_decode.E2M1_PAIR_DOT_ASM if n == 2 else ptx_decode.E2M1_DOT_ASM
            per_sum, extra = 2, list(ptx_decode.E2M1_TABLE_WORDS)
        x = (torch.randn(values.numel(), generator=gen) * 3).half().float()
        pairs = _pairs(x)
        if block == "e2m1_pair":  # the block takes word 0's four pairs, then word 1's
            args = words + pairs[:4] + pairs[4:] + extra
        else:
            args = words + pairs + extra
        got = ptx_decode.emulate_dot(asm, args)
        assert got == _fp16_sum_model(values.tolist(), x.tolist(), per_sum), (block, trial)
        exact = float((values.double() * x.double()).sum())
        bound = 2.0 ** -10 * float((values.double() * x.double()).abs().sum()) * 8
        assert abs(got - exact) <= bound, (block, trial, got, exact)


def test_fp16_rounding_of_the_emulator_is_to_nearest_even():
    """The emulator's one rounding per f16 instruction: exact ties go to the even
    significand, beyond the largest finite value to infinity, tiny results stay subnormal."""
    one = Fraction(1)
    assert ptx_decode._fp16_round(one + Fraction(1, 2048)) == 0x3C00  # tie → even (1.0)
    assert ptx_decode._fp16_round(one + Fraction(3, 2048)) == 0x3C02  # tie → even (1 + 2 ulp)
    assert ptx_decode._fp16_round(-(one + Fraction(3, 4096))) == 0xBC01  # below the tie
    assert ptx_decode._fp16_round(Fraction(65520)) == 0x7C00 and ptx_decode._fp16_round(Fraction(65519)) == 0x7BFF
    assert ptx_decode._fp16_round(Fraction(3, 2 ** 25)) == 0x0002  # 1.5 × 2**-24: tie → 2 × 2**-24
    with pytest.raises(ValueError, match="not finite"):
        ptx_decode._fp16_exact(0x7C00)


def test_rendered_ptx_uses_each_operand():
    for asm, cons in ((ptx_decode.NF3_UNIT_DOT_ASM, ptx_decode.NF3_UNIT_DOT_CONSTRAINTS),
                      (ptx_decode.NF3_UNIT4_DOT_ASM, ptx_decode.NF3_UNIT_DOT_CONSTRAINTS),
                      (ptx_decode.E2M1_DOT_ASM, ptx_decode.E2M1_DOT_CONSTRAINTS),
                      (ptx_decode.E2M1_PAIR_DOT_ASM, ptx_decode.E2M1_PAIR_DOT_CONSTRAINTS)):
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
