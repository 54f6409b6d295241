"""The NF3 and NVFP4 tiers' grouped GEMMs written in Gluon (Triton's explicit-layout
dialect): mma.sync with the weight operand decoded straight into its registers. Imported
only through kernels/mma_tiles.py, which says why and checks that this Triton has Gluon.

Layouts (num_warps W, a row tile of BN weight rows, K steps of BK = 128·NW):
- ``MMA``: mma.sync m16n8k16's accumulator, warps along the weight rows;
- the A operand (weights, [BN, BK]) is that MMA's dot-operand layout. Lane 4g + t of a
  warp holds rows g and g + 8 of each 16-row tile; here it also owns NF3 group t of each
  128-wide K window of those two rows (``LW``: words [BN, NW, 4] with lanes along the
  group) — 32 weights: an NF3 group (three words in nibble layout, one scale) or two
  NVFP4 scale groups (four e2m1 words, two scales: one 16-byte and one 2-byte load, through
  ``vector_layout``'s trailing dimension in registers) — and the activations are permuted
  (mma_tiles.activation_order) so that the 32 values the lane decodes from its words are
  exactly its 32 A-fragment values in that window. The join / permute / reshape below only rename registers:
  ``convert_layout(..., assert_trivial=True)`` makes the compiler prove it.
- the B operand (activations, [BK, BM]) is loaded row-contiguous and converted through
  shared memory (two 16-byte loads, two stores and eight ldmatrix per thread per step);
  under tile option ``mma_xreg`` each lane loads its own B fragment instead, from the
  activations in fragment order (``fragment_order_layout``, ``_xreg_operand``).
- ``SPLIT`` 2 multiplies each 128-wide step in two 64-wide halves: a lane's first two code
  words hold its values of the window's first half (``_a_half``), so half the decoded
  weights and half the activations are live at a time, with the same products in the same
  order as one whole step.
"""
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.ampere import mma_v2

from .ptx_decode import E2M1_SCALED_ASM, E2M1_SCALED_CONSTRAINTS, NF3_SCALED_ASM, NF3_SCALED_CONSTRAINTS

# a code word → its eight fp16 values times the group scale (ptx_decode's byte-permute
# table lookups, the decode GEMV's)
_NF3_ASM = gl.constexpr(NF3_SCALED_ASM)
_NF3_CONS = gl.constexpr(NF3_SCALED_CONSTRAINTS)
_E2M1_ASM = gl.constexpr(E2M1_SCALED_ASM)
_E2M1_CONS = gl.constexpr(E2M1_SCALED_CONSTRAINTS)
# an e4m3 scale byte → the scale in both halves of an fp16x2 (sm_89+: cvt from e4m3x2)
_SCALE_ASM = gl.constexpr("""
{
.reg .b32 t;
.reg .b16 s0, s1;
prmt.b32 t, $1, 0, 0x0000;
mov.b32 {s0, s1}, t;
cvt.rn.f16x2.e4m3x2 $0, s0;
}
""")


def layouts(BN: int, BK: int, W: int, split: int = 1):
    """(MMA accumulator layout, word layout LW, activation-load layout XL) of a tile;
    ``split``: 2 when each K step is multiplied in two 64-wide halves (XL then covers 64
    rows of activations without repeating loads)."""
    mma = gl.NVMMADistributedLayout(version=[2, 0], warps_per_cta=[W, 1], instr_shape=[16, 8])
    nw = BK // 128
    reg = [[8, 0, 0]] + [[0, 1 << i, 0] for i in range(nw.bit_length() - 1)]
    r = 16 * W
    while r < BN:
        reg.append([r, 0, 0])
        r *= 2
    warps = [[16 << i, 0, 0] for i in range(W.bit_length() - 1)]
    lanes = [[0, 0, 1], [0, 0, 2], [1, 0, 0], [2, 0, 0], [4, 0, 0]]
    lw = gl.DistributedLinearLayout(reg_bases=reg, lane_bases=lanes, warp_bases=warps, block_bases=[], shape=[BN, nw, 4])
    if split == 1:
        xl = gl.BlockedLayout(size_per_thread=[8, 1], threads_per_warp=[16, 2], warps_per_cta=[1, W], order=[0, 1])
    else:
        xl = gl.BlockedLayout(size_per_thread=[8, 1], threads_per_warp=[8, 4], warps_per_cta=[1, W], order=[0, 1])
    return mma, lw, xl


@gluon.constexpr_function
def vector_layout(lw, n):
    """LW with a trailing dimension of ``n`` consecutive words (or bytes) in each lane's
    registers: what one vector load of a lane's NVFP4 unit (four words, two scale bytes)
    fills."""
    n = int(n)
    ext = [[0, 0, 0, 1 << i] for i in range(n.bit_length() - 1)]
    return gl.DistributedLinearLayout(reg_bases=ext + [list(b) + [0] for b in lw.reg_bases],
                                      lane_bases=[list(b) + [0] for b in lw.lane_bases],
                                      warp_bases=[list(b) + [0] for b in lw.warp_bases], block_bases=[],
                                      shape=list(lw.shape) + [n])


@gluon.constexpr_function
def unit_layout(vec):
    """``vector_layout``'s LW back: the layout of one word (or byte) of each lane's vector."""
    return gl.DistributedLinearLayout(reg_bases=[list(b[:3]) for b in vec.reg_bases if not b[3]],
                                      lane_bases=[list(b[:3]) for b in vec.lane_bases],
                                      warp_bases=[list(b[:3]) for b in vec.warp_bases], block_bases=[],
                                      shape=list(vec.shape[:3]))


@gluon.constexpr_function
def tiled_layout(lw):
    """LW over a tiled NF3 tier's order (formats/nf3_tiled.py): [BN/16 row blocks, NW
    windows, t, g, r] for lane 4g + t's rows 16·block + g + 8r — the row pair r (LW's first
    register) the trailing dimension, two consecutive words (or scale bytes) of one lane:
    one 8-byte (2-byte) load."""
    def five(b):
        row, nw, t = (int(x) for x in b)
        return [row // 16, nw, t, row % 8, 0]

    reg = [list(b) for b in lw.reg_bases]
    if reg[0] != [8, 0, 0]:
        raise ValueError(f"tiled NF3 loads need LW's first register to be the row pair (+8 rows), got {reg[0]}")
    bn, nw, _ = (int(x) for x in lw.shape)
    return gl.DistributedLinearLayout(reg_bases=[[0, 0, 0, 0, 1]] + [five(b) for b in reg[1:]],
                                      lane_bases=[five(b) for b in lw.lane_bases],
                                      warp_bases=[five(b) for b in lw.warp_bases], block_bases=[],
                                      shape=[bn // 16, nw, 4, 8, 2])


@gluon.constexpr_function
def untiled_layout(tl5):
    """``tiled_layout``'s LW back: [16·block + 8r + g, window, t]."""
    def three(b):
        blk, nw, t, g, r = (int(x) for x in b)
        return [16 * blk + 8 * r + g, nw, t]

    shape = [int(x) for x in tl5.shape]
    return gl.DistributedLinearLayout(reg_bases=[three(b) for b in tl5.reg_bases],
                                      lane_bases=[three(b) for b in tl5.lane_bases],
                                      warp_bases=[three(b) for b in tl5.warp_bases], block_bases=[],
                                      shape=[shape[0] * 16, shape[1], 4])


@gluon.constexpr_function
def fragment_order_layout(bl, split):
    """The B operand's layout ``bl`` (``gl.to_linear_layout`` of the MMA's B dot-operand
    layout over [BK, BM], or [64, BM] for a half step with ``split`` 2), K re-indexed from
    activation order p to fragment order q (tile option ``mma_xreg``,
    mma_tiles.fragment_order): [NW, i, t, v, BM] for q = 128·nw + 32·i + 8·t + v, or
    [i & 1, t, v, BM] for q = 64·h + 32·(i & 1) + 8·t + v of half h. Window position
    p = 32·jh + 8·jl + 2·t + b holds original 32·t + 8·jh + 2·jl + b
    (mma_tiles.activation_order), which fragment order puts at q = 32·jh + 8·t + 2·jl + b:
    every basis moves bit for bit, each lane's registers are runs of 8 activations (one
    16-byte load: v), and the four lanes of a fragment row load adjacent runs."""
    split = int(split)

    def moved(b):
        p, n = (int(x) for x in b)
        t, bit, jl, jh = (p >> 1) & 3, p & 1, (p >> 3) & 3, (p >> 5) & 3
        if split == 2:
            return [jh & 1, t, 2 * jl + bit, n]
        return [p >> 7, jh, t, 2 * jl + bit, n]

    bk, bm = (int(x) for x in bl.shape)
    shape = [2, 4, 8, bm] if split == 2 else [bk // 128, 4, 4, 8, bm]
    return gl.DistributedLinearLayout(reg_bases=[moved(b) for b in bl.reg_bases],
                                      lane_bases=[moved(b) for b in bl.lane_bases],
                                      warp_bases=[moved(b) for b in bl.warp_bases], block_bases=[], shape=shape)


@gluon.constexpr_function
def _axis_slice(layout, dim):
    """The 1-D layout of dimension ``dim`` of ``layout`` (the others sliced off, last first)."""
    dim = int(dim)
    out = layout
    for d in reversed(range(len(layout.shape))):
        if d != dim:
            out = gl.SliceLayout(d, out)
    return out


@gluon.constexpr_function
def _rank(layout):
    return len(layout.shape)


@gluon.constexpr_function
def _dim(layout, d):
    return int(layout.shape[int(d)])


@gluon.jit
def _index(n: gl.constexpr, dim: gl.constexpr, layout: gl.constexpr):
    """arange(n) along ``dim`` of a tensor of ``layout`` (any rank), size 1 along the
    others."""
    RANK: gl.constexpr = _rank(layout)
    v = gl.arange(0, n, layout=_axis_slice(layout, dim))
    for d in gl.static_range(RANK):
        if d != dim:
            v = gl.expand_dims(v, d)
    return v


@gluon.jit
def _tile_rows(x):
    """A tiled load [BN/16, NW, t, g, r] as LW's [BN, NW, 4] (the reshape only renames
    registers)."""
    LW: gl.constexpr = untiled_layout(x.type.layout)
    v = gl.permute(x, [0, 4, 3, 1, 2])
    v = gl.reshape(v, [x.shape[0] * 16, x.shape[1], 4])
    return gl.convert_layout(v, LW, assert_trivial=True)


@gluon.jit
def _unit(x, LW: gl.constexpr):
    """A word (or byte) split off a lane's vector, in LW (the split only renames registers)."""
    return gl.convert_layout(x, LW, assert_trivial=True)


@gluon.jit
def _word_values(w, s, pt0, pt1, pt2, pt3, FMT: gl.constexpr):
    """[..., 2, 2, 2]: code i = i0 + 2·i1 + 4·i2 of each word, scaled (dims i0, i1, i2)."""
    if FMT == 0:
        v0, v1, v2, v3, v4, v5, v6, v7 = gl.inline_asm_elementwise(
            _NF3_ASM, _NF3_CONS, [w, s, pt0, pt1, pt2, pt3], dtype=(gl.float16,) * 8, is_pure=True, pack=1)
    else:
        v0, v1, v2, v3, v4, v5, v6, v7 = gl.inline_asm_elementwise(
            _E2M1_ASM, _E2M1_CONS, [w, s, pt0, pt1, pt2], dtype=(gl.float16,) * 8, is_pure=True, pack=1)
    return gl.join(gl.join(gl.join(v0, v1), gl.join(v2, v3)), gl.join(gl.join(v4, v5), gl.join(v6, v7)))


@gluon.jit
def _table_in_lanes(pt0, pt1, pt2, pt3, K, LW: gl.constexpr):
    """The decode table's four words as [1, 1, 4] tensors in LW (one register a thread,
    broadcast to every word of the lane) instead of the kernel's scalars (tile option
    ``mma_tabvec``). Why: ptxas keeps a scalar table word in a uniform register and copies
    it into a vector register before each table PRMT — 31 ``IMAD.U32 Rn, RZ, RZ, URn`` of
    the tiled NF3 gate/up loop's 380 SASS instructions (compile_probe, Triton 3.6; a
    ``shfl`` of the scalar was folded away). A select on the lane's group index t against
    K (never equal: K is at least one 128-wide window, t < 4) gives the same values from a
    lane-dependent source, which ptxas holds in vector registers: 347 instructions."""
    t_is_k = _index(4, 2, LW) == K
    return (gl.where(t_is_k, pt1, pt0), gl.where(t_is_k, pt0, pt1), gl.where(t_is_k, pt3, pt2),
            gl.where(t_is_k, pt2, pt3))


@gluon.jit
def _scale2(sbits):
    return gl.inline_asm_elementwise(_SCALE_ASM, "=r,r", [sbits.to(gl.int32)], dtype=gl.int32, is_pure=True, pack=1)


@gluon.jit
def _half_words(ws, sc, h: gl.constexpr, FMT: gl.constexpr):
    """(x, y, s): the two code words and the fp16x2 scale of half h of each lane's group
    (``ws`` / ``sc``: its words and scale bytes). NF3 (a, b, c), one scale: a, b for h = 0;
    c and the fourth word, gathered from the nibbles' top bits, for h = 1. NVFP4 (a, b, c,
    d), two scales: a, b with the first, c, d with the second."""
    if FMT == 0:
        a, b, c = ws
        s = _scale2(sc[0])
        if h == 0:
            x = a
            y = b
        else:
            x = c
            y = ((a >> 3) & 0x11111111) | ((b >> 2) & 0x22222222) | ((c >> 1) & 0x44444444)  # codes 24-31
    else:
        x = ws[2 * h]
        y = ws[2 * h + 1]
        s = _scale2(sc[h])
    return x, y, s


@gluon.jit
def _a_operand(ws, sc, pt0, pt1, pt2, pt3, FMT: gl.constexpr, BN: gl.constexpr, BK: gl.constexpr,
               A_DOT: gl.constexpr):
    """The dequantized [BN, BK] weight tile, K in activation order, in the MMA's A layout,
    from each lane's words ``ws`` and scale bytes ``sc`` ([BN, NW, 4] each in LW), its
    halves' words as ``_half_words`` gives them."""
    x0, y0, s0 = _half_words(ws, sc, 0, FMT)
    x1, y1, s1 = _half_words(ws, sc, 1, FMT)
    v = gl.join(gl.join(_word_values(x0, s0, pt0, pt1, pt2, pt3, FMT), _word_values(y0, s0, pt0, pt1, pt2, pt3, FMT)),
                gl.join(_word_values(x1, s1, pt0, pt1, pt2, pt3, FMT), _word_values(y1, s1, pt0, pt1, pt2, pt3, FMT)))
    # [BN, NW, t, i0, i1, i2, w0, w1] → p = 128·nw + 64·w1 + 32·w0 + 16·i2 + 8·i1 + 4·t1 + 2·t0 + i0
    v = gl.reshape(v, [BN, BK // 128, 2, 2, 2, 2, 2, 2, 2])
    v = gl.permute(v, [0, 1, 8, 7, 6, 5, 2, 3, 4])
    v = gl.reshape(v, [BN, BK])
    return gl.convert_layout(v, A_DOT, assert_trivial=True)


@gluon.jit
def _a_half(ws, sc, h: gl.constexpr, pt0, pt1, pt2, pt3, FMT: gl.constexpr, BN: gl.constexpr,
            A_DOT: gl.constexpr):
    """Half h of ``_a_operand``'s tile (one 128-wide window): [BN, 64], K positions
    64·h + 32·w0 + 16·i2 + 8·i1 + 4·t1 + 2·t0 + i0 of the window, from ``_half_words``.
    Half the decoded values and half the activations live at a time."""
    x, y, s = _half_words(ws, sc, h, FMT)
    v = gl.join(_word_values(x, s, pt0, pt1, pt2, pt3, FMT), _word_values(y, s, pt0, pt1, pt2, pt3, FMT))
    # [BN, 1, t, i0, i1, i2, w0] → q = 32·w0 + 16·i2 + 8·i1 + 4·t1 + 2·t0 + i0
    v = gl.reshape(v, [BN, 2, 2, 2, 2, 2, 2])
    v = gl.permute(v, [0, 6, 5, 4, 1, 2, 3])
    v = gl.reshape(v, [BN, 64])
    return gl.convert_layout(v, A_DOT, assert_trivial=True)


@gluon.jit
def _step_operands(gwd, gsc, uwd, usc, pt0, pt1, pt2, pt3, FMT: gl.constexpr, BN: gl.constexpr, BK: gl.constexpr,
                   SPLIT: gl.constexpr, A_DOT: gl.constexpr):
    """(gate, up, gate, up): a K step's decoded A operands for tile option ``mma_dahead``,
    which makes them before the loop and for the next step inside it — the whole step's
    twice (SPLIT 1: the caller uses the first pair only), or its first half's and its
    second half's (SPLIT 2)."""
    if SPLIT == 1:
        g0 = _a_operand(gwd, gsc, pt0, pt1, pt2, pt3, FMT, BN, BK, A_DOT)
        u0 = _a_operand(uwd, usc, pt0, pt1, pt2, pt3, FMT, BN, BK, A_DOT)
        g1 = g0
        u1 = u0
    else:
        g0 = _a_half(gwd, gsc, 0, pt0, pt1, pt2, pt3, FMT, BN, A_DOT)
        u0 = _a_half(uwd, usc, 0, pt0, pt1, pt2, pt3, FMT, BN, A_DOT)
        g1 = _a_half(gwd, gsc, 1, pt0, pt1, pt2, pt3, FMT, BN, A_DOT)
        u1 = _a_half(uwd, usc, 1, pt0, pt1, pt2, pt3, FMT, BN, A_DOT)
    return g0, u0, g1, u1


@gluon.jit
def _load_group(wp, sp, kw, ks, FMT: gl.constexpr, TILED: gl.constexpr = False):
    """The lanes' words and scale bytes of the K step whose first group is kw words / ks
    scale bytes on from the pointers."""
    if TILED:
        # formats/nf3_tiled.py: a lane's two rows of one word are 8 contiguous bytes, a
        # warp's 256 (row-major, each 4-byte load of a warp touched the 8 rows its lanes
        # span: ncu, session 15, 7.4 of 32 bytes used per sector, the L1 pipe at 64-69 %)
        ws = (_tile_rows(gl.load(wp + kw)), _tile_rows(gl.load(wp + kw + 64)), _tile_rows(gl.load(wp + kw + 128)))
        sc = (_tile_rows(gl.load(sp + ks)),)
    elif FMT == 0:
        ws = (gl.load(wp + kw), gl.load(wp + kw + 1), gl.load(wp + kw + 2))
        sc = (gl.load(sp + ks),)
    else:
        # one 16-byte load of the lane's four words and one 2-byte load of its two scales
        # (_group_ptrs: a trailing dimension of consecutive words / bytes in registers):
        # four 4-byte loads each touched the 8 rows a warp's lanes span, one cache line
        # each — the L1 data pipe, not the tensor cores or the integer pipe, was the most
        # used unit of these kernels (ncu, session 13: 72-75 % of its wavefronts)
        LW: gl.constexpr = unit_layout(wp.type.layout)
        w4 = gl.reshape(gl.load(wp + kw), [wp.shape[0], wp.shape[1], 4, 2, 2])
        lo, hi = gl.split(w4)  # words 0, 2 and 1, 3
        w0, w2 = gl.split(lo)
        w1, w3 = gl.split(hi)
        s0, s1 = gl.split(gl.load(sp + ks))
        ws = (_unit(w0, LW), _unit(w1, LW), _unit(w2, LW), _unit(w3, LW))
        sc = (_unit(s0, LW), _unit(s1, LW))
    return ws, sc


@gluon.jit
def _step_offsets(k, FMT: gl.constexpr, TILED: gl.constexpr = False):
    """(words, scale bytes) from the first K step's pointers to step k's."""
    if TILED:
        r = (k // 128 * 192, k // 128 * 64)  # one 16 × 128 tile per window
    elif FMT == 0:
        r = (k // 32 * 3, k // 32)
    else:
        # k is a whole number of 128-wide windows: written so the compiler sees the
        # offsets' alignment (16 words, 8 bytes) that the vector loads need
        r = (k // 128 * 16, k // 128 * 8)
    return r


@gluon.jit
def _tile_row(t, row0, up_jump, BN: gl.constexpr, GU: gl.constexpr):
    """Weight row of tile row ``t``: row0 + t, or with ``GU`` (gate and up rows in one tile,
    wgmma_gluon.wg13_kernel) the up rows ``up_jump`` further for the tile's second half."""
    if GU:
        t = t + gl.where(t >= BN // 2, up_jump, 0)
    return (t + row0).to(gl.int64)


@gluon.jit
def _group_ptrs(w_ptr, s_ptr, e, row0, stride_we, stride_wn, stride_se, stride_sn, BN: gl.constexpr,
                BK: gl.constexpr, LW: gl.constexpr, FMT: gl.constexpr, TILED: gl.constexpr = False,
                GU: gl.constexpr = False, up_jump=0):
    """Word and scale pointers of each lane's 32 weights in the first K step (rows row0..,
    the second half ``up_jump`` rows further with ``GU``: ``_tile_row``); ``TILED``:
    pointers [BN/16, NW, t, g, r] (``tiled_layout``) to the first word of each lane's row
    pair, the others 64 and 128 words on."""
    if TILED:
        V: gl.constexpr = tiled_layout(LW)
        rows16 = _tile_row(16 * _index(BN // 16, 0, V), row0, up_jump, BN, GU)
        lane2 = 2 * (4 * _index(8, 3, V) + _index(4, 2, V)) + _index(2, 4, V)
        win = _index(BK // 128, 1, V)
        wp = w_ptr + e.to(gl.int64) * stride_we + rows16 * stride_wn + win * 192 + lane2
        sp = s_ptr + e.to(gl.int64) * stride_se + rows16 * stride_sn + win * 64 + lane2
    elif FMT == 0:
        rows = _tile_row(_index(BN, 0, LW), row0, up_jump, BN, GU)
        grp = _index(BK // 128, 1, LW) * 4 + _index(4, 2, LW)
        wp = w_ptr + e.to(gl.int64) * stride_we + rows * stride_wn + grp * 3
        sp = s_ptr + e.to(gl.int64) * stride_se + rows * stride_sn + grp
    else:
        wp = _vector_ptrs(w_ptr, e, row0, stride_we, stride_wn, 4, BN, BK, LW, GU, up_jump)
        sp = _vector_ptrs(s_ptr, e, row0, stride_se, stride_sn, 2, BN, BK, LW, GU, up_jump)
    return wp, sp


@gluon.jit
def _vector_ptrs(base, e, row0, stride_e, stride_n, N: gl.constexpr, BN: gl.constexpr, BK: gl.constexpr,
                 LW: gl.constexpr, GU: gl.constexpr = False, up_jump=0):
    """[BN, NW, 4, N] pointers to each lane's N consecutive elements of its group — an
    NVFP4 group has 4 words and 2 scale bytes, so N is also the group's stride — the last
    dimension in the lane's registers (vector_layout)."""
    V: gl.constexpr = vector_layout(LW, N)
    rows = _tile_row(_index(BN, 0, V), row0, up_jump, BN, GU)
    grp = _index(BK // 128, 1, V) * 4 + _index(4, 2, V)
    return base + e.to(gl.int64) * stride_e + rows * stride_n + grp * N + _index(N, 3, V)


@gluon.jit
def _b_operand(ptrs, B_DOT: gl.constexpr, XREG: gl.constexpr = False, SPLIT: gl.constexpr = 1):
    """One K step's (or half step's) activations as the B operand: loaded row-contiguous
    and converted (through shared memory), or with ``XREG`` loaded in
    ``fragment_order_layout`` and only renamed (``_xreg_operand``)."""
    if XREG:
        xb = _xreg_operand(gl.load(ptrs), SPLIT, B_DOT)
    else:
        xb = gl.convert_layout(gl.load(ptrs), B_DOT)
    return xb


# Tile option mma_xreg: each lane loads its B fragment itself. A lane's fragment of a
# 128-wide window is, for each of its tokens, the 32 activations of its NF3 group t; in
# fragment order (mma_tiles.fragment_order) they are four runs of 8 (four 16-byte loads),
# run i of the four lanes t side by side, so each load of a warp reads 64 contiguous bytes
# of each of its 8 tokens (in the original order the lanes' runs were 64 bytes apart: on
# the H200 that was 15-20 % slower than the built-in path, session 23). Every warp loads
# the whole tile (the warps split the weight rows, not the tokens), from L1 after the
# first. No shared memory and no barrier between the load and the MMA: session 20's ncu
# put 0.56-1.09 barrier stalls per issued instruction on the mma.sync kernels' conversion
# through shared memory. The intermediate between the GEMMs is in fragment order too.
@gluon.jit
def _xreg_operand(v, SPLIT: gl.constexpr, B_DOT: gl.constexpr):
    """A load in ``fragment_order_layout`` → the B operand in activation order (a reshape
    and a permute of the index bits: the registers are only renamed, which
    ``assert_trivial`` makes the compiler prove)."""
    if SPLIT == 2:
        BM: gl.constexpr = v.shape[3]
        # [i & 1, t, jl, b] → half position 32·(i & 1) + 8·jl + 2·t + b
        v = gl.permute(gl.reshape(v, [2, 4, 4, 2, BM]), [0, 2, 1, 3, 4])
        v = gl.reshape(v, [64, BM])
    else:
        NW: gl.constexpr = v.shape[0]
        BM: gl.constexpr = v.shape[4]
        # [nw, i, t, jl, b] → p = 128·nw + 32·i + 8·jl + 2·t + b
        v = gl.permute(gl.reshape(v, [NW, 4, 4, 4, 2, BM]), [0, 1, 3, 2, 4, 5])
        v = gl.reshape(v, [NW * 128, BM])
    return gl.convert_layout(v, B_DOT, assert_trivial=True)


@gluon.jit
def _b_ptrs(base, stride, slot0, sorted_ptr, P, topk, GATHER: gl.constexpr, BM: gl.constexpr, BK: gl.constexpr,
            SPLIT: gl.constexpr, XL: gl.constexpr, B_DOT: gl.constexpr, XREG: gl.constexpr):
    """Pointers to the first K step's (or its first half's) B operand of the BM slots from
    ``slot0``: rows ``stride`` apart, each slot's token's (``GATHER``: the gate/up kernel's
    activations, padding slots reading token 0) or the slot's own (the down kernel's
    intermediate). Row-contiguous in XL, or with ``XREG`` in ``fragment_order_layout``
    (a half h then 64 further on, ``_half_offset``)."""
    XO: gl.constexpr = fragment_order_layout(gl.to_linear_layout(B_DOT, [BK // SPLIT, BM]), SPLIT)
    if XREG:
        slot = _index(BM, _rank(XO) - 1, XO)
    else:
        slot = gl.arange(0, BM, layout=gl.SliceLayout(0, XL))
    if GATHER:
        pairs = gl.load(sorted_ptr + slot0 + slot)
        rows = gl.where(pairs < P, pairs // topk, 0).to(gl.int64)
    else:
        rows = (slot0 + slot).to(gl.int64)
    if not XREG:
        ptrs = base + gl.expand_dims(rows, 0) * stride + gl.expand_dims(
            gl.arange(0, BK // SPLIT, layout=gl.SliceLayout(1, XL)), 1)
    elif SPLIT == 2:
        ptrs = base + rows * stride + (32 * _index(2, 0, XO) + 8 * _index(4, 1, XO) + _index(8, 2, XO))
    else:
        ptrs = base + rows * stride + (128 * _index(_dim(XO, 0), 0, XO) + 32 * _index(4, 1, XO)
                                       + 8 * _index(4, 2, XO) + _index(8, 3, XO))
    return ptrs


@gluon.jit
def _half_offset(BK: gl.constexpr, XREG: gl.constexpr):
    """From a K step's first half of activations to its second (SPLIT 2)."""
    if XREG:
        r = 64  # fragment order: the lanes' runs 2 and 3
    else:
        r = BK // 2
    return r


# The B operand's K steps. Plain: each part of step k (the whole step, or its halves with
# SPLIT 2) loaded when it is multiplied, its latency behind that step's decode alone.
# XAHEAD (tile option mma_xahead): both parts of step k + 1 loaded into registers (in XL,
# as they come from memory: a lane's 8 or 16 more fp16 values) while step k is converted
# and multiplied; the last step reloads itself (no mask). The same values reach the same
# MMAs either way.
@gluon.jit
def _x_first(xp, BK: gl.constexpr, SPLIT: gl.constexpr, XAHEAD: gl.constexpr):
    """The registers that carry step 0's activations into the loop (XAHEAD), else zeros
    nobody reads."""
    if XAHEAD:
        xa = gl.load(xp)
        if SPLIT == 2:
            xh = gl.load(xp + BK // 2)
        else:
            xh = xa
    else:
        xa = 0
        xh = 0
    return xa, xh


@gluon.jit
def _x_step(xp, k0, K, xa, xh, BK: gl.constexpr, SPLIT: gl.constexpr, XAHEAD: gl.constexpr, B_DOT: gl.constexpr,
            XREG: gl.constexpr = False):
    """(step k0's first part as the B operand, its second part still in registers or 0,
    the carried registers for the next step)."""
    if XAHEAD:
        kn = gl.minimum(k0 + BK, K - BK)
        cur_a = xa
        cur_h = xh
        xa = gl.load(xp + kn)
        if SPLIT == 2:
            xh = gl.load(xp + kn + BK // 2)
        else:
            xh = xa
        xb = gl.convert_layout(cur_a, B_DOT)
        second = cur_h
    else:
        xb = _b_operand(xp + k0, B_DOT, XREG, SPLIT)
        second = 0
    return xb, second, xa, xh


@gluon.jit
def _x_second(xp, k0, second, BK: gl.constexpr, XAHEAD: gl.constexpr, B_DOT: gl.constexpr,
              XREG: gl.constexpr = False):
    """Step k0's second half (SPLIT 2) as the B operand."""
    if XAHEAD:
        xb = gl.convert_layout(second, B_DOT)
    else:
        xb = _b_operand(xp + k0 + _half_offset(BK, XREG), B_DOT, XREG, 2)
    return xb


@gluon.jit
def _p_position(col):
    """Where intermediate column ``col`` goes in activation order (the down GEMM's K)."""
    r = col % 128
    return col - r + 2 * (r // 32) + (r % 2) + 8 * (4 * ((r % 32) // 8) + (r % 8) // 2)


@gluon.jit
def _q_position(col):
    """Where intermediate column ``col`` goes in fragment order (mma_tiles.fragment_order:
    its own inverse)."""
    r = col % 128
    return col - r + 32 * ((r // 8) % 4) + 8 * (r // 32) + r % 8


@gluon.jit
def _store13(acc_g, acc_u, e, slot0, j, s2_ptr, sorted_ptr, tw_ptr, inter_ptr, stride_im, P, HAS_S2: gl.constexpr,
             WEIGHT_ON_INPUT: gl.constexpr, BM: gl.constexpr, BN: gl.constexpr, MMA: gl.constexpr,
             XREG: gl.constexpr = False):
    """The gate/up kernels' end (mma.sync and wgmma alike): accumulators [BN, BM] of gate
    and up rows j·BN.. of expert e's BM slots from ``slot0`` → silu(gate)·up, fp16, into
    those slots of the intermediate cache, columns in activation order (``XREG``, tile
    option ``mma_xreg``: in fragment order). ``MMA``: the accumulators' layout."""
    slots = slot0 + gl.arange(0, BM, layout=gl.SliceLayout(0, MMA))
    if HAS_S2:
        acc_g = acc_g * gl.load(s2_ptr + e * 2)
        acc_u = acc_u * gl.load(s2_ptr + e * 2 + 1)
    if WEIGHT_ON_INPUT:
        pairs = gl.load(sorted_ptr + slots)
        rw = gl.expand_dims(gl.load(tw_ptr + pairs, mask=pairs < P, other=0.0).to(gl.float32), 0)
        acc_g = acc_g * rw
        acc_u = acc_u * rw
    h = acc_g / (1.0 + gl.exp(-acc_g)) * acc_u
    cols = j * BN + gl.arange(0, BN, layout=gl.SliceLayout(1, MMA))
    if XREG:
        cols = _q_position(cols)
    else:
        cols = _p_position(cols)
    gl.store(inter_ptr + gl.expand_dims(slots.to(gl.int64), 0) * stride_im + gl.expand_dims(cols, 1),
             h.to(gl.float16))


@gluon.constexpr_function
def gu_layout(W):
    """A [16·W, BM] layout in which each thread holds rows t and t + 8·W: a tile's gate and
    up rows of one output column (tile option ``wg_gu``), which the wgmma accumulator puts
    in different warps, so that ``_split_gu`` is a register split after one conversion."""
    return gl.BlockedLayout(size_per_thread=[1, 4], threads_per_warp=[8, 4], warps_per_cta=[int(W), 1],
                            order=[1, 0])


@gluon.jit
def _split_gu(acc, W: gl.constexpr):
    """(gate, up) [BN/2, BM] of a ``wg_gu`` accumulator [BN, BM] whose first half holds
    gate rows and second half the up rows of the same columns, both in ``gu_layout(W)``
    (the split's own layout named, which Triton 3.6 cannot pass on as a constexpr)."""
    BN: gl.constexpr = acc.shape[0]
    BM: gl.constexpr = acc.shape[1]
    L: gl.constexpr = gu_layout(W)
    v = gl.convert_layout(acc, L)
    v = gl.permute(gl.reshape(v, [2, BN // 2, BM]), [1, 2, 0])
    g, u = gl.split(v)
    return gl.convert_layout(g, L, assert_trivial=True), gl.convert_layout(u, L, assert_trivial=True)


@gluon.jit
def _store2(acc, e, slot0, j, s2_ptr, sorted_ptr, tw_ptr, out_ptr, stride_om, P, topk, HAS_S2: gl.constexpr,
            WEIGHT_ON_INPUT: gl.constexpr, PAIR_ROWS: gl.constexpr, BM: gl.constexpr, BN: gl.constexpr,
            MMA: gl.constexpr):
    """The down kernels' end: accumulator [BN, BM] of output rows j·BN.. for the BM slots
    from ``slot0`` → each routed pair's row (PAIR_ROWS, the workspace's dtype) or added atomically into its
    token's row."""
    pairs = gl.load(sorted_ptr + slot0 + gl.arange(0, BM, layout=gl.SliceLayout(0, MMA)))
    valid = pairs < P
    if HAS_S2:
        acc = acc * gl.load(s2_ptr + e)
    if not WEIGHT_ON_INPUT:
        acc = acc * gl.expand_dims(gl.load(tw_ptr + pairs, mask=valid, other=0.0).to(gl.float32), 0)
    cols = gl.expand_dims(j * BN + gl.arange(0, BN, layout=gl.SliceLayout(1, MMA)), 1)
    if PAIR_ROWS:
        row = gl.expand_dims(gl.where(valid, pairs, 0).to(gl.int64), 0)
        gl.store(out_ptr + row * stride_om + cols, acc, mask=gl.expand_dims(valid, 0))
    else:
        tok = gl.expand_dims(gl.where(valid, pairs // topk, 0).to(gl.int64), 0)
        gl.atomic_add(out_ptr + tok * stride_om + cols, acc, mask=gl.expand_dims(valid, 0), sem="relaxed")


@gluon.jit(do_not_specialize=["P", "topk", "pt0", "pt1", "pt2", "pt3"])
def mma13_kernel(x_ptr, stride_xm, w_ptr, s_ptr, s2_ptr, sorted_ptr, bexp_ptr, tw_ptr, inter_ptr, stride_im,
                 pt0, pt1, pt2, pt3, P, topk, K, I, stride_we, stride_wn, stride_se, stride_sn,
                 FMT: gl.constexpr, HAS_S2: gl.constexpr, WEIGHT_ON_INPUT: gl.constexpr, BM: gl.constexpr,
                 BN: gl.constexpr, BK: gl.constexpr, MMA: gl.constexpr, LW: gl.constexpr, XL: gl.constexpr,
                 SPLIT: gl.constexpr = 1, TILED: gl.constexpr = False, AHEAD: gl.constexpr = 1,
                 XAHEAD: gl.constexpr = False, XREG: gl.constexpr = False, SPLITK: gl.constexpr = 1,
                 TABVEC: gl.constexpr = False, DAHEAD: gl.constexpr = False):
    """Gate and up rows [j·BN, +BN) of one expert block; silu(gate)·up into the
    intermediate cache, columns in activation order. ``SPLITK`` > 1 (tile option
    ``mma_splitk``): program (blk, j'), j' < SPLITK·I/BN, covers rows tile j' % (I / BN)
    over K part j' // (I / BN), and stores its fp32 partial sums instead — ``inter_ptr`` is
    then the partials [slots, SPLITK·2I] (part s's gate columns at 2I·s, its up columns
    I further), which splitk13_kernel sums and finishes. ``TABVEC``: the decode table in
    vector registers (tile option ``mma_tabvec``, _table_in_lanes). ``x_ptr``: fp16 activations in
    activation order (mma_tiles.activation_order). ``SPLIT`` 2: each K step multiplied in
    two 64-wide halves (BK 128), ``_a_half``. ``AHEAD``: K steps of words in flight while
    one is decoded (tile option ``mma_ahead``, mma_tiles.ahead). ``XAHEAD``: the next K
    step's activations in flight too (tile option ``mma_xahead``, _x_step). ``XREG``: the
    activations in fragment order, straight into the B operand's registers (tile option
    ``mma_xreg``, _xreg_operand), and the intermediate written in that order. ``DAHEAD``
    (tile option ``mma_dahead``): the next K step's weights decoded while this step's are
    multiplied — its operands carried over the loop, its words loaded two steps ahead —
    so that no MMA waits on the decode of its own step (session 25: the decode's ALU-pipe
    time is as long as the step's memory time; this gives ptxas independent work to fill
    the ALU pipe with)."""
    gl.static_assert(AHEAD == 1 or AHEAD == 2, "one or two K steps of words in flight")
    gl.static_assert(not (DAHEAD and AHEAD == 2), "mma_dahead loads the words two steps ahead itself")
    gl.static_assert(SPLIT == 1 or BK == 128, "split K steps are the halves of one 128-wide window")
    gl.static_assert(not (XREG and XAHEAD), "mma_xreg loads each step's activations into the B operand itself")
    A_DOT: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=MMA, k_width=2)
    B_DOT: gl.constexpr = gl.DotOperandLayout(operand_index=1, parent=MMA, k_width=2)
    blk = gl.program_id(0)
    j = gl.program_id(1)
    e = gl.load(bexp_ptr + blk)
    if e < 0:
        return
    if TABVEC:
        pt0, pt1, pt2, pt3 = _table_in_lanes(pt0, pt1, pt2, pt3, K, LW)
    # K part of this program (SPLITK > 1): its pointers start there, its loop runs over KS
    # (written as whole windows, so the compiler sees the alignment its vector loads need)
    if SPLITK > 1:
        KS = K // (128 * SPLITK) * 128
        kpart = j // (I // BN)
        j = j % (I // BN)
    else:
        KS = K
    xp = _b_ptrs(x_ptr, stride_xm, blk * BM, sorted_ptr, P, topk, True, BM, BK, SPLIT, XL, B_DOT, XREG)
    gw, gs = _group_ptrs(w_ptr, s_ptr, e, j * BN, stride_we, stride_wn, stride_se, stride_sn, BN, BK, LW, FMT, TILED)
    if SPLITK > 1:
        xp = xp + kpart * KS  # every order repeats per 128-wide window, and KS is whole windows
        kw, ks = _step_offsets(kpart * KS, FMT, TILED)
        gw = gw + kw
        gs = gs + ks
    uw = gw + I * stride_wn
    us = gs + I * stride_sn
    acc_g = gl.zeros([BN, BM], gl.float32, MMA)
    acc_u = gl.zeros([BN, BM], gl.float32, MMA)
    gwd, gsc = _load_group(gw, gs, 0, 0, FMT, TILED)
    uwd, usc = _load_group(uw, us, 0, 0, FMT, TILED)
    xa, xh = _x_first(xp, BK, SPLIT, XAHEAD)
    if AHEAD == 2 or DAHEAD:
        kw, ks = _step_offsets(gl.minimum(BK, KS - BK), FMT, TILED)
        gwd1, gsc1 = _load_group(gw, gs, kw, ks, FMT, TILED)
        uwd1, usc1 = _load_group(uw, us, kw, ks, FMT, TILED)
    if DAHEAD:
        # step 0 decoded before the loop; gwd.. then hold step 1's words
        ag0, au0, ag1, au1 = _step_operands(gwd, gsc, uwd, usc, pt0, pt1, pt2, pt3, FMT, BN, BK, SPLIT, A_DOT)
        gwd = gwd1
        gsc = gsc1
        uwd = uwd1
        usc = usc1
    for k0 in range(0, KS, BK):
        xb, xb2, xa, xh = _x_step(xp, k0, KS, xa, xh, BK, SPLIT, XAHEAD, B_DOT, XREG)
        # the next step's words (AHEAD 2 or DAHEAD: the one after it) in flight while this
        # one is decoded (the last steps reload the last: no mask, no zero-fill)
        kw, ks = _step_offsets(gl.minimum(k0 + (AHEAD + DAHEAD) * BK, KS - BK), FMT, TILED)
        ngw, ngs = _load_group(gw, gs, kw, ks, FMT, TILED)
        nuw, nus = _load_group(uw, us, kw, ks, FMT, TILED)
        if DAHEAD:
            # the next step's operands from its words (after the last step: unused)
            ng0, nu0, ng1, nu1 = _step_operands(gwd, gsc, uwd, usc, pt0, pt1, pt2, pt3, FMT, BN, BK, SPLIT, A_DOT)
            acc_g = mma_v2(ag0, xb, acc_g)
            acc_u = mma_v2(au0, xb, acc_u)
            if SPLIT == 2:
                xb = _x_second(xp, k0, xb2, BK, XAHEAD, B_DOT, XREG)
                acc_g = mma_v2(ag1, xb, acc_g)
                acc_u = mma_v2(au1, xb, acc_u)
                ag1 = ng1
                au1 = nu1
            ag0 = ng0
            au0 = nu0
        elif SPLIT == 1:
            acc_g = mma_v2(_a_operand(gwd, gsc, pt0, pt1, pt2, pt3, FMT, BN, BK, A_DOT), xb, acc_g)
            acc_u = mma_v2(_a_operand(uwd, usc, pt0, pt1, pt2, pt3, FMT, BN, BK, A_DOT), xb, acc_u)
        else:
            acc_g = mma_v2(_a_half(gwd, gsc, 0, pt0, pt1, pt2, pt3, FMT, BN, A_DOT), xb, acc_g)
            acc_u = mma_v2(_a_half(uwd, usc, 0, pt0, pt1, pt2, pt3, FMT, BN, A_DOT), xb, acc_u)
            xb = _x_second(xp, k0, xb2, BK, XAHEAD, B_DOT, XREG)
            acc_g = mma_v2(_a_half(gwd, gsc, 1, pt0, pt1, pt2, pt3, FMT, BN, A_DOT), xb, acc_g)
            acc_u = mma_v2(_a_half(uwd, usc, 1, pt0, pt1, pt2, pt3, FMT, BN, A_DOT), xb, acc_u)
        if AHEAD == 2:
            gwd = gwd1
            gsc = gsc1
            uwd = uwd1
            usc = usc1
            gwd1 = ngw
            gsc1 = ngs
            uwd1 = nuw
            usc1 = nus
        else:
            gwd = ngw
            gsc = ngs
            uwd = nuw
            usc = nus
    if SPLITK > 1:
        part = _partial_ptrs(inter_ptr, stride_im, blk * BM, j, BM, BN, MMA) + kpart * 2 * I
        gl.store(part, acc_g)
        gl.store(part + I, acc_u)
    else:
        _store13(acc_g, acc_u, e, blk * BM, j, s2_ptr, sorted_ptr, tw_ptr, inter_ptr, stride_im, P, HAS_S2,
                 WEIGHT_ON_INPUT, BM, BN, MMA, XREG)


@gluon.jit
def _partial_ptrs(part_ptr, stride_pm, slot0, j, BM: gl.constexpr, BN: gl.constexpr, MMA: gl.constexpr):
    """[BN, BM] pointers (layout MMA) to K part 0's gate partials of rows j·BN.. and the
    BM slots from ``slot0`` (mma_splitk)."""
    slots = (slot0 + gl.arange(0, BM, layout=gl.SliceLayout(0, MMA))).to(gl.int64)
    rows = j * BN + gl.arange(0, BN, layout=gl.SliceLayout(1, MMA))
    return part_ptr + gl.expand_dims(slots, 0) * stride_pm + gl.expand_dims(rows, 1)


@gluon.jit(do_not_specialize=["P"])
def splitk13_kernel(part_ptr, stride_pm, s2_ptr, sorted_ptr, bexp_ptr, tw_ptr, inter_ptr, stride_im, P, I,
                    HAS_S2: gl.constexpr, WEIGHT_ON_INPUT: gl.constexpr, BM: gl.constexpr, BN: gl.constexpr,
                    MMA: gl.constexpr, SPLITK: gl.constexpr, XREG: gl.constexpr = False):
    """Tile option ``mma_splitk``: the gate/up kernel's SPLITK partial sums of rows
    [j·BN, +BN) of one expert block, added in part order (the same bits whatever order the
    parts ran in), finished by the same ``_store13`` as the unsplit kernel. Why split K: at
    decode batches the gate/up grid is (experts hit × I/BN) programs that each stream the
    whole hidden dimension — at 16 tokens on the H200, 7-15 warps an SM and 0.39-0.55
    instructions issued a cycle per scheduler (ncu, session 20) — and SPLITK parts put
    SPLITK times the warps in flight on the same weights."""
    blk = gl.program_id(0)
    j = gl.program_id(1)
    e = gl.load(bexp_ptr + blk)
    if e < 0:
        return
    part = _partial_ptrs(part_ptr, stride_pm, blk * BM, j, BM, BN, MMA)
    acc_g = gl.load(part)
    acc_u = gl.load(part + I)
    for s in gl.static_range(1, SPLITK):
        acc_g = acc_g + gl.load(part + s * 2 * I)
        acc_u = acc_u + gl.load(part + s * 2 * I + I)
    _store13(acc_g, acc_u, e, blk * BM, j, s2_ptr, sorted_ptr, tw_ptr, inter_ptr, stride_im, P, HAS_S2, WEIGHT_ON_INPUT,
             BM, BN, MMA, XREG)


@gluon.jit(do_not_specialize=["P", "topk", "pt0", "pt1", "pt2", "pt3"])
def mma2_kernel(inter_ptr, stride_im, w_ptr, s_ptr, s2_ptr, sorted_ptr, bexp_ptr, tw_ptr, out_ptr, stride_om,
                pt0, pt1, pt2, pt3, P, topk, K, stride_we, stride_wn, stride_se, stride_sn,
                FMT: gl.constexpr, HAS_S2: gl.constexpr, WEIGHT_ON_INPUT: gl.constexpr, PAIR_ROWS: gl.constexpr,
                BM: gl.constexpr, BN: gl.constexpr, BK: gl.constexpr, MMA: gl.constexpr, LW: gl.constexpr,
                XL: gl.constexpr, SPLIT: gl.constexpr = 1, TILED: gl.constexpr = False, AHEAD: gl.constexpr = 1,
                XAHEAD: gl.constexpr = False, XREG: gl.constexpr = False, TABVEC: gl.constexpr = False):
    """Down rows [j·BN, +BN) of one expert block from the intermediate cache (K = the
    intermediate size, in activation order): each pair's row stored (PAIR_ROWS) or
    added atomically into its token's row. ``AHEAD``, ``XAHEAD``, ``XREG`` (the intermediate
    then in fragment order), ``TABVEC``: as in mma13_kernel."""
    gl.static_assert(AHEAD == 1 or AHEAD == 2, "one or two K steps of words in flight")
    gl.static_assert(SPLIT == 1 or BK == 128, "split K steps are the halves of one 128-wide window")
    gl.static_assert(not (XREG and XAHEAD), "mma_xreg loads each step's activations into the B operand itself")
    A_DOT: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=MMA, k_width=2)
    B_DOT: gl.constexpr = gl.DotOperandLayout(operand_index=1, parent=MMA, k_width=2)
    blk = gl.program_id(0)
    j = gl.program_id(1)
    e = gl.load(bexp_ptr + blk)
    if e < 0:
        return
    if TABVEC:
        pt0, pt1, pt2, pt3 = _table_in_lanes(pt0, pt1, pt2, pt3, K, LW)
    hp = _b_ptrs(inter_ptr, stride_im, blk * BM, sorted_ptr, P, topk, False, BM, BK, SPLIT, XL, B_DOT, XREG)
    wp, sp = _group_ptrs(w_ptr, s_ptr, e, j * BN, stride_we, stride_wn, stride_se, stride_sn, BN, BK, LW, FMT, TILED)
    acc = gl.zeros([BN, BM], gl.float32, MMA)
    wd, sc = _load_group(wp, sp, 0, 0, FMT, TILED)
    ha, hh = _x_first(hp, BK, SPLIT, XAHEAD)
    if AHEAD == 2:
        kw, ks = _step_offsets(gl.minimum(BK, K - BK), FMT, TILED)
        wd1, sc1 = _load_group(wp, sp, kw, ks, FMT, TILED)
    for k0 in range(0, K, BK):
        hb, hb2, ha, hh = _x_step(hp, k0, K, ha, hh, BK, SPLIT, XAHEAD, B_DOT, XREG)
        kw, ks = _step_offsets(gl.minimum(k0 + AHEAD * BK, K - BK), FMT, TILED)
        nwd, nsc = _load_group(wp, sp, kw, ks, FMT, TILED)
        if SPLIT == 1:
            acc = mma_v2(_a_operand(wd, sc, pt0, pt1, pt2, pt3, FMT, BN, BK, A_DOT), hb, acc)
        else:
            acc = mma_v2(_a_half(wd, sc, 0, pt0, pt1, pt2, pt3, FMT, BN, A_DOT), hb, acc)
            hb = _x_second(hp, k0, hb2, BK, XAHEAD, B_DOT, XREG)
            acc = mma_v2(_a_half(wd, sc, 1, pt0, pt1, pt2, pt3, FMT, BN, A_DOT), hb, acc)
        if AHEAD == 2:
            wd = wd1
            sc = sc1
            wd1 = nwd
            sc1 = nsc
        else:
            wd = nwd
            sc = nsc
    _store2(acc, e, blk * BM, j, s2_ptr, sorted_ptr, tw_ptr, out_ptr, stride_om, P, topk, HAS_S2, WEIGHT_ON_INPUT,
            PAIR_ROWS, BM, BN, MMA)
