"""Decode path: one program per (routed pair, tile of output rows), both tiers in one launch.

With a few tokens a step, an expert sees about one token, so there is nothing to share
between tokens and the work is streaming each routed expert's packed weights once.
These kernels need no routing sort at all: program p reads pair p's expert id, looks
it up in each tier's local map (−1 = not in that tier) and runs that tier's rows.

Weights are read as 32-bit words: a 32-weight unit is three words for NF3 (in nibble
layout, formats/nf3_nibble.py, rewritten once at load) and four for e2m1 (the
checkpoint's packing). Each NF3 group's 32 weights, or each e2m1 word's eight, are
decoded and dotted with their activations by one inline PTX block (kernels/ptx_decode.py:
byte-permute table lookups in registers), so decoding costs no loads. Under
TRITON_INTERPRET (no inline assembly) the same words are decoded by table lookups
instead.

Activations are read in "plane order": fp16 copies of the token's input (and the
intermediate, written that way by ``_gemv13``) in which the activations that meet codes
2q and 2q+1 of neighbouring words are adjacent fp16 pairs, so a warp's load of them is one
or two cache lines, and one 32-bit load brings the pair the PTX block multiplies with one
packed instruction.

What the H200 measurements taught (GLM-5.2 shape, I=512; bench/results/): the previous
version (byte loads, a table load per weight) took 68 µs at one token; in-register
decoding, plane order, gate and up rows in one pass and prefetching the next K-block
brought it to 52 µs (Marlin: 43) and 8 tokens from 383 to 248 µs (Marlin: 145). ncu at 8
tokens: issue slots 64 % busy, L1 75 %, ~7.7 instructions per weight — it is bound by
instruction issue; decoding is ~3.6 of them per weight, the rest addressing, scales and
the fp32 multiply-adds. Tried and dropped: split-K over the gate/up rows with the last
slice finishing the activation (slower at 1-16 tokens), vectorised activation loads
split in registers (Triton regrouped them through shared memory), larger row tiles.
Session 5: the activations as fp16 pairs with packed fp16 products (ptx_decode.py) —
NF3 loop 436 → 316 SASS instructions per 64 weights, 52 → 37 µs at one token, 248 →
194 at 8 (bench_moe_h200_s5_sweep.json; layer error against float32 1.5-2.1e-3 →
1.6-2.0e-3 at these sizes, accuracy_h200_s5.json). ncu at 8 tokens after it
(ncu_h200_gemv13_m8.txt): 4 of 16 warps per scheduler resident (registers), 42 % of
cycles waiting on loads. Tried then, none faster: register caps (spills), smaller tiles
(within 5 %, bench_moe_h200_s5_gemv.json), weight words cached in L2 only so the
activations keep L1 (36.4 → 40.2 µs at one token, bench_moe_h200_s5_gemv_cg.json), fewer
decode instructions (an NF3 nibble layout, expert_mlp.py; adopted in session 8, see
below). More loads in flight per warp is what is left. Session 6
(bench_moe_h200_s6_*.json): programs of one warp with 2 gate/up rows and 8 down rows
took 32.7 / 87.4 / 286.8 µs at 1 / 4 / 16 tokens against 35.5 / 106.7 / 360.1 (two
warps, 4 and 16 rows). Measured slower and dropped: the weight loads
issued blocks ahead by Triton's pipeliner (``tl.range(num_stages=…)``: async copies to
shared memory, 64-96 registers instead of 128; 12-90 % slower), the top-k sum done by
the down GEMV's last program per output tile (one barrier and one gpu-scope
acquire-release atomic per program; 6-18 % slower than the separate sum kernel), and a
program serving two routed pairs of one expert (each word decoded once for both tokens,
168 registers; slower at every size, even at 64 tokens where most pairs share their
expert).
Session 7: the weight words and scales loaded as flat tensors and reshaped (``_rows_dot``),
so that they arrive in the activations' layout. Loaded as 2-D tensors they had rows across
lanes and went through shared memory every K-step — five conversions with a barrier each
in the NF3 loop (code words and scales), two in the e2m1 loop (compile_probe, Triton 3.6:
no shared memory left in either loop; e2m1 loop 514 → 460 SASS instructions, down GEMV
128 → 96 registers). H200, both versions in one session
(bench_moe_h200_s7_gemv_{old,new}.json): tiers 3-16 % faster from 1 to 64 tokens (NF3
33.3 → 30.0 µs at one token, NVFP4 tier 1091 → 954 µs at 64), the hybrid layer 268 vs 286
µs at 16 tokens, I=2048 6-9 % at every decode size.
Session 8: NF3 groups in nibble layout, decoded by one inline block per group that sums
two words' products in fp16 (ptx_decode.py): NF3 loop 538 → 422 SASS instructions per 128
weights (gate/up GEMV, Triton 3.6); H200, old and new code in one session
(bench_moe_h200_s8_nibble_{old,new}.json): NF3 tier 8-16 % faster from 1 to 64 tokens
(I=2048: 479 → 417 µs at 8 tokens), the hybrid layer 2-11 %. Timed and dropped then: the
next two K-blocks in flight instead of one (sweep_h200_s8_pf.json).

- kept tier (e2m1 words as [rows, units, 4]): the pair q (activations 2q, 2q+1) of word
  j of unit u is 32-bit word q·K/8 + 4u + j ("PUJ");
- NF3 tier (a unit's three stored words as [rows, units] each, its four code words
  derived in the inline block): the pair q of code word j of unit u is 32-bit word
  (4q + j)·K/32 + u ("PJU").
Triton lays the word tensors out with lanes along (unit, word) and rows in registers, so
one activation load serves all of a thread's rows.

``_gemv13`` writes silu(gate)·up per pair (fp16, in its tier's plane order) into the
intermediate; ``_gemv2`` writes each pair's weighted down projection (fp32) and
``_reduce_topk`` sums a token's pairs into the bf16 output — no atomics, no zero-fill,
deterministic.
"""
import triton
import triton.language as tl

from . import fit_tile, pair_sum, ptx_decode, register_cap
from .ptx_decode import (E2M1_DOT_ASM, E2M1_DOT_CONSTRAINTS, E2M1_PAIR_DOT_ASM, E2M1_PAIR_DOT_CONSTRAINTS,
                         NF3_UNIT4_DOT_ASM, NF3_UNIT_DOT_ASM, NF3_UNIT_DOT_CONSTRAINTS)

_NF3_ASM = tl.constexpr(NF3_UNIT_DOT_ASM)
_NF3_ASM4 = tl.constexpr(NF3_UNIT4_DOT_ASM)
_NF3_CONS = tl.constexpr(NF3_UNIT_DOT_CONSTRAINTS)
_E2M1_ASM = tl.constexpr(E2M1_DOT_ASM)
_E2M1_CONS = tl.constexpr(E2M1_DOT_CONSTRAINTS)
_E2M1_PAIR_ASM = tl.constexpr(E2M1_PAIR_DOT_ASM)
_E2M1_PAIR_CONS = tl.constexpr(E2M1_PAIR_DOT_CONSTRAINTS)


@triton.jit
def _plane_index(c, K, FMT: tl.constexpr):
    """Where activation c (of K) goes, in fp16 elements, in the plane order of a tier of
    format FMT: the low or high half of its pair's 32-bit word."""
    u = c // 32
    j = (c // 8) % 4
    q = (c % 8) // 2
    if FMT == 0:
        word = (4 * q + j) * (K // 32) + u
    else:
        word = q * (K // 8) + 4 * u + j
    return 2 * word + c % 2


@triton.jit
def _planes_kernel(x_ptr, stride_xm, xa_ptr, xb_ptr, stride_pm, K, BLOCK: tl.constexpr, PDL: tl.constexpr):
    """fp16 plane-order copies of each token's activations: kept-tier order into xa, NF3
    order into xb. With PDL the GEMV behind it may launch at once (it waits for these
    copies only before its first activation load)."""
    if PDL:
        tl.extra.cuda.gdc_launch_dependents()
    m = tl.program_id(0)
    c = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    ok = c < K
    v = tl.load(x_ptr + m.to(tl.int64) * stride_xm + c, mask=ok).to(tl.float16)
    tl.store(xa_ptr + m.to(tl.int64) * stride_pm + _plane_index(c, K, 1), v, mask=ok)
    tl.store(xb_ptr + m.to(tl.int64) * stride_pm + _plane_index(c, K, 0), v, mask=ok)


@triton.jit
def _x4(first, pstride):
    """The four activation pair planes (32-bit words) of the code words at ``first``:
    ``first`` + q·pstride, q = 0..3."""
    return tl.load(first), tl.load(first + pstride), tl.load(first + 2 * pstride), tl.load(first + 3 * pstride)


@triton.jit
def _plane(words, xq, p: tl.constexpr, vtab_ptr, FMT: tl.constexpr):
    """Interpreter path: code p of every word (nibble p: NF3 in nibble layout, e2m1) looked
    up in the fp16 table, times its activation (half p % 2 of the pair word ``xq``), in
    fp32."""
    code = (words >> (4 * p)) & (7 if FMT == 0 else 15)
    half = (xq.to(tl.uint32, bitcast=True) >> (16 * (p % 2))) & 0xFFFF
    x = half.to(tl.uint16).to(tl.float16, bitcast=True).to(tl.float32)
    return tl.load(vtab_ptr + code.to(tl.int32)).to(tl.float32) * x


@triton.jit
def _word_dots(words, first, pstride, vtab_ptr, FMT: tl.constexpr):
    """Interpreter path, fp32 shaped like ``words``: each code word's eight weights
    (unscaled) dotted with its eight activations (pair planes from ``first``, broadcast
    against ``words``)."""
    x0, x1, x2, x3 = _x4(first, pstride)
    acc = _plane(words, x0, 0, vtab_ptr, FMT) + _plane(words, x0, 1, vtab_ptr, FMT)
    acc += _plane(words, x1, 2, vtab_ptr, FMT) + _plane(words, x1, 3, vtab_ptr, FMT)
    acc += _plane(words, x2, 4, vtab_ptr, FMT) + _plane(words, x2, 5, vtab_ptr, FMT)
    acc += _plane(words, x3, 6, vtab_ptr, FMT) + _plane(words, x3, 7, vtab_ptr, FMT)
    return acc


@triton.jit
def _e2m1_word_dots(words, first, pstride, vtab_ptr, t0, t1, t2, FMT: tl.constexpr, ASM: tl.constexpr):
    """fp32, shaped like ``words``: each e2m1 word's eight weights (unscaled) dotted with its
    activations (pair planes from ``first``). With ASM one inline block per word
    (ptx_decode's e2m1 block, its table words ``t0``-``t2``)."""
    if ASM:
        x0, x1, x2, x3 = _x4(first, pstride)
        return tl.inline_asm_elementwise(_E2M1_ASM, _E2M1_CONS, [words, x0, x1, x2, x3, t0, t1, t2],
                                         dtype=tl.float32, is_pure=True, pack=1)
    return _word_dots(words, first, pstride, vtab_ptr, FMT)


@triton.jit
def _halves(t):
    """[..., 4] → ([..., 2], [..., 2]): elements 2h and 2h + 1 of the last axis."""
    return tl.split(tl.reshape(t, t.shape[:-1] + [2, 2]))


@triton.jit
def _e2m1_pair_dots(words, first, pstride, vtab_ptr, t0, t1, t2, FMT: tl.constexpr, ASM: tl.constexpr):
    """fp32 [R, U, 2]: the sixteen weights (unscaled) of each pair of e2m1 words 2h, 2h + 1
    of a unit (``words`` [R, U, 4]: one NVFP4 scale group a pair) dotted with their
    activations (pair planes from ``first``, [1, U, 4] as for the one-word block, so that
    each plane is still one vector load of a unit's four words). With ASM one inline block
    per pair (ptx_decode's two-word e2m1 block: the products summed in fp16)."""
    x0, x1, x2, x3 = _x4(first, pstride)
    w0, w1 = _halves(words)
    if ASM:
        a0, b0 = _halves(x0)
        a1, b1 = _halves(x1)
        a2, b2 = _halves(x2)
        a3, b3 = _halves(x3)
        return tl.inline_asm_elementwise(_E2M1_PAIR_ASM, _E2M1_PAIR_CONS,
                                         [w0, w1, a0, a1, a2, a3, b0, b1, b2, b3, t0, t1, t2],
                                         dtype=tl.float32, is_pure=True, pack=1)
    part = _word_dots(words, first, pstride, vtab_ptr, FMT)
    even, odd = _halves(part)
    return even + odd


@triton.jit
def nf3_fourth_word(a, b, c):
    """The fourth code word of nibble-layout groups (codes 24-31, from the top bits of the
    nibbles of words a, b, c) with its codes in the low bits of its nibbles (its own top
    bits clear). Signed or unsigned words alike: the masks drop what a shift brings in.
    Also the grouped tiles' (expert_mlp.py)."""
    return ((a >> 3) & 0x11111111) | ((b >> 2) & 0x22222222) | ((c >> 1) & 0x44444444)


@triton.jit
def _nf3_group_dots(a, b, c, first, wstride, pstride, vtab_ptr, t0, t1, t2, t3, ASM: tl.constexpr,
                    X4: tl.constexpr = False):
    """fp32, shaped like ``a``: each NF3 group's 32 weights (unscaled; words a, b, c in
    nibble layout) dotted with their activations — word j's pair planes from ``first`` +
    j·wstride. With ASM one inline block per group (ptx_decode's group block: three of the
    four selectors are one AND, the products of two words summed in fp16; with X4, tile
    option ``nf3x4``, of all four words). Without ASM (the interpreter) the products are
    summed in fp32 and X4 changes nothing."""
    if ASM:
        xa0, xa1, xa2, xa3 = _x4(first, pstride)
        xb0, xb1, xb2, xb3 = _x4(first + wstride, pstride)
        xc0, xc1, xc2, xc3 = _x4(first + 2 * wstride, pstride)
        xd0, xd1, xd2, xd3 = _x4(first + 3 * wstride, pstride)
        return tl.inline_asm_elementwise(
            _NF3_ASM4 if X4 else _NF3_ASM, _NF3_CONS,
            [a, b, c, xa0, xa1, xa2, xa3, xb0, xb1, xb2, xb3, xc0, xc1, xc2, xc3, xd0, xd1, xd2, xd3,
             t0, t1, t2, t3],
            dtype=tl.float32, is_pure=True, pack=1)
    part = _word_dots(a, first, pstride, vtab_ptr, 0)
    part += _word_dots(b, first + wstride, pstride, vtab_ptr, 0)
    part += _word_dots(c, first + 2 * wstride, pstride, vtab_ptr, 0)
    part += _word_dots(nf3_fourth_word(a, b, c), first + 3 * wstride, pstride, vtab_ptr, 0)
    return part


@triton.jit
def _scale(sb, stab_ptr, FMT: tl.constexpr):
    """fp32 group scales from their bits: e4m3 by shifts, as 2**-8 times the scale (no
    load: e4m3's exponent and mantissa fit under fp16's, whose bias is 8 more; its NaN
    patterns, which a checkpoint never holds, come out finite); e8m0 from the table."""
    if FMT == 2:
        return tl.load(stab_ptr + sb.to(tl.int32)).to(tl.float32)
    b = sb.to(tl.int32)
    return (((b & 0x80) << 8) | ((b & 0x7F) << 7)).to(tl.int16).to(tl.float16, bitcast=True).to(tl.float32)


@triton.jit
def _scale_unit(FMT: tl.constexpr):
    """What ``_scale``'s values must be multiplied by."""
    if FMT == 2:
        return 1.0
    return 256.0


# cp.async.bulk.prefetch.L2 (SM90+): one thread asks the copy engine to bring a byte
# range into L2 and goes on; the dummy output keeps the statement (it is not pure)
_L2PF_ASM = tl.constexpr("""{
.reg .pred pf_p;
.reg .b32 pf_t;
mov.u32 pf_t, %tid.x;
setp.eq.u32 pf_p, pf_t, 0;
@pf_p cp.async.bulk.prefetch.L2.global [$1], $2;
mov.u32 $0, 0;
}""")


@triton.jit
def _l2_prefetch(ptr, nbytes):
    """Prefetch ``nbytes`` from ``ptr`` into L2, widened to whole 16-byte blocks (the bulk
    copy's alignment)."""
    a = ptr.to(tl.int64)
    lo = a & -16
    hi = (a + nbytes + 15) & -16
    tl.inline_asm_elementwise(_L2PF_ASM, "=r,l,r", [lo, (hi - lo).to(tl.int32)], dtype=tl.int32,
                              is_pure=False, pack=1)


@triton.jit
def _prefetch_rows(wbase, sbase, row0, up_off, stride_wn, stride_sn, R: tl.constexpr, PAIRED: tl.constexpr):
    """L2 prefetch of a program's weight rows and scales over all of K: rows row0.. (and
    their up rows with PAIRED). A tiled NF3 tier's 16-row blocks interleave their rows, so
    there the same range is this program's share of its block, whose other programs
    prefetch the rest."""
    n: tl.constexpr = R // 2 if PAIRED else R
    _l2_prefetch(wbase + row0 * stride_wn, n * stride_wn * 4)
    _l2_prefetch(sbase + row0 * stride_sn, n * stride_sn)
    if PAIRED:
        _l2_prefetch(wbase + (row0 + up_off) * stride_wn, n * stride_wn * 4)
        _l2_prefetch(sbase + (row0 + up_off) * stride_sn, n * stride_sn)


@triton.jit
def _rows_dot(w_ptr, s_ptr, e, row0, up_off, stride_we, stride_wn, stride_se, stride_sn, vec_ptr, K,
              vtab_ptr, stab_ptr, t0, t1, t2, t3, FMT: tl.constexpr, GROUP: tl.constexpr,
              R: tl.constexpr, BK: tl.constexpr, ASM: tl.constexpr, PAIRED: tl.constexpr, PDL: tl.constexpr,
              TILED: tl.constexpr = False, L2PF: tl.constexpr = False, CLAMP: tl.constexpr = False,
              E2M1X2: tl.constexpr = False, NF3X4: tl.constexpr = False):
    """fp32 [R]: R weight rows of local expert e times the activations — rows row0.. , or
    with PAIRED the interleaved pairs (row0 + i, up_off + row0 + i), a gate row and its up
    row, so both come out of one pass over K. ``w_ptr``: the packed tensor viewed as int32
    (strides in words); ``vec_ptr``: the activations in this tier's plane order, as 32-bit
    words of fp16 pairs.

    The next K-block's weight words and scales are loaded before the current block is
    decoded (two blocks ahead, session 8: +38 registers, 2-10 % slower from 2 tokens on,
    sweep_h200_s8_pf.json). With PDL (programmatic dependent launch: this kernel may
    start while the one writing the activations still runs) the first block's weights
    are loaded before waiting for that kernel, the activations after. With CLAMP (tile
    option ``clamp``) the next block's offset is clamped to the last block instead of its
    loads being masked — the last step reloads the last block, unused — so that no load
    needs a predicate or a zero-fill (K is a whole number of blocks: fit_tile). With E2M1X2
    (tile option ``e2m1x2``, kept tiers) a unit's words 0-1 and 2-3 go through one two-word
    block each (``_e2m1_pair_dots``) and take one scale multiply; with NF3X4 (tile option
    ``nf3x4``, NF3 tiers) a group's four words are summed in fp16 in one run. Partial
    sums stay per element and are reduced once at the end (a reduction across lanes every
    K-step would cost more than the decoding).

    Layouts: every tensor of the loop keeps units across lanes and rows (and a unit's
    words) in registers, the layout of the activation loads, which serve all R rows. The
    weight words and scales are loaded as flat tensors and reshaped for that: loaded as
    2-D tensors strided along both axes, Triton gave them a layout with rows across
    lanes, and each K-step moved them through shared memory into the activations' layout
    (compile_probe, Triton 3.6: shared-memory operations and barriers per loop 19 → 0
    for NF3, 14 → 0 for e2m1)."""
    U: tl.constexpr = BK // 32
    tl.static_assert(not TILED or BK % 128 == 0, "tiled NF3 codes are read in whole 128-wide tiles")
    pstride = K // 8
    wbase = w_ptr + e.to(tl.int64) * stride_we
    sbase = s_ptr + e.to(tl.int64) * stride_se
    if L2PF and ASM:
        _prefetch_rows(wbase, sbase, row0, up_off, stride_wn, stride_sn, R, PAIRED)
    if FMT == 0:
        # element i of the flat tensors: row i // U, unit i % U
        i = tl.arange(0, R * U)
        rows = _row_of(i // U, row0, up_off, PAIRED, TILED)
        unit = i % U
        if TILED:
            p = wbase + nf3_tiled_offset(rows, unit, stride_wn, 192)
            q = sbase + nf3_tiled_offset(rows, unit, stride_sn, 64)
        else:
            p = wbase + rows * stride_wn + unit * 3
            # one scale byte per unit; contiguity hidden so that each lane loads its own
            # unit's byte (a vectorised load would give a thread four units, another layout)
            q = sbase + rows * stride_sn + tl.max_contiguous(unit, 1)
        WS: tl.constexpr = 64 if TILED else 1  # from one of a group's words to the next
        d0n = tl.load(p)
        d1n = tl.load(p + WS)
        d2n = tl.load(p + 2 * WS)
        sbn = tl.load(q)
        if PDL:
            tl.extra.cuda.gdc_wait()
        unit2 = tl.arange(0, U)[None, :]
        acc = tl.zeros([R, U], dtype=tl.float32)
        for k0 in range(0, K, BK):
            d0 = tl.reshape(d0n.to(tl.uint32, bitcast=True), [R, U])
            d1 = tl.reshape(d1n.to(tl.uint32, bitcast=True), [R, U])
            d2 = tl.reshape(d2n.to(tl.uint32, bitcast=True), [R, U])
            sb = tl.reshape(sbn, [R, U])
            if CLAMP:
                # the next K-block, or the last one again after the last step
                nk = tl.minimum(k0 + BK, K - BK)
                pn = p + (nk // 128 * 192 if TILED else nk // 32 * 3)
                d0n = tl.load(pn)
                d1n = tl.load(pn + WS)
                d2n = tl.load(pn + 2 * WS)
                sbn = tl.load(q + (nk // 128 * 64 if TILED else nk // 32))
            else:
                more = (unit + (k0 + BK) // 32) * 32 < K
                # the next K-block: U groups on along the row, or U / 4 tiles on when tiled
                p += (BK // 128) * 192 if TILED else U * 3
                d0n = tl.load(p, mask=more)
                d1n = tl.load(p + WS, mask=more)
                d2n = tl.load(p + 2 * WS, mask=more)
                sbn = tl.load(q + ((k0 + BK) // 128 * 64 if TILED else (k0 + BK) // 32), mask=more)
            first = vec_ptr + (k0 // 32 + unit2)
            part = _nf3_group_dots(d0, d1, d2, first, K // 32, pstride, vtab_ptr, t0, t1, t2, t3, ASM, NF3X4)
            acc += part * _scale(sb, stab_ptr, FMT)
        return tl.sum(acc, axis=1) * _scale_unit(FMT)
    else:
        # words: element i of the flat tensor is row i // 4U, unit (i // 4) % U, word i % 4
        # (each lane's four words one 16-byte load); scales: element j is row j // U, unit
        # j % U, its GROUP-wide scales (NVFP4: two bytes) widened to the unit's four words
        i = tl.arange(0, R * U * 4)
        p = wbase + _row_of(i // (4 * U), row0, up_off, PAIRED) * stride_wn + i % (4 * U)
        j = tl.arange(0, R * U)
        SPU: tl.constexpr = 32 // GROUP  # scales per unit
        q = sbase + _row_of(j // U, row0, up_off, PAIRED) * stride_sn + tl.max_contiguous(j % U, 1) * SPU
        wn = tl.load(p)
        sbn = _unit_scales(q, None, SPU)
        if PDL:
            tl.extra.cuda.gdc_wait()
        unit = tl.arange(0, U)[None, :, None]
        word = tl.arange(0, 4)[None, None, :]
        acc = tl.zeros([R, U, 2 if E2M1X2 else 4], dtype=tl.float32)
        for k0 in range(0, K, BK):
            words = tl.reshape(wn.to(tl.uint32, bitcast=True), [R, U, 4])
            if E2M1X2:
                sb = _pair_unit_scales(sbn, R, U, SPU).to(tl.uint8)  # for words 2h, 2h + 1
            else:
                sb = _widen_unit_scales(sbn, R, U, SPU)
            if CLAMP:
                nk = tl.minimum(k0 + BK, K - BK)
                wn = tl.load(p + nk // 8)
                sbn = _unit_scales(q + nk // GROUP, None, SPU)
            else:
                wn = tl.load(p + (k0 + BK) // 8, mask=(i // 4 % U + (k0 + BK) // 32) * 32 < K)
                sbn = _unit_scales(q + (k0 + BK) // GROUP, (j % U + (k0 + BK) // 32) * 32 < K, SPU)
            first = vec_ptr + (k0 // 8 + unit * 4 + word)
            if E2M1X2:
                part = _e2m1_pair_dots(words, first, pstride, vtab_ptr, t0, t1, t2, FMT, ASM)
            else:
                part = _e2m1_word_dots(words, first, pstride, vtab_ptr, t0, t1, t2, FMT, ASM)
            acc += part * _scale(sb, stab_ptr, FMT)
        return tl.sum(tl.sum(acc, axis=2), axis=1) * _scale_unit(FMT)


@triton.jit
def nf3_tiled_offset(rows, unit, stride_n, TILE: tl.constexpr):
    """Offset of group ``unit`` of each row in a tiled NF3 matrix (formats/nf3_tiled.py) of
    row stride ``stride_n``: of its first word with TILE 192 (a 16-row × 128-column tile's
    words, ordered [word][lane][row pair]: its next words 64 and 128 on), of its scale byte
    with TILE 64 (the tile's scales, [lane][row pair]). Also the grouped tiles'
    (expert_mlp.py)."""
    return (rows // 16 * 16 * stride_n + unit // 4 * TILE + 2 * (4 * (rows % 8) + unit % 4)
            + (rows % 16) // 8)


@triton.jit
def _row_of(r, row0, up_off, PAIRED: tl.constexpr, TILED: tl.constexpr = False):
    """Weight row of tile row r: row0 + r, or with PAIRED gate row row0 + r // 2 for even r
    and its up row (up_off further) for odd r — each through ``tiled_row`` when TILED."""
    if PAIRED:
        rows = tiled_row(row0 + r // 2, TILED) + (r % 2) * up_off
    else:
        rows = tiled_row(row0 + r, TILED)
    return rows.to(tl.int64)


@triton.jit
def tiled_row(c, TILED: tl.constexpr):
    """The row a program's output c computes: c itself, or for a tiled NF3 tier rows k and
    k + 8 of each 16-row block for c = 2k, 2k + 1 (a bijection on the block). A tile holds
    a lane's words of rows k and k + 8 side by side (formats/nf3_tiled.py), so a program of
    consecutive outputs c then uses every byte of the sectors it reads; with rows in order
    it used half of each and the program of row k + 8 read them again."""
    if TILED:
        r = c % 16
        c = c - r + r // 2 + 8 * (r % 2)
    return c


@triton.jit
def _unit_scales(q, mask, SPU: tl.constexpr):
    """The scale bytes of each unit at ``q`` (flat, one element per unit): one byte, or
    with two scales per unit (NVFP4) both, as the low and high byte of one value.
    ``mask``: None to load them all."""
    if SPU == 2:
        lo = tl.load(q, mask=mask).to(tl.int32)
        hi = tl.load(q + 1, mask=mask).to(tl.int32)
        v = lo | (hi << 8)
    else:
        v = tl.load(q, mask=mask).to(tl.int32)
    return v


@triton.jit
def _pair_unit_scales(v, R: tl.constexpr, U: tl.constexpr, SPU: tl.constexpr):
    """[R, U, 2] scale bytes, one per word pair (words 2h, 2h + 1 of a unit), from
    ``_unit_scales``'s flat values: the low byte for words 0-1 and the high byte for 2-3
    when there are two, else the unit's one byte for both."""
    v = tl.reshape(v, [R, U])
    if SPU == 2:
        lo = v & 0xFF
        hi = v >> 8
    else:
        lo = v
        hi = v
    return tl.join(lo, hi)


@triton.jit
def _widen_unit_scales(v, R: tl.constexpr, U: tl.constexpr, SPU: tl.constexpr):
    """[R, U, 4] scale bytes, one per word (``_pair_unit_scales``' byte of its pair)."""
    pair = _pair_unit_scales(v, R, U, SPU)
    return tl.interleave(pair, pair).to(tl.uint8)


@triton.jit
def _act_store(gate, up, hrow, cols, I, s2_ptr, rw, FMT: tl.constexpr, HAS_S2: tl.constexpr,
               WEIGHT_ON_INPUT: tl.constexpr):
    """silu(gate)·up of one row tile into the intermediate, in the tier's plane order."""
    if HAS_S2:
        gate *= tl.load(s2_ptr)
        up *= tl.load(s2_ptr + 1)
    if WEIGHT_ON_INPUT:
        gate *= rw
        up *= rw
    tl.store(hrow + _plane_index(cols, I, FMT), (gate * tl.sigmoid(gate) * up).to(tl.float16))


@triton.jit
def _pair(ids_ptr, tw_ptr, a_map, b_map, HAS_A: tl.constexpr, HAS_B: tl.constexpr, BN: tl.constexpr):
    """This program's routed pair p and row tile: its local expert in tier A and in tier B
    (−1: not there), routing weight and the tile's rows."""
    p = tl.program_id(0)
    g = tl.load(ids_ptr + p).to(tl.int32)
    la = tl.load(a_map + g) if HAS_A else -1
    lb = tl.load(b_map + g) if HAS_B else -1
    j = tl.program_id(1)
    return p, j, j * BN + tl.arange(0, BN), la, lb, tl.load(tw_ptr + p).to(tl.float32)


@triton.jit(do_not_specialize=["topk"])
def _gemv13_kernel(
    xa_ptr, xb_ptr, stride_xm, ids_ptr, tw_ptr, topk, K, I, h_ptr, stride_h,
    a_map, a_w, a_s, a_s2, a_swe, a_swn, a_sse, a_ssn, a_vtab, a_stab, a_t0, a_t1, a_t2,
    b_map, b_w, b_s, b_swe, b_swn, b_sse, b_ssn, b_vtab, b_stab, b_t0, b_t1, b_t2, b_t3,
    A_FMT: tl.constexpr, A_GROUP: tl.constexpr, HAS_A: tl.constexpr, HAS_B: tl.constexpr,
    A_HAS_S2: tl.constexpr, WEIGHT_ON_INPUT: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
    ASM: tl.constexpr, PDL: tl.constexpr, B_TILED: tl.constexpr = False, L2PF: tl.constexpr = False,
    KC: tl.constexpr = 0, CLAMP: tl.constexpr = False, E2M1X2: tl.constexpr = False, NF3X4: tl.constexpr = False,
):
    """``KC`` > 0 (tile option ``kconst13``): K, the hidden size, as this compile-time
    constant. ``CLAMP`` / ``E2M1X2`` / ``NF3X4``: tile options ``clamp`` / ``e2m1x2`` /
    ``nf3x4`` (_rows_dot)."""
    if KC > 0:
        K = KC
    p, j, cols, la, lb, rw = _pair(ids_ptr, tw_ptr, a_map, b_map, HAS_A, HAS_B, BN)
    xrow = (p // topk).to(tl.int64) * stride_xm
    hrow = h_ptr + p.to(tl.int64) * stride_h
    if la >= 0:
        gu = _rows_dot(a_w, a_s, la, j * BN, I, a_swe, a_swn, a_sse, a_ssn, xa_ptr + xrow, K,
                       a_vtab, a_stab, a_t0, a_t1, a_t2, 0, A_FMT, A_GROUP, 2 * BN, BK, ASM, True, PDL, False, L2PF, CLAMP,
                       E2M1X2)
        gate, up = tl.split(tl.reshape(gu, [BN, 2]))
        _act_store(gate, up, hrow, cols, I, a_s2 + la * 2, rw, A_FMT, A_HAS_S2, WEIGHT_ON_INPUT)
    elif lb >= 0:
        gu = _rows_dot(b_w, b_s, lb, j * BN, I, b_swe, b_swn, b_sse, b_ssn, xb_ptr + xrow, K,
                       b_vtab, b_stab, b_t0, b_t1, b_t2, b_t3, 0, 32, 2 * BN, BK, ASM, True, PDL, B_TILED, L2PF, CLAMP,
                       NF3X4=NF3X4)
        gate, up = tl.split(tl.reshape(gu, [BN, 2]))
        _act_store(gate, up, hrow, tiled_row(cols, B_TILED), I, a_s2, rw, 0, False, WEIGHT_ON_INPUT)
    if PDL:
        # the down GEMV may launch once every program got here: its weight prefetch then
        # overlaps this kernel's tail
        tl.extra.cuda.gdc_launch_dependents()


@triton.jit
def _gemv2_kernel(
    h_ptr, stride_h, ids_ptr, tw_ptr, I, y_ptr, stride_y,
    a_map, a_w, a_s, a_s2, a_swe, a_swn, a_sse, a_ssn, a_vtab, a_stab, a_t0, a_t1, a_t2,
    b_map, b_w, b_s, b_swe, b_swn, b_sse, b_ssn, b_vtab, b_stab, b_t0, b_t1, b_t2, b_t3,
    A_FMT: tl.constexpr, A_GROUP: tl.constexpr, HAS_A: tl.constexpr, HAS_B: tl.constexpr,
    A_HAS_S2: tl.constexpr, WEIGHT_ON_INPUT: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
    ASM: tl.constexpr, PDL: tl.constexpr, B_TILED: tl.constexpr = False, L2PF: tl.constexpr = False,
    KC: tl.constexpr = 0, CLAMP: tl.constexpr = False, E2M1X2: tl.constexpr = False, NF3X4: tl.constexpr = False,
):
    """``KC`` > 0 (tile option ``kconst2``): I, this GEMV's K, as this compile-time
    constant. ``CLAMP`` / ``E2M1X2`` / ``NF3X4``: tile options ``clamp`` / ``e2m1x2`` /
    ``nf3x4`` (_rows_dot)."""
    if KC > 0:
        I = KC
    p, j, cols, la, lb, rw = _pair(ids_ptr, tw_ptr, a_map, b_map, HAS_A, HAS_B, BN)
    hrow = h_ptr + p.to(tl.int64) * stride_h
    ybase = y_ptr + p.to(tl.int64) * stride_y
    yrow = ybase + cols
    if la >= 0:
        acc = _rows_dot(a_w, a_s, la, j * BN, 0, a_swe, a_swn, a_sse, a_ssn, hrow, I, a_vtab, a_stab,
                        a_t0, a_t1, a_t2, 0, A_FMT, A_GROUP, BN, BK, ASM, False, PDL, False, L2PF, CLAMP, E2M1X2)
        if A_HAS_S2:
            acc *= tl.load(a_s2 + la)
        if not WEIGHT_ON_INPUT:
            acc *= rw
        tl.store(yrow, acc)
    elif lb >= 0:
        acc = _rows_dot(b_w, b_s, lb, j * BN, 0, b_swe, b_swn, b_sse, b_ssn, hrow, I, b_vtab, b_stab,
                        b_t0, b_t1, b_t2, b_t3, 0, 32, BN, BK, ASM, False, PDL, B_TILED, L2PF, CLAMP, NF3X4=NF3X4)
        if not WEIGHT_ON_INPUT:
            acc *= rw
        tl.store(ybase + tiled_row(cols, B_TILED), acc)
    else:
        tl.store(yrow, tl.zeros([BN], dtype=tl.float32))
    if PDL:
        tl.extra.cuda.gdc_launch_dependents()


# tile options maxnreg13 / maxnreg2: a register cap for the gate/up and the down GEMV
# (ptxas's; compiled kernels only). Why try it: at 16 tokens ncu has both GEMVs at 128
# registers, 16 one-warp programs an SM (25 % occupancy) and no eligible warp in a third of
# the cycles (ncu_h200_s20_decode_m16.txt.gz). compile_probe, Triton 3.6, SM90: 112 keeps
# the down GEMV spill-free (the gate/up GEMV spills 16 bytes), 104 spills 48 / 32, 96 80 /
# 64 bytes with 5 % more loop instructions — more programs an SM against spill traffic.
# Measured (H200, hybrid layer, I=512, bench_moe_h200_s20_maxnreg.json): slower at every
# cap, 234.7 µs at 16 tokens uncapped against 237-254; off (unset) by default.
GEMV_MAXNREG = (64, 128)


# tile options kconst13 / kconst2: the gate/up GEMV's K (the hidden size) / the down GEMV's
# (the per-rank intermediate size) a compile-time constant, one compiled variant per layer
# shape (compiled in the warm-up before capture, like every variant). Why: with K known, the
# activation loads' plane strides (K/8 words) and the K loop's bound are immediates —
# compile_probe, Triton 3.6, SM90, GLM-5.2: the NF3 gate/up loop 422 -> 403 SASS
# instructions and 128 -> 96 registers; the down GEMV's 430 -> 399 (I=512's tiles) and
# 439 -> 399 (I=2048's).
def _switch(cfg, key) -> bool:
    """A 0 / 1 tile option of the config (absent: off)."""
    v = cfg.get(key, 0)
    if v not in (0, 1, True, False):
        raise ValueError(f"decode GEMV tile option {key} must be 0 or 1, got {v!r}")
    return bool(v)


def kconst_options(cfg) -> tuple:
    """(gate/up, down): the config's ``kconst13`` / ``kconst2``."""
    return _switch(cfg, "kconst13"), _switch(cfg, "kconst2")


# tile option clamp: each GEMV's next-K-block loads unmasked, their offset clamped to the last
# block (_rows_dot). Why: a masked load compiles to a zero-fill move and a predicate per
# register — compile_probe, Triton 3.6, SM90, GLM-5.2, with kconst13 / kconst2: the NF3 loops
# 403 -> 366 (gate/up) and 399 -> 366 SASS instructions (down, I=512's tiles). Built in
# session 26; timed in sessions 28-29 and on wherever kconst is since session 29
# (triton_tiers.GEMV_CLAMP_WITH_KCONST says why).
def clamp_option(cfg) -> bool:
    """The config's ``clamp``."""
    return _switch(cfg, "clamp")


# tile option e2m1x2: the kept tier's e2m1 words decoded and dotted two at a time, one
# NVFP4 scale group a block (ptx_decode.E2M1_PAIR_DOT_ASM: 16 products summed in fp16 before
# one conversion to fp32, as the NF3 group block sums two words). Why: per pair of words it
# saves two fp16 → fp32 conversions, an add and a scale multiply-add. It rounds differently
# from the one-word block (eight fp16 products a half before fp32, not four), so its bits are
# not the default's. Built in session 27; timed in sessions 28-29 and on wherever kconst is
# since session 29 (triton_tiers.GEMV_E2M1X2_WITH_KCONST says why). compile_probe,
# Triton 3.6, SM90, GLM-5.2, tiled NF3, kept-tier loop instructions and registers, one-word
# → two-word blocks: I=512's tiles with kconst and clamp 421 → 391 (both GEMVs), 96 → 80
# registers; kconst alone 460 → 436 (down 458 → 437); I=2048's down tiles with kconst 539 →
# 503 (96 → 80 registers), with clamp as well 505 → 466 (96 → 72). Without kconst (I=512 at
# 1-2 tokens) the gate/up GEMV takes 132 registers instead of 128, as in session 8. The NF3
# loops are the same within ±8 instructions.
def e2m1x2_option(cfg) -> bool:
    """The config's ``e2m1x2``."""
    return _switch(cfg, "e2m1x2")


# tile option nf3x4: the NF3 tier's group block sums the products of all four words in fp16
# (ptx_decode.NF3_UNIT4_DOT_ASM: 16 a half) before one conversion to fp32, where the built-in
# block sums two words at a time — e2m1x2's saving for the NF3 tier, one move, two
# conversions and two adds a group. It rounds differently (and halves the fp16 sums' headroom:
# ptx_decode), so its bits are not the default's. Built in session 29; timed in session 30
# (H100, bench_moe_h100_s30_nf3x4{1,2}_i*.json): no faster — within ±1.5 % at I=512 from 4
# tokens, 0-4 % slower at I=2048 — and the accuracy probe's max error 0.0028 -> 0.0029. Off.
def nf3x4_option(cfg) -> bool:
    """The config's ``nf3x4``."""
    return _switch(cfg, "nf3x4")


def register_caps(cfg) -> tuple:
    """(gate/up, down) launch options from the config's ``maxnreg13`` / ``maxnreg2``."""
    return tuple(register_cap(f"decode GEMV tile option {key}", cfg.get(key), GEMV_MAXNREG)
                 for key in ("maxnreg13", "maxnreg2"))


def launch_decode(a, b, x, topk_weights_flat, ids_flat, topk, planes, h, y, out, weight_on_input, cfg, asm,
                  pdl=False, l2_prefetch=False):
    """a / b: TritonTier of the kept / NF3 tier (either may be None). ``planes``: fp16
    scratch [2, ≥ tokens, hidden] for the plane-order activations; ``h``: fp16 [pairs, I];
    ``y``: [pairs, hidden], fp32 or bf16 (triton_tiers.PAIR_ROWS_DTYPE). ``asm``: decode by
    inline PTX (False under the interpreter). The GEMVs read the fp16 scratch as 32-bit
    words (pairs). ``pdl``: chain the four launches by programmatic dependent launch
    (SM90+, not under the interpreter; up to the config's ``pdl`` tokens): each kernel
    starts while the one before finishes and waits for it only where it reads that
    kernel's output. ``l2_prefetch``: the GPU has the bulk copy engine's L2 prefetch (SM90+);
    the config's ``l2pf`` then has each program prefetch its weight rows and scales over
    all of K into L2 before its first load."""
    import torch

    empty = (a or b).scales
    no_words = empty.view(torch.int32)[:0]  # an absent tier's weights: typed like the real ones
    m, hidden = x.shape
    inter = (a or b).tier.inter
    pairs = ids_flat.numel()

    def args(stage):
        res = []
        for t in (a, b):
            if t is None:
                res.append((empty, no_words, empty, empty, 0, 0, 0, 0, empty, empty))
                continue
            tw = t.tier
            w = (tw.w13 if stage == 13 else tw.w2).view(torch.int32)
            s = t.w13_scale if stage == 13 else t.w2_scale
            s2 = tw.w13_scale_2 if stage == 13 else tw.w2_scale_2
            res.append((tw.local_map, w, s, s2 if s2 is not None else empty, w.stride(0), w.stride(1),
                        s.stride(0), s.stride(1), t.values, t.scales))
        ra, rb = res
        # tier B (NF3) has no global scale argument; the tables go in as registers
        return ra + ptx_decode.E2M1_TABLE_WORDS, rb[:3] + rb[4:] + (b.table_words if b is not None else (0, 0, 0, 0))

    common = dict(A_FMT=a.fmt if a else 1, A_GROUP=(16 if a.fmt == 1 else 32) if a else 16,
                  HAS_A=a is not None, HAS_B=b is not None,
                  A_HAS_S2=bool(a is not None and a.tier.w13_scale_2 is not None),
                  B_TILED=bool(b is not None and b.tiled),
                  WEIGHT_ON_INPUT=weight_on_input, ASM=asm, num_warps=cfg["warps"],
                  L2PF=bool(cfg.get("l2pf", 0) and asm and l2_prefetch), CLAMP=clamp_option(cfg),
                  E2M1X2=e2m1x2_option(cfg), NF3X4=nf3x4_option(cfg))
    # up to cfg["pdl"] tokens (bench_moe_h200_s6_pdl.json, H200: 30.0 / 50.0 / 86.0 µs at
    # 1 / 2 / 4 tokens against 33.6 / 54.2 / 89.8 without, even at 8, 2-4 % slower from 16)
    pdl = bool(pdl and asm and m <= cfg.get("pdl", 8))
    cap13, cap2 = register_caps(cfg)  # checked everywhere, applied where ptxas compiles
    if not asm:
        cap13, cap2 = {}, {}
    xa, xb = planes[0, :m], planes[1, :m]
    blk = min(1024, triton.next_power_of_2(hidden))
    _planes_kernel[(m, triton.cdiv(hidden, blk))](x, x.stride(0), xa, xb, xa.stride(0), hidden, BLOCK=blk, PDL=pdl)
    xa32, xb32, h32 = xa.view(torch.int32), xb.view(torch.int32), h.view(torch.int32)
    ra, rb = args(13)
    bn13, bn2 = fit_tile(inter, cfg["BN13"]), fit_tile(hidden, cfg["BN2"])
    kc13, kc2 = kconst_options(cfg)
    _gemv13_kernel[(pairs, inter // bn13)](
        xa32, xb32, xa32.stride(0), ids_flat, topk_weights_flat, topk, hidden, inter, h, h.stride(0), *ra, *rb,
        BN=bn13, BK=fit_tile(hidden, cfg["BK13"]), PDL=pdl, launch_pdl=pdl, KC=hidden if kc13 else 0,
        **common, **cap13)
    ra, rb = args(2)
    _gemv2_kernel[(pairs, hidden // bn2)](
        h32, h32.stride(0), ids_flat, topk_weights_flat, inter, y, y.stride(0), *ra, *rb,
        BN=bn2, BK=fit_tile(inter, cfg["BK2"]), PDL=pdl, launch_pdl=pdl, KC=inter if kc2 else 0,
        **common, **cap2)
    pair_sum.launch(y, out, topk, pdl=pdl)  # every pair row was written (zeros for a pair no tier holds)
