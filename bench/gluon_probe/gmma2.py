"""Prototype 2: each lane owns one NF3 group (32 codes) of a 128-wide K window; mma.sync
with A fragments decoded in registers; K permuted (activations permuted the same way)."""
import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.ampere import mma_v2

_WORD_ASM = gl.constexpr("""
{
.reg .b32 sel, lo, hi, q0, q1, q2, q3;
and.b32 sel, $8, 0x77777777;
prmt.b32 lo, $10, $11, sel;
prmt.b32 hi, $12, $13, sel;
prmt.b32 q0, lo, hi, 0x5140;
prmt.b32 q1, lo, hi, 0x7362;
shr.b32 sel, sel, 16;
prmt.b32 lo, $10, $11, sel;
prmt.b32 hi, $12, $13, sel;
prmt.b32 q2, lo, hi, 0x5140;
prmt.b32 q3, lo, hi, 0x7362;
mul.rn.f16x2 q0, q0, $9;
mul.rn.f16x2 q1, q1, $9;
mul.rn.f16x2 q2, q2, $9;
mul.rn.f16x2 q3, q3, $9;
mov.b32 {$0, $1}, q0;
mov.b32 {$2, $3}, q1;
mov.b32 {$4, $5}, q2;
mov.b32 {$6, $7}, q3;
}
""")
_WORD_CONS = gl.constexpr(",".join(["=h"] * 8 + ["r"] * 6))
_SCALE_ASM = gl.constexpr("""
{
.reg .b32 t;
.reg .b16 s0, s1;
prmt.b32 t, $1, 0, 0x0000;
mov.b32 {s0, s1}, t;
cvt.rn.f16x2.e4m3x2 $0, s0;
}
""")


def layouts(BN, BK, W):
    mma = gl.NVMMADistributedLayout(version=[2, 0], warps_per_cta=[W, 1], instr_shape=[16, 8])
    NW = BK // 128
    reg = [[8, 0, 0]] + [[0, 1 << i, 0] for i in range(NW.bit_length() - 1)]
    r = 16 * W
    while r < BN:
        reg.append([r, 0, 0]); r *= 2
    warps = [[16 << i, 0, 0] for i in range(W.bit_length() - 1)]
    lw = gl.DistributedLinearLayout(reg_bases=reg, lane_bases=[[0, 0, 1], [0, 0, 2], [1, 0, 0], [2, 0, 0], [4, 0, 0]],
                                    warp_bases=warps, block_bases=[], shape=[BN, NW, 4])
    return mma, lw


def k_of_p(K):
    """original k for each p (host-side permutation of the activations)."""
    import torch
    p = torch.arange(K)
    W, r = p // 128, p % 128
    b, t, jj = r % 2, (r // 2) % 4, r // 8
    return 128 * W + 32 * t + 8 * (jj // 4) + 2 * (jj % 4) + b


@gluon.jit
def _idx3(n: gl.constexpr, dim: gl.constexpr, layout: gl.constexpr):
    if dim == 0:
        v = gl.arange(0, n, layout=gl.SliceLayout(1, gl.SliceLayout(2, layout)))
        return gl.expand_dims(gl.expand_dims(v, 1), 2)
    elif dim == 1:
        v = gl.arange(0, n, layout=gl.SliceLayout(0, gl.SliceLayout(2, layout)))
        return gl.expand_dims(gl.expand_dims(v, 0), 2)
    else:
        v = gl.arange(0, n, layout=gl.SliceLayout(0, gl.SliceLayout(1, layout)))
        return gl.expand_dims(gl.expand_dims(v, 0), 1)


@gluon.jit
def _word(w, s, pt0, pt1, pt2, pt3):
    v0, v1, v2, v3, v4, v5, v6, v7 = gl.inline_asm_elementwise(
        _WORD_ASM, _WORD_CONS, [w, s, pt0, pt1, pt2, pt3], dtype=(gl.float16,) * 8, is_pure=True, pack=1)
    return gl.join(gl.join(gl.join(v0, v1), gl.join(v2, v3)), gl.join(gl.join(v4, v5), gl.join(v6, v7)))


@gluon.jit
def _decode(a, b, c, sbits, pt0, pt1, pt2, pt3, BN: gl.constexpr, BK: gl.constexpr, A_DOT: gl.constexpr):
    s = gl.inline_asm_elementwise(_SCALE_ASM, "=r,r", [sbits.to(gl.int32)], dtype=gl.int32, is_pure=True, pack=1)
    d = ((a >> 3) & 0x11111111) | ((b >> 2) & 0x22222222) | ((c >> 1) & 0x44444444)
    j = gl.join(gl.join(_word(a, s, pt0, pt1, pt2, pt3), _word(b, s, pt0, pt1, pt2, pt3)),
                gl.join(_word(c, s, pt0, pt1, pt2, pt3), _word(d, s, pt0, pt1, pt2, pt3)))
    # [BN, NW, 4(t), i0, i1, i2, w0, w1]
    j = gl.reshape(j, [BN, BK // 128, 2, 2, 2, 2, 2, 2, 2])  # [BN, NW, t1, t0, i0, i1, i2, w0, w1]
    j = gl.permute(j, [0, 1, 8, 7, 6, 5, 2, 3, 4])  # [BN, NW, w1, w0, i2, i1, t1, t0, i0]
    j = gl.reshape(j, [BN, BK])
    return gl.convert_layout(j, A_DOT, assert_trivial=True)


@gluon.jit
def g13_kernel(x_ptr, stride_xm, w_ptr, s_ptr, sorted_ptr, bexp_ptr, inter_ptr, stride_im,
               pt0, pt1, pt2, pt3, P, topk, K, I, stride_we, stride_wn, stride_se, stride_sn,
               BM: gl.constexpr, BN: gl.constexpr, BK: gl.constexpr, MMA: gl.constexpr, LW: gl.constexpr,
               XL: gl.constexpr):
    A_DOT: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=MMA, k_width=2)
    B_DOT: gl.constexpr = gl.DotOperandLayout(operand_index=1, parent=MMA, k_width=2)
    b = gl.program_id(0)
    jn = gl.program_id(1)
    e = gl.load(bexp_ptr + b)
    if e < 0:
        return
    slots_x = b * BM + gl.arange(0, BM, layout=gl.SliceLayout(0, XL))
    pairs_x = gl.load(sorted_ptr + slots_x)
    tok_x = gl.where(pairs_x < P, pairs_x // topk, 0).to(gl.int64)
    kx = gl.arange(0, BK, layout=gl.SliceLayout(1, XL))
    xp = x_ptr + gl.expand_dims(tok_x, 0) * stride_xm + gl.expand_dims(kx, 1)
    rows = (_idx3(BN, 0, LW) + jn * BN).to(gl.int64)
    grp = _idx3(BK // 128, 1, LW) * 4 + _idx3(4, 2, LW)  # group of the lane in the step
    gw = w_ptr + e.to(gl.int64) * stride_we + rows * stride_wn + grp * 3
    uw = gw + I * stride_wn
    gs = s_ptr + e.to(gl.int64) * stride_se + rows * stride_sn + grp
    us = gs + I * stride_sn
    acc_g = gl.zeros([BN, BM], gl.float32, MMA)
    acc_u = gl.zeros([BN, BM], gl.float32, MMA)
    ga = gl.load(gw)
    gb = gl.load(gw + 1)
    gc = gl.load(gw + 2)
    gsb = gl.load(gs)
    ua = gl.load(uw)
    ub = gl.load(uw + 1)
    uc = gl.load(uw + 2)
    usb = gl.load(us)
    for k0 in range(0, K, BK):
        xt = gl.load(xp + k0)
        nk = gl.minimum(k0 + BK, K - BK) // 32
        nga = gl.load(gw + nk * 3)
        ngb = gl.load(gw + nk * 3 + 1)
        ngc = gl.load(gw + nk * 3 + 2)
        ngs = gl.load(gs + nk)
        nua = gl.load(uw + nk * 3)
        nub = gl.load(uw + nk * 3 + 1)
        nuc = gl.load(uw + nk * 3 + 2)
        nus = gl.load(us + nk)
        xb = gl.convert_layout(xt, B_DOT)
        wg = _decode(ga, gb, gc, gsb, pt0, pt1, pt2, pt3, BN, BK, A_DOT)
        acc_g = mma_v2(wg, xb, acc_g)
        wu = _decode(ua, ub, uc, usb, pt0, pt1, pt2, pt3, BN, BK, A_DOT)
        acc_u = mma_v2(wu, xb, acc_u)
        ga = nga
        gb = ngb
        gc = ngc
        gsb = ngs
        ua = nua
        ub = nub
        uc = nuc
        usb = nus
    h = acc_g / (1.0 + gl.exp(-acc_g)) * acc_u
    cols = jn * BN + gl.arange(0, BN, layout=gl.SliceLayout(1, MMA))
    slots = b * BM + gl.arange(0, BM, layout=gl.SliceLayout(0, MMA))
    gl.store(inter_ptr + gl.expand_dims(slots.to(gl.int64), 0) * stride_im + gl.expand_dims(cols, 1), h.to(gl.float16))
