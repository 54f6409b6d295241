"""The NF3 and NVFP4 tiers' grouped GEMMs on Hopper's warpgroup MMA (``wgmma``), written
in Gluon: the weight operand decoded straight into wgmma's register A operand, exactly as
mma_gluon.py decodes it into mma.sync's, and the activations in shared memory as its B
operand, 16-256 tokens wide. Imported only through kernels/mma_tiles.py.

Why: on mma.sync each 16-32-token block decodes its expert's weights again, and decoding
(~2.5 integer instructions a weight) is what bounds the grouped path on the H200 (the
time grows with the tokens: README, what limits the kernels). wgmma's A fragment in
registers is, warp by warp, mma.sync m16n8k16's A fragment (PTX ISA, wgmma register
fragments), so the lane-owned NF3 groups of mma_gluon.py reach it without data movement —
``convert_layout(..., assert_trivial=True)`` proves it at compile time — while one wgmma
multiplies them with up to 256 tokens: a weight is decoded once per block of up to 256
routed pairs.

Layouts (W warps, a multiple of four: W/4 warpgroups stacked along the weight rows; a row
tile of BN = 16·W rows; K steps of BK = 128):
- ``MMA``: wgmma's accumulator [BN, BM], instruction shape 16 × BM × 16;
- A: its dot-operand layout, from the words in mma_gluon.layouts' ``LW``;
- B: the activations [BM, BK] (tokens × K, K contiguous) in a 128-byte-swizzled shared
  buffer, read through a transposed view; filled by cp.async from the rows the routing
  sorted into this block (``XL``: 16 bytes a thread), STAGES buffers deep, so that no
  register holds them and the next steps' copies fly while this one is decoded.

Built and compiled for SM90 on a CPU (Triton 3.6, the H200 host's, and 3.8) in session 12;
first run on the H200 in session 13, correct as written and 21-34 % faster than the
mma.sync kernels from 768 tokens (the default on SM 9.x since: backends/triton_tiers.py,
``all_wgmma``). Each MMA is synchronous: asynchronous MMAs overlapping the next step's
decode were tried in session 13 and gave wrong results, no faster where timed
(bench/results/s13_runs/wg_async.patch, not on main). Session 15 built two correct forms
(the synchronous kernels' bits in every GPU test) and dropped both: each step's first MMA
in flight while its second A tile is decoded, every A operand defined and waited for in one
iteration (s15_runs/wg_async.patch: 1-6 % slower from 768 tokens, 1 % faster below), and
the A tile through shared memory with every MMA asynchronous (s15_runs/wg_ashared.patch:
30-60 % slower — wgmma then reads both operands from shared memory, at 16-80 tokens a
block). With register caps that fit more programs an SM also slower (tile option
``wg_maxnreg``), what bounds these kernels is neither the MMA's latency nor occupancy but
the L1 data pipe the weight loads go through (ncu: 72-75 % of its wavefronts;
mma_gluon._load_group).

Tile option ``wg_tail`` (session 14; mma_tiles.block_slots says why): a block of BM slots
and TAIL more, the tail's activations in their own buffers, its TAIL-wide MMAs reusing
each decoded A tile in a branch taken only when the tail holds a pair — so an expert with
a few pairs over BM does not decode its weights for a second block.
"""
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.ampere import async_copy
from triton.experimental.gluon.language.nvidia.hopper import fence_async_shared, warpgroup_mma

from .mma_gluon import _a_operand, _group_ptrs, _load_group, _split_gu, _step_offsets, _store2, _store13, gu_layout

# a CTA-wide barrier: gl.barrier in Triton 3.8, gl.thread_barrier in 3.6 (the H200 host's)
_cta_barrier = getattr(gl, "barrier", None) or gl.thread_barrier


def layouts(BM: int, W: int):
    """(accumulator layout MMA, activation copy layout XL, shared layout SHL) of a tile of
    BM tokens on W warps."""
    mma = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[W, 1], instr_shape=[16, BM, 16])
    xl = gl.BlockedLayout(size_per_thread=[1, 8], threads_per_warp=[2, 16], warps_per_cta=[W, 1], order=[1, 0])
    shl = gl.NVMMASharedLayout(swizzle_byte_width=128, element_bitwidth=16, rank=2)
    return mma, xl, shl


@gluon.jit
def _b_rows(base, rows, stride, BK: gl.constexpr, XL: gl.constexpr):
    """[BM, BK] pointers to the first K step of the given rows (int64, SliceLayout(1, XL))."""
    return base + gl.expand_dims(rows * stride, 1) + gl.expand_dims(gl.arange(0, BK, layout=gl.SliceLayout(0, XL)), 0)


@gluon.jit
def _b_issue(bs, ptrs, step, K, BK: gl.constexpr, STAGES: gl.constexpr, XL: gl.constexpr):
    """cp.async of K step ``step`` into its buffer, one commit group (empty past K, so that
    every step commits one group and the wait count stays fixed)."""
    kk = gl.arange(0, BK, layout=gl.SliceLayout(0, XL)) + step * BK
    inside = gl.expand_dims(kk < K, 0)
    async_copy.async_copy_global_to_shared(bs.index(step % STAGES), ptrs + step * BK, mask=inside)
    async_copy.commit_group()


@gluon.jit
def _b_tail_copy(bs, ptrs, step, K, has_tail, BK: gl.constexpr, STAGES: gl.constexpr, XL: gl.constexpr):
    """The tail's cp.async of K step ``step``, in the commit group that the block's
    ``_b_issue`` of the step closes next; no bytes read when the tail is empty (its buffer
    is then never multiplied)."""
    kk = gl.arange(0, BK, layout=gl.SliceLayout(0, XL)) + step * BK
    inside = gl.expand_dims((kk < K) & has_tail, 0)
    async_copy.async_copy_global_to_shared(bs.index(step % STAGES), ptrs + step * BK, mask=inside)


@gluon.jit
def _b_ready(bs, step, STAGES: gl.constexpr):
    """Step ``step``'s buffer, transposed to [BK, BM], once every thread's copies into it
    have landed and are visible to the async proxy that wgmma reads through. The barrier
    also tells each thread that every warpgroup's (synchronous) wgmma of the step before
    is done, so the buffer that step read may be refilled after this call."""
    async_copy.wait_group(STAGES - 2)
    fence_async_shared()
    _cta_barrier()
    return bs.index(step % STAGES).permute((1, 0))


@gluon.jit
def _has_tail(sorted_ptr, slot0, P, BM: gl.constexpr):
    """Whether the block's tail (the slots after its BM) holds a pair: an expert's pairs
    fill its slots in order, so a tail whose first slot is padding is empty."""
    return gl.load(sorted_ptr + slot0 + BM) < P


@gluon.jit
def _b_step(bs, bts, ptrs, tptrs, i, K, has_tail, BK: gl.constexpr, STAGES: gl.constexpr, XL: gl.constexpr,
            XL_T: gl.constexpr, TAIL: gl.constexpr):
    """(block, tail) activation buffers of step ``i`` once ready (the tail's is the block's
    without a tail), and step i + STAGES − 1's copies issued, the tail's in the group the
    block's closes (``_b_tail_copy``)."""
    b = _b_ready(bs, i, STAGES)
    bt = b
    if TAIL > 0:
        bt = bts.index(i % STAGES).permute((1, 0))
        _b_tail_copy(bts, tptrs, i + STAGES - 1, K, has_tail, BK, STAGES, XL_T)
    _b_issue(bs, ptrs, i + STAGES - 1, K, BK, STAGES, XL)
    return b, bt


@gluon.jit
def _mma_block(a, b, bt, acc, acc_t, has_tail, TAIL: gl.constexpr):
    """One decoded A tile times the block's activations and, when the tail holds a pair,
    the tail's (accumulators ``acc`` / ``acc_t``; ``acc_t`` unused without a tail)."""
    acc = warpgroup_mma(a, b, acc)
    if TAIL > 0:
        if has_tail:
            acc_t = warpgroup_mma(a, bt, acc_t)
    return acc, acc_t


@gluon.jit
def _store_gate_up(acc_g, acc_u, e, slot0, j, s2_ptr, sorted_ptr, tw_ptr, inter_ptr, stride_im, P,
                   HAS_S2: gl.constexpr, WEIGHT_ON_INPUT: gl.constexpr, BM: gl.constexpr, BN: gl.constexpr,
                   MMA: gl.constexpr, GU: gl.constexpr):
    """mma_gluon._store13 of BM slots' accumulators; with ``GU`` their gate and up rows both
    in ``acc_g`` (``acc_u`` unused), split first (mma_gluon._split_gu)."""
    if GU:
        W: gl.constexpr = BN // 16
        g, u = _split_gu(acc_g, W)
        _store13(g, u, e, slot0, j, s2_ptr, sorted_ptr, tw_ptr, inter_ptr, stride_im, P, HAS_S2, WEIGHT_ON_INPUT,
                 BM, BN // 2, gu_layout(W))
    else:
        _store13(acc_g, acc_u, e, slot0, j, s2_ptr, sorted_ptr, tw_ptr, inter_ptr, stride_im, P, HAS_S2,
                 WEIGHT_ON_INPUT, BM, BN, MMA)


@gluon.jit(do_not_specialize=["P", "topk", "pt0", "pt1", "pt2", "pt3"])
def wg13_kernel(x_ptr, stride_xm, w_ptr, s_ptr, s2_ptr, sorted_ptr, bexp_ptr, tw_ptr, inter_ptr, stride_im,
                pt0, pt1, pt2, pt3, P, topk, K, I, stride_we, stride_wn, stride_se, stride_sn,
                FMT: gl.constexpr, HAS_S2: gl.constexpr, WEIGHT_ON_INPUT: gl.constexpr, BM: gl.constexpr,
                BN: gl.constexpr, BK: gl.constexpr, MMA: gl.constexpr, LW: gl.constexpr, XL: gl.constexpr,
                SHL: gl.constexpr, STAGES: gl.constexpr, TAIL: gl.constexpr = 0, MMA_T: gl.constexpr = None,
                XL_T: gl.constexpr = None, TILED: gl.constexpr = False, GU: gl.constexpr = False):
    """Gate and up rows [j·BN, +BN) of one expert block of BM routed pairs (and TAIL more,
    tile option ``wg_tail``: mma_tiles.block_slots); silu(gate)·up into the intermediate
    cache, columns in activation order (mma_gluon.mma13_kernel's contract). ``x_ptr``: fp16
    activations in activation order. The tail's TAIL-wide MMAs reuse each decoded weight
    tile and run only when the tail holds a pair.

    ``GU`` (tile option ``wg_gu``): the tile's BN rows are gate rows [j·BN/2, +BN/2) and
    the up rows of the same columns, one accumulator and one decoded A tile a step instead
    of two of each — half the accumulator registers a token, so that a block can be twice
    as wide (128 tokens) at the registers 64 took, and each weight is decoded once per 128
    routed pairs (as 4096 tokens give GLM-5.2's experts) instead of per 64. Session 17,
    H200: the two-tile kernels' results (GPU tests), slower in every class — see
    mma_tiles.wgmma_gu — so off by default."""
    gl.static_assert(BK == 128, "one 128-wide window a K step")
    gl.static_assert(STAGES >= 2, "a step's copy is issued while the step before is multiplied")
    A_DOT: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=MMA, k_width=2)
    blk = gl.program_id(0)
    j = gl.program_id(1)
    e = gl.load(bexp_ptr + blk)
    if e < 0:
        return
    slot0 = blk * (BM + TAIL)
    pairs_x = gl.load(sorted_ptr + slot0 + gl.arange(0, BM, layout=gl.SliceLayout(1, XL)))
    tok_x = gl.where(pairs_x < P, pairs_x // topk, 0).to(gl.int64)
    xp = _b_rows(x_ptr, tok_x, stride_xm, BK, XL)
    bs = gl.allocate_shared_memory(gl.float16, [STAGES, BM, BK], SHL)
    if TAIL > 0:
        has_tail = _has_tail(sorted_ptr, slot0, P, BM)
        pairs_t = gl.load(sorted_ptr + slot0 + BM + gl.arange(0, TAIL, layout=gl.SliceLayout(1, XL_T)))
        xtp = _b_rows(x_ptr, gl.where(pairs_t < P, pairs_t // topk, 0).to(gl.int64), stride_xm, BK, XL_T)
        bts = gl.allocate_shared_memory(gl.float16, [STAGES, TAIL, BK], SHL)
        acc_gt = gl.zeros([BN, TAIL], gl.float32, MMA_T)
        acc_ut = gl.zeros([BN, TAIL], gl.float32, MMA_T)  # unused with GU
    else:  # no tail: what the step helpers take and, without a tail, never read
        has_tail = False
        xtp = xp
        bts = bs
    for s in gl.static_range(STAGES - 1):
        if TAIL > 0:
            _b_tail_copy(bts, xtp, s, K, has_tail, BK, STAGES, XL_T)
        _b_issue(bs, xp, s, K, BK, STAGES, XL)
    if GU:
        gw, gs = _group_ptrs(w_ptr, s_ptr, e, j * (BN // 2), stride_we, stride_wn, stride_se, stride_sn, BN, BK,
                             LW, FMT, TILED, True, I - BN // 2)
        acc_u = gl.zeros([BN, BM], gl.float32, MMA)  # unused: the up rows are in acc_g
    else:
        gw, gs = _group_ptrs(w_ptr, s_ptr, e, j * BN, stride_we, stride_wn, stride_se, stride_sn, BN, BK, LW, FMT,
                             TILED)
        uw = gw + I * stride_wn
        us = gs + I * stride_sn
        acc_u = gl.zeros([BN, BM], gl.float32, MMA)
        uwd, usc = _load_group(uw, us, 0, 0, FMT, TILED)
    acc_g = gl.zeros([BN, BM], gl.float32, MMA)
    if TAIL == 0:
        acc_gt = acc_g
        acc_ut = acc_g
    gwd, gsc = _load_group(gw, gs, 0, 0, FMT, TILED)
    for i in range(0, K // BK):
        # the next step's words in flight while this one is decoded (the last step reloads
        # its own: no mask, no zero-fill)
        kw, ks = _step_offsets(gl.minimum(i * BK + BK, K - BK), FMT, TILED)
        ngw, ngs = _load_group(gw, gs, kw, ks, FMT, TILED)
        if not GU:
            nuw, nus = _load_group(uw, us, kw, ks, FMT, TILED)
        a = _a_operand(gwd, gsc, pt0, pt1, pt2, pt3, FMT, BN, BK, A_DOT)
        b, bt = _b_step(bs, bts, xp, xtp, i, K, has_tail, BK, STAGES, XL, XL_T, TAIL)
        acc_g, acc_gt = _mma_block(a, b, bt, acc_g, acc_gt, has_tail, TAIL)
        if not GU:
            a = _a_operand(uwd, usc, pt0, pt1, pt2, pt3, FMT, BN, BK, A_DOT)
            acc_u, acc_ut = _mma_block(a, b, bt, acc_u, acc_ut, has_tail, TAIL)
            uwd = nuw
            usc = nus
        gwd = ngw
        gsc = ngs
    async_copy.wait_group(0)
    _store_gate_up(acc_g, acc_u, e, slot0, j, s2_ptr, sorted_ptr, tw_ptr, inter_ptr, stride_im, P, HAS_S2,
                   WEIGHT_ON_INPUT, BM, BN, MMA, GU)
    if TAIL > 0:
        if has_tail:
            _store_gate_up(acc_gt, acc_ut, e, slot0 + BM, j, s2_ptr, sorted_ptr, tw_ptr, inter_ptr, stride_im, P,
                           HAS_S2, WEIGHT_ON_INPUT, TAIL, BN, MMA_T, GU)


@gluon.jit(do_not_specialize=["P", "topk", "pt0", "pt1", "pt2", "pt3"])
def wg2_kernel(inter_ptr, stride_im, w_ptr, s_ptr, s2_ptr, sorted_ptr, bexp_ptr, tw_ptr, out_ptr, stride_om,
               pt0, pt1, pt2, pt3, P, topk, K, stride_we, stride_wn, stride_se, stride_sn,
               FMT: gl.constexpr, HAS_S2: gl.constexpr, WEIGHT_ON_INPUT: gl.constexpr, PAIR_ROWS: gl.constexpr,
               BM: gl.constexpr, BN: gl.constexpr, BK: gl.constexpr, MMA: gl.constexpr, LW: gl.constexpr,
               XL: gl.constexpr, SHL: gl.constexpr, STAGES: gl.constexpr, TAIL: gl.constexpr = 0,
               MMA_T: gl.constexpr = None, XL_T: gl.constexpr = None, TILED: gl.constexpr = False):
    """Down rows [j·BN, +BN) of one expert block (BM slots, and TAIL more as in wg13_kernel)
    from the intermediate cache (K = the intermediate size, in activation order): each
    pair's row stored (PAIR_ROWS; its dtype the workspace's) or added atomically into its token's row
    (mma_gluon.mma2_kernel's contract)."""
    gl.static_assert(BK == 128, "one 128-wide window a K step")
    gl.static_assert(STAGES >= 2, "a step's copy is issued while the step before is multiplied")
    A_DOT: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=MMA, k_width=2)
    blk = gl.program_id(0)
    j = gl.program_id(1)
    e = gl.load(bexp_ptr + blk)
    if e < 0:
        return
    slot0 = blk * (BM + TAIL)
    slots_x = (slot0 + gl.arange(0, BM, layout=gl.SliceLayout(1, XL))).to(gl.int64)
    hp = _b_rows(inter_ptr, slots_x, stride_im, BK, XL)
    bs = gl.allocate_shared_memory(gl.float16, [STAGES, BM, BK], SHL)
    if TAIL > 0:
        has_tail = _has_tail(sorted_ptr, slot0, P, BM)
        slots_t = (slot0 + BM + gl.arange(0, TAIL, layout=gl.SliceLayout(1, XL_T))).to(gl.int64)
        htp = _b_rows(inter_ptr, slots_t, stride_im, BK, XL_T)
        bts = gl.allocate_shared_memory(gl.float16, [STAGES, TAIL, BK], SHL)
        acc_t = gl.zeros([BN, TAIL], gl.float32, MMA_T)
    else:  # no tail: what the step helpers take and, without a tail, never read
        has_tail = False
        htp = hp
        bts = bs
    for s in gl.static_range(STAGES - 1):
        if TAIL > 0:
            _b_tail_copy(bts, htp, s, K, has_tail, BK, STAGES, XL_T)
        _b_issue(bs, hp, s, K, BK, STAGES, XL)
    wp, sp = _group_ptrs(w_ptr, s_ptr, e, j * BN, stride_we, stride_wn, stride_se, stride_sn, BN, BK, LW, FMT, TILED)
    acc = gl.zeros([BN, BM], gl.float32, MMA)
    if TAIL == 0:
        acc_t = acc
    wd, sc = _load_group(wp, sp, 0, 0, FMT, TILED)
    for i in range(0, K // BK):
        kw, ks = _step_offsets(gl.minimum(i * BK + BK, K - BK), FMT, TILED)
        nwd, nsc = _load_group(wp, sp, kw, ks, FMT, TILED)
        a = _a_operand(wd, sc, pt0, pt1, pt2, pt3, FMT, BN, BK, A_DOT)
        b, bt = _b_step(bs, bts, hp, htp, i, K, has_tail, BK, STAGES, XL, XL_T, TAIL)
        acc, acc_t = _mma_block(a, b, bt, acc, acc_t, has_tail, TAIL)
        wd = nwd
        sc = nsc
    async_copy.wait_group(0)
    _store2(acc, e, slot0, j, s2_ptr, sorted_ptr, tw_ptr, out_ptr, stride_om, P, topk, HAS_S2, WEIGHT_ON_INPUT,
            PAIR_ROWS, BM, BN, MMA)
    if TAIL > 0:
        if has_tail:
            _store2(acc_t, e, slot0 + BM, j, s2_ptr, sorted_ptr, tw_ptr, out_ptr, stride_om, P, topk, HAS_S2,
                    WEIGHT_ON_INPUT, PAIR_ROWS, TAIL, BN, MMA_T)
