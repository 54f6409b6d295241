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


@pytest.mark.parametrize("fma_shifts", [True, False])
@pytest.mark.parametrize("codebook", [None, (-1.3, -0.7, -0.31, -0.05, 0.02, 0.4, 0.77, 2.5)])
def test_nf3_groups_decode_to_the_codebook(codebook, fma_shifts):
    """The group block (decode GEMV) on the nibble layout of codes packed like a
    checkpoint's, and the one-word values block (grouped tiles) on its three stored words,
    whose nibbles' top bits hold the fourth word's codes and must be ignored — with the
    shifts as shifts and as multiplies (ptx_decode.SHIFTS_ON_FMA)."""
    levels = nf3.validate_codebook(codebook)
    words = ptx_decode.nf3_table_words(levels)
    gen = torch.Generator().manual_seed(0)
    codes = torch.randint(0, 8, (64, 32), generator=gen)
    nib = nf3_nibble.from_packed(nf3.pack(codes))  # [64, 12] bytes: three 32-bit words per row
    want = torch.tensor(levels, dtype=torch.float32).half().float()[codes]
    for r in range(codes.shape[0]):
        abc = [int.from_bytes(bytes(nib[r, 4 * j: 4 * j + 4].tolist()), "little") for j in range(3)]
        got = _fp16_values(ptx_decode.emulate_nf3_group(abc, words, fma_shifts))
        assert torch.equal(got, want[r]), (r, got, want[r])
        for j in range(3):
            got = _fp16_values(ptx_decode.emulate("nf3", abc[j], words, fma_shifts))
            assert torch.equal(got, want[r, 8 * j: 8 * j + 8]), (r, j)
    # the fourth word's codes really are in the top bits: the test above would not see a
    # block that ignored them if they were all zero
    assert int((nib & 0x88).count_nonzero()) > 0


@pytest.mark.parametrize("fma_shifts", [True, False])
def test_e2m1_words_decode_like_the_format(fma_shifts):
    gen = torch.Generator().manual_seed(1)
    codes = torch.randint(0, 16, (256, 8), generator=gen)
    packed = e2m1.pack(codes)  # [256, 4] bytes, even column in the low nibble
    want = e2m1.decode(codes)
    for r in range(codes.shape[0]):
        word = int.from_bytes(bytes(packed[r].tolist()), "little")
        got = _fp16_values(ptx_decode.emulate("e2m1", word, fma_shifts=fma_shifts))
        # -0 stays -0: compare bits too
        assert torch.equal(got, want[r]) and torch.equal(torch.signbit(got), torch.signbit(want[r])), r


def test_shifts_become_multiplies_in_the_blocks_named():
    """Each block rendered with its shifts as mul.hi / mul.lo has otherwise the same
    instructions; the exported blocks are the default rendering, which moves the decode
    GEMV's blocks (SHIFTS_ON_FMA) and leaves the grouped kernels' as written."""
    on, off = ptx_decode.render(True), ptx_decode.render(False)
    assert on.keys() == off.keys() == set(ptx_decode.BLOCKS)
    shift = r"\bsh[lr]\.b32"
    for name in on:
        assert not re.search(shift, on[name]), name
        shifts = re.findall(shift, off[name])
        assert shifts, name  # each block has shifts to move
        assert len(re.findall(r"\bmul\.(?:hi|lo)\.u32", on[name])) == len(shifts), name
        strip = [ln for ln in on[name].splitlines() if not re.search(r"\bmul\.(?:hi|lo)\.u32", ln)]
        assert strip == [ln for ln in off[name].splitlines() if not re.search(shift, ln)], name
    default = ptx_decode.render()
    assert ptx_decode.SHIFTS_ON_FMA == {"NF3_UNIT_DOT_ASM", "E2M1_DOT_ASM"}
    for name in ptx_decode.BLOCKS:
        assert default[name] == (on if name in ptx_decode.SHIFTS_ON_FMA else off)[name], name
        assert getattr(ptx_decode, name) == default[name], name
    with pytest.raises(ValueError, match="no PTX blocks named .'NF3_DOT'"):
        ptx_decode.render({"NF3_DOT"})
    # a shift with no multiply form is refused, not mistranslated
    with pytest.raises(ValueError, match="shift by 0"):
        ptx_decode._fma_shifts("shr.b32 t, w, 0;")
    # and each form computes its shift, on the interpreter of the instruction lists
    for n in (1, 3, 16, 31):
        for v in (0, 1, 0x80000001, 0xDEADBEEF, 0xFFFFFFFF):
            regs = {"w": v}
            ptx_decode._run(ptx_decode._fma_shifts(f"shr.b32 a, w, {n};\nshl.b32 b, w, {n};"), regs)
            assert regs["a"] == v >> n and regs["b"] == (v << n) & 0xFFFFFFFF, (n, hex(v))


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
