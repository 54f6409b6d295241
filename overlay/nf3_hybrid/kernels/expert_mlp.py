"""Weight-only quantized grouped expert MLP: ``down(silu(gate(x)) * up(x))`` per block
of routed tokens, with the weights dequantized inside the kernel.

Kernels, the structure of vLLM's fused MoE:
- ``_w13_kernel``: for one expert block and one tile of the intermediate dimension, the
  gate and up GEMMs, then SiLU·mul into the intermediate cache.
- ``_w2_kernel``: the down GEMM of the cache times the routing weight, stored as the
  pair's row (``pair_rows``, bf16 by default; kernels/pair_sum.py then adds each token's rows in slot
  order — reproducible), or atomically added into the token's output row (a tier that
  shares its output with another backend).

Split-K (gate/up partial sums added atomically into an fp32 buffer and finished by a
second kernel; down partial sums added into the output) was removed: on the H200 it gave
wrong, run-to-run different results from 40 tokens on (relative error 1-4 %, 17-32 tokens
fine; cause not found), and the decode GEMV serves those batch sizes in the fused path.

Weights are read in the checkpoint's packing, except NF3 codes: those are rewritten once
at load, in place, into a "nibble" layout (formats/nf3_nibble.py: codes 0-23 of a group
in the nibbles of its three words, 24-31 in the nibbles' top bits), so that three of four
8-code selectors are one AND instead of a 3-bit-to-nibble spread. Session 5 measured it
here first, when the decode GEMV still moved its words through shared memory: 11-14 %
fewer SASS instructions in the NF3 loops, no faster (bench_moe_h200_s5_nibble.json).
Session 8, after the GEMV's layout fix left it bound by the integer pipe: the NF3 tier
8-16 % faster from 1 to 64 tokens (bench_moe_h200_s8_nibble_*.json), which made it the
layout.
Dequantization, and what the H200 measurements taught:
- NF3: a 32-code group is 12 bytes = three int32 words, loaded once; the fourth code word
  is gathered from their nibbles' top bits and the four are put in order with
  ``tl.interleave``; each code is ``(word >> 4p) & 7`` for a compile-time p; the eight code
  planes are looked up in the codebook, scaled and interleaved back into K order.
- NVFP4 / MXFP4: bytes loaded contiguously (vectorised), low and high nibble looked up
  (or decoded by shifts: ``magic`` in the tile config, faster for prefill), scaled,
  interleaved. NVFP4 with ``ptx4`` (the default since session 8): 32-bit words decoded by
  the decode GEMV's byte-permute block into fp16 pairs, scaled in fp16 — the bits of
  ``magic=2`` with 43 % fewer instructions in the w13 loop (590 → 337, compile_probe with
  byte pointers; earlier NVFP4 counts came from int32 pointers), 2-21 % faster
  (sweep_h200_s8_ptx4.json). ``magic=2`` scales NVFP4 values in fp16 instead of through fp32 (both
  exact): 677 → 573 SASS instructions in the NVFP4 w13 loop on Triton 3.6 (compile_probe,
  ``fmt=1``); on the H200 1-2 % faster at every prefill size (session 7,
  sweep_h200_s7_magic2.json), the default of the mid and large tiles.
- the group scale is decoded once per group, by arithmetic (``_scale_values``), and
  widened by interleaving it with itself. Its bytes are loaded one K-step ahead: Triton
  does not pipeline 1-byte loads, and the earlier scale load plus table lookup put two
  dependent global loads into every K-step.
- value tables (the interpreter's NF3 path, e2m1 without ``magic``) are 16-bit. With 4-byte
  tables Triton's software pipeliner turned every per-code gather into an async copy
  through shared memory (ncu: L1 88 % busy, DRAM 2 %); 2-byte loads are not pipelined.
  That made prefill 2× faster (GLM-5.2 I=512, 2048 tokens: 10.7 → 5.2 ms), still 0.37×
  Marlin. Dequantizing into eight code planes with one MMA each (no interleave, no
  reshape) was measured slower (9.6 ms) and dropped. What remains is in the NF3 tile's
  layout conversions (37 ``convert_layout``s in its TTGIR). The tile option ``ptx``
  decodes the codes in registers instead (the decode GEMV's byte permutes): 19 layout
  conversions in the w13 loop become 1 (BM=BN=BK=64); on the H200 the hybrid layer at
  2048 tokens took 3.9 ms instead of 5.2 (bench_moe_h200_ptx_sweep.json): the default in
  every grouped tile. Session 7: its four table words are kernel arguments instead of
  compile-time constants — ptxas had rebuilt the table register a byte permute overwrites
  for every code word (NF3 w13 loop 396 → 366 SASS instructions, w2 431 → 405): NF3 tier
  4 % faster at 256-512 tokens, unchanged at 2048-4096 (bench_moe_h200_s7_ptxargs_*.json).
  (Instruction counts quoted before session 5 came from a
  compile_probe that did not assume the launcher's 16-divisibility of sizes and strides,
  so its loads were scalar: 541 where the kernel that runs has 390.)
- the activations (``x16``) and the intermediate cache are fp16 already, so the loops
  convert neither (w2 loop 452 → 410 SASS instructions per K-step, compile_probe; x16:
  3423 instead of 3704 µs at 2048 tokens on the H200, bench_moe_h200_s5_sweep.json).
The tile is then one ``tl.dot`` operand (fp16, or bf16 for MXFP4 whose power-of-two
scales can leave fp16's range). Under the interpreter (CPU tests) the dots are float32.

Products are [N-tile × M-tile] = W[N, K] · xᵀ[K, M]: the large weight tile is the natural
left operand and only the small activation tile is read transposed.
"""
import triton
import triton.language as tl

from . import fit_tile
from .expert_gemv import nf3_fourth_word, nf3_tiled_offset
from .ptx_decode import (E2M1_TABLE_WORDS, E2M1_VALUES_ASM, E2M1_VALUES_CONSTRAINTS, NF3_VALUES_ASM,
                         NF3_VALUES_CONSTRAINTS)

_NF3_VALUES_ASM = tl.constexpr(NF3_VALUES_ASM)
_NF3_VALUES_CONS = tl.constexpr(NF3_VALUES_CONSTRAINTS)
_E2M1_VALUES_ASM = tl.constexpr(E2M1_VALUES_ASM)
_E2M1_VALUES_CONS = tl.constexpr(E2M1_VALUES_CONSTRAINTS)

FMT_NF3 = 0
FMT_NVFP4 = 1
FMT_MXFP4 = 2


@triton.jit
def _widen(s, TIMES: tl.constexpr):
    """[R, C] → [R, C·TIMES], each column repeated TIMES (a power of two ≤ 16) times."""
    if TIMES >= 2:
        s = tl.interleave(s, s)
    if TIMES >= 4:
        s = tl.interleave(s, s)
    if TIMES >= 8:
        s = tl.interleave(s, s)
    if TIMES >= 16:
        s = tl.interleave(s, s)
    return s


@triton.jit
def _scale_bits(s_ptr, e, row0, k0, K, stride_se, stride_sn, BN: tl.constexpr, BK: tl.constexpr,
                GROUP: tl.constexpr, TILED: tl.constexpr = False):
    """The group-scale bytes of W[row0:row0+BN, k0:k0+BK] (zeros past K). Loaded one K-step
    ahead by the kernels: a 1-byte load is not pipelined by Triton, and waiting for it in
    every step left the prefill kernels mostly stalled. ``TILED``: an NF3 tier in tiled
    layout (expert_gemv.nf3_tiled_offset)."""
    rows = (row0 + tl.arange(0, BN)).to(tl.int64)
    grp = k0 // GROUP + tl.arange(0, BK // GROUP)
    if TILED:
        off = nf3_tiled_offset(rows[:, None], grp[None, :], stride_sn, 64)
    else:
        off = rows[:, None] * stride_sn + grp[None, :]
    return tl.load(s_ptr + e.to(tl.int64) * stride_se + off, mask=grp[None, :] < K // GROUP, other=0)


@triton.jit
def _scale_values(sbits, FMT: tl.constexpr):
    """Group scales from their bits by arithmetic, no table load (a dependent global load
    per K-step): e4m3 → fp16 with the exponent rebased (exact, subnormals included: the
    bits placed under fp16's are the value times 2**-8, and the multiply by 256 is exact);
    e8m0 → bf16 bits (2**-127 and the NaN code, which a checkpoint does not hold, as the
    table had them: 2**-127 and 0)."""
    b = sbits.to(tl.int32)
    # one return: Triton 3.6 also generates the statements after a taken constexpr branch
    # that returns, and refuses returns of different types
    if FMT == 2:
        v = tl.where(b == 0, 0x40, tl.where(b == 255, 0, b << 7)).to(tl.int16).to(tl.bfloat16, bitcast=True)
    else:
        v = (((b & 0x80) << 8) | ((b & 0x7F) << 7)).to(tl.int16).to(tl.float16, bitcast=True) * 256.0
    return v


@triton.jit
def _nf3_tile(w_ptr, sbits, e, row0, k0, stride_we, stride_wn, vtab_ptr, pt0, pt1, pt2, pt3,
              BN: tl.constexpr, BK: tl.constexpr, DT: tl.constexpr, PTX: tl.constexpr, TILED: tl.constexpr):
    """Dequantized W[row0:row0+BN, k0:k0+BK] (dtype DT) of NF3 expert e; ``w_ptr`` is the
    packed tensor viewed as int32 (strides in words). ``PTX``: codes decoded in registers
    by the decode GEMV's byte permutes (kernels/ptx_decode.py) with the codebook's four
    table words ``pt0``-``pt3`` — kernel arguments, so registers: as compile-time
    constants ptxas rebuilt the one a byte permute overwrites for every code word — or
    else looked up in the table in memory."""
    G: tl.constexpr = BK // 32
    rows = (row0 + tl.arange(0, BN)).to(tl.int64)
    grp = k0 // 32 + tl.arange(0, G)
    if TILED:
        off = nf3_tiled_offset(rows[:, None], grp[None, :], stride_wn, 192)
    else:
        off = rows[:, None] * stride_wn + grp[None, :] * 3
    p = w_ptr + e.to(tl.int64) * stride_we + off
    WS: tl.constexpr = 64 if TILED else 1  # from one of a group's words to the next
    w0 = tl.load(p)
    w1 = tl.load(p + WS)
    w2 = tl.load(p + 2 * WS)
    # nibble layout (formats/nf3_nibble.py): codes 8j..8j+7 in the low bits of word j's
    # nibbles, the fourth word's codes in the nibbles' top bits (cleared by the decoders)
    w3 = nf3_fourth_word(w0, w1, w2)
    words = tl.interleave(tl.interleave(w0, w2), tl.interleave(w1, w3))  # [BN, 4G]
    s = _widen(_scale_values(sbits, 0).to(DT), 4)  # [BN, 4G]: each word's group scale
    if PTX:
        v0, v1, v2, v3, v4, v5, v6, v7 = tl.inline_asm_elementwise(
            _NF3_VALUES_ASM, _NF3_VALUES_CONS, [words, pt0, pt1, pt2, pt3],
            dtype=(tl.float16,) * 8, is_pure=True, pack=1)
        v0 = v0.to(DT) * s
        v1 = v1.to(DT) * s
        v2 = v2.to(DT) * s
        v3 = v3.to(DT) * s
        v4 = v4.to(DT) * s
        v5 = v5.to(DT) * s
        v6 = v6.to(DT) * s
        v7 = v7.to(DT) * s
    else:
        v0 = tl.load(vtab_ptr + (words & 7)).to(DT) * s
        v1 = tl.load(vtab_ptr + ((words >> 4) & 7)).to(DT) * s
        v2 = tl.load(vtab_ptr + ((words >> 8) & 7)).to(DT) * s
        v3 = tl.load(vtab_ptr + ((words >> 12) & 7)).to(DT) * s
        v4 = tl.load(vtab_ptr + ((words >> 16) & 7)).to(DT) * s
        v5 = tl.load(vtab_ptr + ((words >> 20) & 7)).to(DT) * s
        v6 = tl.load(vtab_ptr + ((words >> 24) & 7)).to(DT) * s
        v7 = tl.load(vtab_ptr + ((words >> 28) & 7)).to(DT) * s
    return _word_values_in_order(v0, v1, v2, v3, v4, v5, v6, v7)


@triton.jit
def _word_values_in_order(v0, v1, v2, v3, v4, v5, v6, v7):
    """[BN, 8W] from the eight [BN, W] value planes of W code words: value p of word w
    belongs at column 8w + p."""
    even = tl.interleave(tl.interleave(v0, v4), tl.interleave(v2, v6))
    odd = tl.interleave(tl.interleave(v1, v5), tl.interleave(v3, v7))
    return tl.interleave(even, odd)


@triton.jit
def _fp4_tile(w_ptr, sbits, e, row0, k0, stride_we, stride_wn, vtab_ptr, pt0, pt1, pt2, FMT: tl.constexpr,
              GROUP: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, DT: tl.constexpr, MAGIC: tl.constexpr,
              PTX: tl.constexpr):
    """Dequantized W[row0:row0+BN, k0:k0+BK] (dtype DT) of e2m1 expert e (two codes per
    byte, even column in the low nibble; one scale per GROUP columns, ``sbits`` their bits)."""
    rows = (row0 + tl.arange(0, BN)).to(tl.int64)
    sv = _scale_values(sbits, FMT)
    if PTX:
        # NVFP4 (tile option ptx4): ``w_ptr`` viewed as int32, eight codes a word decoded to
        # fp16 by the decode GEMV's byte permutes (table words ``pt0``-``pt2``), scaled in
        # fp16 — the values and products of MAGIC=2, bit for bit
        words = tl.load(w_ptr + e.to(tl.int64) * stride_we + rows[:, None] * stride_wn
                        + (k0 // 8 + tl.arange(0, BK // 8))[None, :])
        v0, v1, v2, v3, v4, v5, v6, v7 = tl.inline_asm_elementwise(
            _E2M1_VALUES_ASM, _E2M1_VALUES_CONS, [words, pt0, pt1, pt2],
            dtype=(tl.float16,) * 8, is_pure=True, pack=1)
        s = _widen(sv, GROUP // 8)  # fp16 [BN, BK/8]: each word's scale
        return _word_values_in_order(v0 * s, v1 * s, v2 * s, v3 * s, v4 * s, v5 * s, v6 * s, v7 * s).to(DT)
    byte = tl.load(w_ptr + e.to(tl.int64) * stride_we + rows[:, None] * stride_wn
                   + (k0 // 2 + tl.arange(0, BK // 2))[None, :]).to(tl.int32)
    if MAGIC:
        # e2m1 → fp16 bits by shifts (sign; exponent and mantissa under fp16's): the value
        # times 2**-14
        lo = (((byte & 8) << 12) | ((byte & 7) << 9)).to(tl.int16).to(tl.float16, bitcast=True)
        hi = (((byte & 0x80) << 8) | ((byte & 0x70) << 5)).to(tl.int16).to(tl.float16, bitcast=True)
        if MAGIC == 2:
            # NVFP4 only: put back by 2**14 and scaled in fp16, no conversions — both products
            # exact (e2m1 times e4m3 has 7 significant bits, at most 6 · 448, at least 2**-10)
            s = _widen(sv, GROUP // 2)  # fp16 [BN, BK/2]
            lo = ((lo * 16384.0) * s).to(DT)
            hi = ((hi * 16384.0) * s).to(DT)
        else:
            # through the fp32 scale (MXFP4's e8m0 scales leave fp16's range)
            s = _widen(sv.to(tl.float32) * 16384.0, GROUP // 2)  # [BN, BK/2]
            lo = (lo.to(tl.float32) * s).to(DT)
            hi = (hi.to(tl.float32) * s).to(DT)
    else:
        s = _widen(sv.to(DT), GROUP // 2)  # [BN, BK/2]
        lo = tl.load(vtab_ptr + (byte & 15)).to(DT) * s
        hi = tl.load(vtab_ptr + ((byte >> 4) & 15)).to(DT) * s
    return tl.interleave(lo, hi)


@triton.jit
def _weight_tile(w_ptr, sbits, e, row0, k0, stride_we, stride_wn, vtab_ptr, pt0, pt1, pt2, pt3,
                 FMT: tl.constexpr, GROUP: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, DT: tl.constexpr,
                 MAGIC: tl.constexpr,
                 PTX: tl.constexpr, TILED: tl.constexpr = False):
    """``GROUP``: weights per scale, as the launcher's ``_group`` gives it. ``TILED``: an NF3
    tier in tiled layout."""
    if FMT == 0:
        return _nf3_tile(w_ptr, sbits, e, row0, k0, stride_we, stride_wn, vtab_ptr, pt0, pt1, pt2, pt3, BN, BK, DT,
                         PTX, TILED)
    else:
        return _fp4_tile(w_ptr, sbits, e, row0, k0, stride_we, stride_wn, vtab_ptr, pt0, pt1, pt2, FMT, GROUP, BN,
                         BK, DT, MAGIC, PTX)


def _group(fmt: int) -> int:
    """Weights per scale."""
    return 16 if fmt == FMT_NVFP4 else 32


def inter_dtype(fmt: int):
    """The intermediate cache between the two GEMMs: the dot operand type on the GPU (fp16,
    bf16 for MXFP4) — the w13 kernel rounds its fp32 result once, the w2 kernel reads it
    without converting. Under the interpreter the same rounding, then float32 dots."""
    import torch

    return torch.bfloat16 if fmt == FMT_MXFP4 else torch.float16


def _dot_dtype(fmt: int, dot_fp32: bool):
    """fp16 operands: dequantized NF3/NVFP4 values keep 11 mantissa bits instead of bf16's
    8; MXFP4's power-of-two scales need bf16's range; fp32 under the interpreter."""
    if dot_fp32:
        return tl.float32
    return tl.bfloat16 if fmt == FMT_MXFP4 else tl.float16


@triton.jit
def _block(sorted_ptr, bexp_ptr, P, BM: tl.constexpr):
    """This program's block b and column tile j: the block's local expert (−1: past the
    end), its routed pairs (sentinel P in padding slots), which of them are real, and its
    slots."""
    b = tl.program_id(0)
    slots = b * BM + tl.arange(0, BM)
    pairs = tl.load(sorted_ptr + slots)
    return tl.load(bexp_ptr + b), tl.program_id(1), pairs, pairs < P, slots.to(tl.int64)


@triton.jit
def _acc0(BN: tl.constexpr, BM: tl.constexpr, SWAP: tl.constexpr):
    """The fp32 accumulator: [BN, BM] (weights the left operand), or [BM, BN] with SWAP."""
    if SWAP:
        acc = tl.zeros([BM, BN], dtype=tl.float32)
    else:
        acc = tl.zeros([BN, BM], dtype=tl.float32)
    return acc


@triton.jit
def _mma(acc, w, xm, SWAP: tl.constexpr):
    """acc + W·xᵀ for the weight tile W [BN, BK] and the activation tile xm [BM, BK]. SWAP
    (tile options ``swap13``, ``swap2``) puts the activations on the left — on SM90 the left operand of
    a warpgroup MMA may come from registers, the right one from shared memory — so the
    dequantized tile goes to shared memory instead of the activations."""
    if SWAP:
        # "+ 0.0": Triton 3.6's TritonGPUOptimizeDotOperands fails on a transposed
        # register tile feeding the MMA directly (3.8 compiles either; there the w13 loop
        # is 332 SASS instructions against 418, on 3.6 423 against 396 — and slower on the
        # H200, bench_moe_h200_s5_swap.json)
        acc = tl.dot(xm, tl.trans(w) + 0.0, acc)
    else:
        acc = tl.dot(w, tl.trans(xm), acc)
    return acc


@triton.jit
def _as_nm(acc, SWAP: tl.constexpr):
    """The accumulator as [BN, BM]."""
    if SWAP:
        acc = tl.trans(acc)
    return acc


@triton.jit(do_not_specialize=["P", "topk", "pt0", "pt1", "pt2", "pt3"])
def _w13_kernel(
    x_ptr, stride_xm, w_ptr, s_ptr, s2_ptr, sorted_ptr, bexp_ptr, tw_ptr, inter_ptr, stride_im,
    val_tab_ptr, pt0, pt1, pt2, pt3, P, topk, K, I,
    stride_we, stride_wn, stride_se, stride_sn,
    FMT: tl.constexpr, HAS_S2: tl.constexpr, WEIGHT_ON_INPUT: tl.constexpr,
    BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, DT: tl.constexpr, MAGIC: tl.constexpr, PTX: tl.constexpr,
    GROUP: tl.constexpr, SWAP: tl.constexpr, TILED: tl.constexpr = False,
):
    e, j, pairs, valid, slots = _block(sorted_ptr, bexp_ptr, P, BM)
    if e < 0:
        return
    tok = tl.where(valid, pairs // topk, 0).to(tl.int64)
    acc_g = _acc0(BN, BM, SWAP)
    acc_u = _acc0(BN, BM, SWAP)
    sg_next = _scale_bits(s_ptr, e, j * BN, 0, K, stride_se, stride_sn, BN, BK, GROUP, TILED)
    su_next = _scale_bits(s_ptr, e, I + j * BN, 0, K, stride_se, stride_sn, BN, BK, GROUP, TILED)
    for k0 in range(0, K, BK):
        sg = sg_next
        su = su_next
        sg_next = _scale_bits(s_ptr, e, j * BN, k0 + BK, K, stride_se, stride_sn, BN, BK, GROUP, TILED)
        su_next = _scale_bits(s_ptr, e, I + j * BN, k0 + BK, K, stride_se, stride_sn, BN, BK, GROUP, TILED)
        kk = k0 + tl.arange(0, BK)
        xm = tl.load(x_ptr + tok[:, None] * stride_xm + kk[None, :]).to(DT)
        wg = _weight_tile(w_ptr, sg, e, j * BN, k0, stride_we, stride_wn, val_tab_ptr, pt0, pt1, pt2, pt3, FMT, GROUP,
                          BN, BK, DT, MAGIC, PTX, TILED)
        acc_g = _mma(acc_g, wg, xm, SWAP)
        wu = _weight_tile(w_ptr, su, e, I + j * BN, k0, stride_we, stride_wn, val_tab_ptr, pt0, pt1, pt2, pt3, FMT,
                          GROUP, BN, BK, DT, MAGIC, PTX, TILED)
        acc_u = _mma(acc_u, wu, xm, SWAP)
    acc_g = _as_nm(acc_g, SWAP)
    acc_u = _as_nm(acc_u, SWAP)
    cols = j * BN + tl.arange(0, BN)
    if HAS_S2:
        acc_g *= tl.load(s2_ptr + e * 2)
        acc_u *= tl.load(s2_ptr + e * 2 + 1)
    if WEIGHT_ON_INPUT:
        rw = tl.load(tw_ptr + pairs, mask=valid, other=0.0).to(tl.float32)
        acc_g *= rw[None, :]
        acc_u *= rw[None, :]
    h = acc_g * tl.sigmoid(acc_g) * acc_u
    tl.store(inter_ptr + slots[None, :] * stride_im + cols[:, None], h.to(inter_ptr.dtype.element_ty))


@triton.jit(do_not_specialize=["P", "topk", "pt0", "pt1", "pt2", "pt3"])
def _w2_kernel(
    inter_ptr, stride_im, w_ptr, s_ptr, s2_ptr, sorted_ptr, bexp_ptr, tw_ptr, out_ptr, stride_om,
    val_tab_ptr, pt0, pt1, pt2, pt3, P, topk, K,
    stride_we, stride_wn, stride_se, stride_sn,
    FMT: tl.constexpr, HAS_S2: tl.constexpr, WEIGHT_ON_INPUT: tl.constexpr,
    BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, DT: tl.constexpr, MAGIC: tl.constexpr, PTX: tl.constexpr,
    PAIR_ROWS: tl.constexpr, GROUP: tl.constexpr, SWAP: tl.constexpr, TILED: tl.constexpr = False,
):
    e, j, pairs, valid, slots = _block(sorted_ptr, bexp_ptr, P, BM)
    if e < 0:
        return
    acc = _acc0(BN, BM, SWAP)
    s_next = _scale_bits(s_ptr, e, j * BN, 0, K, stride_se, stride_sn, BN, BK, GROUP, TILED)
    for k0 in range(0, K, BK):
        sb = s_next
        s_next = _scale_bits(s_ptr, e, j * BN, k0 + BK, K, stride_se, stride_sn, BN, BK, GROUP, TILED)
        kk = k0 + tl.arange(0, BK)
        hm = tl.load(inter_ptr + slots[:, None] * stride_im + kk[None, :]).to(DT)
        w = _weight_tile(w_ptr, sb, e, j * BN, k0, stride_we, stride_wn, val_tab_ptr, pt0, pt1, pt2, pt3, FMT, GROUP,
                         BN, BK, DT, MAGIC, PTX, TILED)
        acc = _mma(acc, w, hm, SWAP)
    acc = _as_nm(acc, SWAP)
    if HAS_S2:
        acc *= tl.load(s2_ptr + e)
    if not WEIGHT_ON_INPUT:
        rw = tl.load(tw_ptr + pairs, mask=valid, other=0.0).to(tl.float32)
        acc *= rw[None, :]
    cols = j * BN + tl.arange(0, BN)
    if PAIR_ROWS:
        row = tl.where(valid, pairs, 0).to(tl.int64)
        tl.store(out_ptr + row[None, :] * stride_om + cols[:, None], acc, mask=valid[None, :])
    else:
        tok = tl.where(valid, pairs // topk, 0).to(tl.int64)
        tl.atomic_add(out_ptr + tok[None, :] * stride_om + cols[:, None], acc, mask=valid[None, :], sem="relaxed")


def e2m1_decode_mode(fmt: int, cfg: dict) -> int:
    """How e2m1 codes become values (tile option ``magic``, chosen per batch class by the
    benchmark's sweep): 0 looked up in a table, 1 by shifts and scaled in fp32, 2 by
    shifts and scaled in fp16 — NVFP4 only (1-2 % faster for prefill on the H200); MXFP4
    takes 1 for it."""
    if fmt == FMT_NF3:
        return 0
    magic = int(cfg.get("magic", 0))
    return 1 if magic == 2 and fmt == FMT_MXFP4 else magic


def ptx_words(fmt: int, cfg: dict, table_words, dot_fp32: bool):
    """The table words (kernel arguments ``pt0``-``pt3``) when the tile config asks for
    in-register decoding — ``ptx`` for NF3 (the codebook's words), ``ptx4`` for NVFP4
    (e2m1's) — else None. Never under the interpreter, which has no inline assembly."""
    if dot_fp32:
        return None
    if fmt == FMT_NVFP4 and cfg.get("ptx4", 0):
        return tuple(E2M1_TABLE_WORDS) + (0,)
    if fmt != FMT_NF3 or not cfg.get("ptx", 0) or table_words is None:
        return None
    return tuple(int(t) for t in table_words)


def _packed(w, fmt, words):
    """NF3 weights are read as int32 words (a 12-byte group is three words), NVFP4 ones too
    when decoded in registers (``words``: ptx_words's answer)."""
    import torch

    return w.view(torch.int32) if fmt == FMT_NF3 or words is not None else w


def launch_w13(x, w, s, s2, sorted_ids, block_expert, topk_weights, inter, val_tab,
               num_pairs, topk, inter_size, fmt, weight_on_input, cfg, dot_fp32, table_words=None, tiled=False):
    """``tiled``: an NF3 tier in tiled layout (formats/nf3_tiled.py)."""
    K = x.shape[1]
    bk, bn = fit_tile(K, cfg["BK13"]), fit_tile(inter_size, cfg["BN13"])
    words = ptx_words(fmt, cfg, table_words, dot_fp32)
    wp = _packed(w, fmt, words)
    _w13_kernel[(block_expert.numel(), inter_size // bn)](
        x, x.stride(0), wp, s, s2 if s2 is not None else s, sorted_ids, block_expert, topk_weights,
        inter, inter.stride(0), val_tab, *(words or (0, 0, 0, 0)), num_pairs, topk, K, inter_size,
        wp.stride(0), wp.stride(1), s.stride(0), s.stride(1),
        FMT=fmt, HAS_S2=s2 is not None, WEIGHT_ON_INPUT=weight_on_input,
        BM=cfg["BM"], BN=bn, BK=bk, DT=_dot_dtype(fmt, dot_fp32), MAGIC=e2m1_decode_mode(fmt, cfg),
        PTX=words is not None, GROUP=_group(fmt), SWAP=bool(cfg.get("swap13", 0)), TILED=tiled,
        num_warps=cfg["warps"], num_stages=cfg["stages"],
    )


def launch_w2(inter, w, s, s2, sorted_ids, block_expert, topk_weights, out, val_tab,
              num_pairs, topk, inter_size, fmt, weight_on_input, cfg, dot_fp32, table_words=None,
              pair_rows=False, tiled=False):
    """``pair_rows``: ``out`` is [pairs, N] (fp32, or bf16: triton_tiers.PAIR_ROWS_DTYPE) and
    each routed pair's row is stored there in its dtype; else the rows are added atomically
    into the token rows of ``out`` [tokens, N].
    ``tiled``: an NF3 tier in tiled layout (formats/nf3_tiled.py)."""
    N = out.shape[1]
    bk, bn = fit_tile(inter_size, cfg["BK2"]), fit_tile(N, cfg["BN2"])
    words = ptx_words(fmt, cfg, table_words, dot_fp32)
    wp = _packed(w, fmt, words)
    _w2_kernel[(block_expert.numel(), N // bn)](
        inter, inter.stride(0), wp, s, s2 if s2 is not None else s, sorted_ids, block_expert, topk_weights,
        out, out.stride(0), val_tab, *(words or (0, 0, 0, 0)), num_pairs, topk, inter_size,
        wp.stride(0), wp.stride(1), s.stride(0), s.stride(1),
        FMT=fmt, HAS_S2=s2 is not None, WEIGHT_ON_INPUT=weight_on_input,
        BM=cfg["BM"], BN=bn, BK=bk, DT=_dot_dtype(fmt, dot_fp32), MAGIC=e2m1_decode_mode(fmt, cfg),
        PTX=words is not None, PAIR_ROWS=pair_rows, GROUP=_group(fmt),
        SWAP=bool(cfg.get("swap2", 0)), TILED=tiled,
        num_warps=cfg["warps"], num_stages=cfg["stages"],
    )
