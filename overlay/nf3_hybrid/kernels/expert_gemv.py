"""Decode path: one program per (routed pair, tile of output rows), both tiers in one launch.

With a few tokens a step, an expert sees about one token, so there is nothing to share
between tokens and the work is streaming each routed expert's packed weights once.
These kernels need no routing sort at all: program p reads pair p's expert id, looks
it up in each tier's local map (−1 = not in that tier) and runs that tier's rows.

Weights stay in the checkpoint's packing. A tile is laid out as [rows, groups, words
(or bytes), codes] — a group being the weights under one scale (32 for NF3 and MXFP4,
16 for NVFP4) — so codes are extracted by shifts along the last axis with no reshape,
the products with the activation are summed per group, and the group scale multiplies
one partial sum instead of every weight.

Measured on the H200 at GLM-5.2 shapes: 0.66× Marlin's speed at one token, and the time
grows with the number of routed pairs (compute-bound, not bandwidth-bound); the tile
sweep preferred small row tiles and 2 warps. See bench/results/.

``_gemv13`` writes silu(gate)·up per pair into the intermediate cache; ``_gemv2`` writes
each pair's weighted down projection (fp32) and ``_reduce_topk`` sums a token's pairs
into the bf16 output — no atomics, no zero-fill, deterministic.
"""
import triton
import triton.language as tl


@triton.jit
def _rows_dot(w_ptr, s_ptr, e, row0, stride_we, stride_wn, stride_se, stride_sn, vec_ptr, K,
              vtab_ptr, stab_ptr, FMT: tl.constexpr, GROUP: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """fp32 [BN]: rows row0..row0+BN of local expert e (packed [rows, K]) times vec[:K]."""
    rows = (row0 + tl.arange(0, BN)).to(tl.int64)
    wrow = w_ptr + e.to(tl.int64) * stride_we + rows * stride_wn
    srow = s_ptr + e.to(tl.int64) * stride_se + rows * stride_sn
    G: tl.constexpr = BK // GROUP
    gi = tl.arange(0, G)
    acc = tl.zeros([BN], dtype=tl.float32)
    for k0 in range(0, K, BK):
        if FMT == 0:
            # NF3: a group of 32 codes is 4 little-endian 24-bit words (12 bytes)
            wi = tl.arange(0, 4)
            wofs = (k0 // 8 + gi[:, None] * 4 + wi[None, :]) * 3
            p = wrow[:, None, None] + wofs[None, :, :]
            b0 = tl.load(p).to(tl.int32)
            b1 = tl.load(p + 1).to(tl.int32)
            b2 = tl.load(p + 2).to(tl.int32)
            word = b0 | (b1 << 8) | (b2 << 16)
            codes = (word[:, :, :, None] >> (3 * tl.arange(0, 8))[None, None, None, :]) & 7
            xo = k0 + gi[:, None, None] * 32 + wi[None, :, None] * 8 + tl.arange(0, 8)[None, None, :]
        else:
            # e2m1: two codes per byte, even column in the low nibble
            GB: tl.constexpr = GROUP // 2
            bi = tl.arange(0, GB)
            p = wrow[:, None, None] + (k0 // 2 + gi[:, None] * GB + bi[None, :])[None, :, :]
            byte = tl.load(p).to(tl.int32)
            codes = (byte[:, :, :, None] >> (4 * tl.arange(0, 2))[None, None, None, :]) & 15
            xo = k0 + gi[:, None, None] * GROUP + bi[None, :, None] * 2 + tl.arange(0, 2)[None, None, :]
        vals = tl.load(vtab_ptr + codes)
        xv = tl.load(vec_ptr + xo).to(tl.float32)
        part = tl.sum(tl.sum(vals * xv[None, :, :, :], axis=3), axis=2)
        sbits = tl.load(srow[:, None] + (k0 // GROUP + gi)[None, :]).to(tl.int32)
        acc += tl.sum(part * tl.load(stab_ptr + sbits), axis=1)
    return acc


@triton.jit(do_not_specialize=["topk"])
def _gemv13_kernel(
    x_ptr, stride_xm, ids_ptr, tw_ptr, topk, K, I, h_ptr, stride_h,
    a_map, a_w, a_s, a_s2, a_swe, a_swn, a_sse, a_ssn, a_vtab, a_stab,
    b_map, b_w, b_s, b_swe, b_swn, b_sse, b_ssn, b_vtab, b_stab,
    A_FMT: tl.constexpr, A_GROUP: tl.constexpr, HAS_A: tl.constexpr, HAS_B: tl.constexpr,
    A_HAS_S2: tl.constexpr, WEIGHT_ON_INPUT: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
):
    p = tl.program_id(0)
    j = tl.program_id(1)
    g = tl.load(ids_ptr + p).to(tl.int32)
    xrow = x_ptr + (p // topk).to(tl.int64) * stride_xm
    cols = j * BN + tl.arange(0, BN)
    hrow = h_ptr + p.to(tl.int64) * stride_h + cols
    la = tl.load(a_map + g) if HAS_A else -1
    lb = tl.load(b_map + g) if HAS_B else -1
    rw = tl.load(tw_ptr + p).to(tl.float32)
    if la >= 0:
        gate = _rows_dot(a_w, a_s, la, j * BN, a_swe, a_swn, a_sse, a_ssn, xrow, K, a_vtab, a_stab,
                         A_FMT, A_GROUP, BN, BK)
        up = _rows_dot(a_w, a_s, la, I + j * BN, a_swe, a_swn, a_sse, a_ssn, xrow, K, a_vtab, a_stab,
                       A_FMT, A_GROUP, BN, BK)
        if A_HAS_S2:
            gate *= tl.load(a_s2 + la * 2)
            up *= tl.load(a_s2 + la * 2 + 1)
        if WEIGHT_ON_INPUT:
            gate *= rw
            up *= rw
        tl.store(hrow, (gate * tl.sigmoid(gate) * up).to(h_ptr.dtype.element_ty))
    elif lb >= 0:
        gate = _rows_dot(b_w, b_s, lb, j * BN, b_swe, b_swn, b_sse, b_ssn, xrow, K, b_vtab, b_stab,
                         0, 32, BN, BK)
        up = _rows_dot(b_w, b_s, lb, I + j * BN, b_swe, b_swn, b_sse, b_ssn, xrow, K, b_vtab, b_stab,
                       0, 32, BN, BK)
        if WEIGHT_ON_INPUT:
            gate *= rw
            up *= rw
        tl.store(hrow, (gate * tl.sigmoid(gate) * up).to(h_ptr.dtype.element_ty))


@triton.jit
def _gemv2_kernel(
    h_ptr, stride_h, ids_ptr, tw_ptr, I, y_ptr, stride_y,
    a_map, a_w, a_s, a_s2, a_swe, a_swn, a_sse, a_ssn, a_vtab, a_stab,
    b_map, b_w, b_s, b_swe, b_swn, b_sse, b_ssn, b_vtab, b_stab,
    A_FMT: tl.constexpr, A_GROUP: tl.constexpr, HAS_A: tl.constexpr, HAS_B: tl.constexpr,
    A_HAS_S2: tl.constexpr, WEIGHT_ON_INPUT: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
):
    p = tl.program_id(0)
    j = tl.program_id(1)
    g = tl.load(ids_ptr + p).to(tl.int32)
    hrow = h_ptr + p.to(tl.int64) * stride_h
    cols = j * BN + tl.arange(0, BN)
    yrow = y_ptr + p.to(tl.int64) * stride_y + cols
    la = tl.load(a_map + g) if HAS_A else -1
    lb = tl.load(b_map + g) if HAS_B else -1
    rw = tl.load(tw_ptr + p).to(tl.float32)
    if la >= 0:
        acc = _rows_dot(a_w, a_s, la, j * BN, a_swe, a_swn, a_sse, a_ssn, hrow, I, a_vtab, a_stab,
                        A_FMT, A_GROUP, BN, BK)
        if A_HAS_S2:
            acc *= tl.load(a_s2 + la)
        if not WEIGHT_ON_INPUT:
            acc *= rw
        tl.store(yrow, acc)
    elif lb >= 0:
        acc = _rows_dot(b_w, b_s, lb, j * BN, b_swe, b_swn, b_sse, b_ssn, hrow, I, b_vtab, b_stab,
                        0, 32, BN, BK)
        if not WEIGHT_ON_INPUT:
            acc *= rw
        tl.store(yrow, acc)
    else:
        tl.store(yrow, tl.zeros([BN], dtype=tl.float32))


@triton.jit(do_not_specialize=["topk"])
def _reduce_topk_kernel(y_ptr, stride_y, out_ptr, stride_o, topk, N, BR: tl.constexpr):
    t = tl.program_id(0)
    j = tl.program_id(1)
    cols = j * BR + tl.arange(0, BR)
    m = cols < N
    acc = tl.zeros([BR], dtype=tl.float32)
    for k in range(0, topk):
        acc += tl.load(y_ptr + (t * topk + k).to(tl.int64) * stride_y + cols, mask=m, other=0.0)
    tl.store(out_ptr + t.to(tl.int64) * stride_o + cols, acc.to(out_ptr.dtype.element_ty), mask=m)


def launch_decode(a, b, x, topk_weights_flat, ids_flat, topk, h, y, out, weight_on_input, cfg):
    """a / b: TritonTier of the kept / NF3 tier (either may be None)."""
    empty = (a or b).scales
    hidden, inter = x.shape[1], (a or b).tier.inter
    pairs = ids_flat.numel()

    def args(stage):
        res = []
        for t in (a, b):
            if t is None:
                res.append((empty, empty, empty, empty, 0, 0, 0, 0, empty, empty))
                continue
            tw = t.tier
            w = tw.w13 if stage == 13 else tw.w2
            s = t.w13_scale if stage == 13 else t.w2_scale
            s2 = tw.w13_scale_2 if stage == 13 else tw.w2_scale_2
            res.append((tw.local_map, w, s, s2 if s2 is not None else empty, w.stride(0), w.stride(1),
                        s.stride(0), s.stride(1), t.values, t.scales))
        ra, rb = res
        return ra, rb[:3] + rb[4:]  # tier B (NF3) has no global scale argument

    common = dict(A_FMT=a.fmt if a else 1, A_GROUP=(16 if a.fmt == 1 else 32) if a else 16,
                  HAS_A=a is not None, HAS_B=b is not None,
                  A_HAS_S2=bool(a is not None and a.tier.w13_scale_2 is not None),
                  WEIGHT_ON_INPUT=weight_on_input, num_warps=cfg["warps"])
    ra, rb = args(13)
    _gemv13_kernel[(pairs, inter // cfg["BN13"])](
        x, x.stride(0), ids_flat, topk_weights_flat, topk, hidden, inter, h, h.stride(0), *ra, *rb,
        BN=cfg["BN13"], BK=min(cfg["BK13"], hidden), **common)
    ra, rb = args(2)
    _gemv2_kernel[(pairs, hidden // cfg["BN2"])](
        h, h.stride(0), ids_flat, topk_weights_flat, inter, y, y.stride(0), *ra, *rb,
        BN=cfg["BN2"], BK=min(cfg["BK2"], inter), **common)
    br = min(1024, triton.next_power_of_2(hidden))
    _reduce_topk_kernel[(out.shape[0], triton.cdiv(hidden, br))](y, y.stride(0), out, out.stride(0), topk, hidden, BR=br)
