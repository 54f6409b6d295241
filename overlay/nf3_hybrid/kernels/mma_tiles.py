"""The NF3 and NVFP4 tiers' grouped GEMMs on mma.sync, weights decoded straight into the
MMA's registers (kernels/mma_gluon.py, Gluon) — the grouped path's kernels for those two
formats on CUDA GPUs of compute capability 8.9 and later whose Triton has Gluon;
elsewhere, under TRITON_INTERPRET, and for MXFP4, the Triton tiles of expert_mlp.py.

Why: the Triton tiles (expert_mlp.py) dequantize into a blocked layout, and Triton then
moves the tile through shared memory into the warpgroup MMA's operand layout, one
synchronous MMA after another; that grouped path decoded ~1.5 T weights/s on the H200,
whatever the tiles (sessions 5-9). Here each lane of a warp owns one whole NF3 group
(32 codes, three words in nibble layout) of the two weight rows its mma.sync fragment
covers, in each 128-wide K window, and the activations are permuted the same way once
per chunk (``activation_order``): the 32 values the lane decodes with the byte-permute
table lookup are its 32 fragment values, with no data movement between lanes
(compile_probe: w13 loop 396 SASS instructions per 128 weights per thread, against
~4.9 per weight in the Triton tile). An NVFP4 lane's 32 weights are four e2m1 words and two scales, decoded
by the same e2m1 byte-permute block as the Triton tiles' ``ptx4``.

Measured on the H200 (GLM-5.2 shape, 192 NF3 experts, top-6, I=512; gate/up GEMM only;
bench/results/gluon_probe_h200_s10.json): 290 / 399 / 638 / 1046 µs at 128 / 512 / 1024 /
2048 tokens against 907 / 946 / 1027 / 1443 µs for the best Triton tile of each size,
relative difference of the intermediate 2e-5.

The down GEMM reads the intermediate in the same order: the gate/up kernel stores column
c at ``p_position(c)``.

Tile option ``wgmma`` (SM 9.x only; the grouped classes' default there when every tier
takes it): the same decoded A fragments into Hopper's warpgroup MMA, the activations from
shared memory, 16-256 tokens a block (kernels/wgmma_gluon.py says why).
"""
from __future__ import annotations

import logging
from functools import lru_cache

import torch

from . import register_cap

logger = logging.getLogger(__name__)

WINDOW = 128  # K window whose four NF3 groups the four lanes of a fragment row own
# tile defaults (H200 sweep above: 64 rows on four warps, 128-wide K steps)
BN = 64
BK = 128
WARPS = 4


@lru_cache(maxsize=None)
def gluon_missing() -> str:
    """Why this Triton cannot build these kernels ('' when it can)."""
    try:
        from . import mma_gluon  # noqa: F401
    except ImportError as exc:
        return f"{type(exc).__name__}: {exc}"
    return ""


def shape_fits(hidden: int, inter: int) -> bool:
    """K of both GEMMs in whole 128-wide windows, N in whole 64-row tiles."""
    return hidden % WINDOW == 0 and inter % WINDOW == 0


def activation_order(k: int) -> torch.Tensor:
    """For each position p of the permuted activations, the original index: in window w,
    p = 128w + 2t + b + 8·(4·word + pair) holds activation 128w + 32t + 8·word + 2·pair + b
    (group t of the window, code 8·word + 2·pair + b of it)."""
    if k % WINDOW:
        raise ValueError(f"NF3 mma path: K={k} is not a multiple of {WINDOW}")
    p = torch.arange(k)
    r = p % WINDOW
    b, t, jj = r % 2, (r // 2) % 4, r // 8
    return p - r + 32 * t + 8 * (jj // 4) + 2 * (jj % 4) + b


def fragment_order(k: int) -> torch.Tensor:
    """Tile option ``mma_xreg``: for each position q of the activations in fragment order,
    the original index — in window w, q = 128w + 32i + 8t + v holds activation
    128w + 32t + 8i + v: run i of 8 of lane t's NF3 group t, the four lanes' runs side by
    side (mma_gluon.fragment_order_layout). Its own inverse (the kernel's _q_position)."""
    if k % WINDOW:
        raise ValueError(f"NF3 mma path: K={k} is not a multiple of {WINDOW}")
    q = torch.arange(k)
    r = q % WINDOW
    return q - r + 32 * ((r // 8) % 4) + 8 * (r // 32) + r % 8


def p_position(c: torch.Tensor) -> torch.Tensor:
    """Inverse of ``activation_order``: the permuted position of original index c (the
    kernel's _p_position, for tests)."""
    r = c % WINDOW
    return c - r + 2 * (r // 32) + (r % 2) + 8 * (4 * ((r % 32) // 8) + (r % 8) // 2)


@lru_cache(maxsize=None)
def _layouts(bn: int, bk: int, warps: int, split: int):
    from . import mma_gluon

    return mma_gluon.layouts(bn, bk, warps, split)


def _split(cfg: dict) -> int:
    """Tile option ``mma_split``: 2 multiplies each 128-wide K step in two halves, so that
    half the decoded weights and half the activations are live at a time (compile_probe,
    SM90, gate/up kernel in 64-token blocks: 254 → 210 registers for NF3, 255 + 72 bytes
    of spill → 212 for NVFP4); the products and their order are the same."""
    split = int(cfg.get("mma_split", 1))
    if split not in (1, 2):
        raise ValueError(f"mma_split={split}: 1 or 2")
    return split


def ahead(cfg: dict) -> int:
    """Tile option ``mma_ahead`` (mma.sync kernels): 2 keeps the words of the next two K
    steps in flight instead of one (a lane's 12 more NF3 gate/up registers), for kernels
    that wait on the weights' latency rather than on issue; a clear error otherwise. Off
    by default: on the H200 (session 21) the small class was 2-4 % slower with it from 16
    tokens (bench.py's SWEEP has the numbers); a sweep candidate for other GPUs."""
    n = int(cfg.get("mma_ahead", 1))
    if n not in (1, 2):
        raise ValueError(f"mma_ahead={n}: 1 or 2")
    if n == 2 and cfg.get("wgmma"):
        raise ValueError("mma_ahead=2: an mma.sync tile option (the wgmma kernels load one K step ahead)")
    return n


def _mma_sync_switch(cfg: dict, key: str, wgmma_why: str = "not for the wgmma kernels") -> bool:
    """A 0 / 1 tile option of the mma.sync kernels: a clear error for another value, and
    for 1 beside a wgmma tile (``wgmma_why`` says why it is not theirs)."""
    n = int(cfg.get(key, 0))
    if n not in (0, 1):
        raise ValueError(f"{key}={n}: 0 or 1")
    if n and cfg.get("wgmma"):
        raise ValueError(f"{key}=1: an mma.sync tile option ({wgmma_why})")
    return bool(n)


def xahead(cfg: dict) -> bool:
    """Tile option ``mma_xahead`` (mma.sync kernels): 1 loads the next K step's activations
    (the B operand) into registers while this step is multiplied, as the weights already
    are, instead of when they are multiplied — a lane's 8 more registers; for kernels that
    wait on the activations' L2 latency at each step. A clear error otherwise. Off by
    default: on the H200 (session 22) the small class was no faster with it, within -5 / +2 %
    of the built-in tiles at 8-64 tokens (bench.py's SWEEP has the numbers)."""
    return _mma_sync_switch(cfg, "mma_xahead", "the wgmma kernels stage their activations asynchronously, "
                                                "wg_stages")


def xreg(cfg: dict) -> bool:
    """Tile option ``mma_xreg`` (mma.sync kernels): 1 has each lane load its own B fragment
    — its NF3 group's activations, four runs of 8 in ``fragment_order`` — straight into
    the MMA's registers, instead of a row-contiguous load converted through shared memory
    (a store, a barrier and ldmatrix each step: mma_gluon._xreg_operand says why). The
    activations (``Workspace.mma_activations``) and the intermediate are then in fragment
    order. A clear error for values other than 0 / 1, with the wgmma kernels
    (their activations are staged in shared memory for the warpgroup MMA) and with
    ``mma_xahead`` (which carries the next step's row-contiguous load). Off by default: on
    the H200 (session 23) the small class was 0-8 % slower with it from 16 tokens, and
    15-20 % slower with the activations in their original order (bench.py's SWEEP has the
    numbers) — the barrier it removes is not what limits these kernels."""
    n = _mma_sync_switch(cfg, "mma_xreg", "the wgmma kernels read their activations from shared memory")
    if n and xahead(cfg):
        raise ValueError("mma_xreg=1 with mma_xahead=1: choose one (mma_xreg loads each step's activations "
                         "into the B operand itself)")
    return n


def tabvec(cfg: dict) -> bool:
    """Tile option ``mma_tabvec`` (mma.sync kernels): 1 holds the decode table's words in
    vector registers instead of the kernel's scalars, which ptxas keeps in a uniform
    register and copies before each table lookup (mma_gluon._table_in_lanes says why and
    how much). A clear error for values other than 0 / 1 and with the wgmma kernels. Off
    by default: on the H200 (session 23) the small class was within -2.4 / +2.7 % of the
    built-in tiles with it, over two runs at I=512 and I=2048 (bench.py's SWEEP has the
    numbers) — 9 % fewer instructions, no measurable gain."""
    return _mma_sync_switch(cfg, "mma_tabvec")


def dahead(cfg: dict) -> bool:
    """Tile option ``mma_dahead`` (mma.sync gate/up kernel): 1 decodes the next K step's
    weights while this step's are multiplied (mma_gluon.mma13_kernel's ``DAHEAD``): the
    decoded operands are carried over the loop and the words loaded two steps ahead, so
    that an MMA never waits on its own step's decode. For kernels whose ALU pipe is full of
    the decode (session 25's ncu: 53-63 % busy, as long as the memory time or longer). A
    clear error for values other than 0 / 1, with the wgmma kernels and with
    ``mma_ahead`` 2 (which it subsumes). Off by default: compile_probe (Triton 3.6) 96 →
    168 registers, and on the H200 (session 25) the small class was 22-26 % slower with it
    (bench.py's SWEEP has the numbers)."""
    n = _mma_sync_switch(cfg, "mma_dahead")
    if n and ahead(cfg) == 2:
        raise ValueError("mma_dahead=1 with mma_ahead=2: choose one (mma_dahead loads the words two steps ahead "
                         "itself)")
    return n


SPLITK = (1, 2, 4)


def splitk(cfg: dict) -> int:
    """Tile option ``mma_splitk`` (mma.sync gate/up kernel): 2 or 4 splits the hidden
    dimension into that many parts, each its own program, whose fp32 partial sums a second
    kernel adds in part order and finishes (mma_gluon.splitk13_kernel says why: more warps
    in flight on the same weights); the partials need scratch
    (``Workspace.splitk_partials``). A clear error for other values and with the wgmma
    kernels. Off by default: on the H200 (session 23) two parts made the small class's
    gate/up kernels 24 % shorter at 16 tokens (I=512), and the layer 12 % faster with its
    tiers one after the other, but no faster with them on their two streams (the default:
    the other tier's warps already fill the SMs), and slower at 64 tokens and at I=2048
    (bench.py's SWEEP has the numbers)."""
    n = int(cfg.get("mma_splitk", 1))
    if n not in SPLITK:
        raise ValueError(f"mma_splitk={n}: one of {SPLITK}")
    if n > 1 and cfg.get("wgmma"):
        raise ValueError(f"mma_splitk={n}: an mma.sync tile option (not for the wgmma kernels)")
    return n


def _tile(cfg: dict, key: str, size: int) -> int:
    bn = int(cfg.get(key, BN))
    if size % bn:
        bn = BN
    return bn


# wgmma: tokens a block (the instruction's N), warps (a multiple of four: warpgroups
# stacked along the weight rows, 16 rows a warp), activation buffers in flight
WG_BLOCKS = (16, 32, 64, 128, 256)
WG_WARPS = 4
WG_STAGES = 2


@lru_cache(maxsize=None)
def wgmma_missing() -> str:
    """Why this Triton cannot build the wgmma kernels ('' when it can): no Gluon, or a
    Gluon without the Hopper pieces they use."""
    if gluon_missing():
        return gluon_missing()
    try:
        from . import wgmma_gluon  # noqa: F401
    except (ImportError, AttributeError) as exc:
        return f"{type(exc).__name__}: {exc}"
    return ""


# tile option wg_tail (wgmma only): TAIL more slots a block after its BM, multiplied by
# TAIL-wide MMAs from the same decoded weights only when they hold a pair (wgmma_gluon)
WG_TAILS = (0, 16, 32, 64)


def wgmma_tail(cfg: dict) -> int:
    """Tile option ``wg_tail``'s slots (0: off); a clear error for a value the kernels
    cannot take."""
    tail = int(cfg.get("wg_tail", 0))
    if tail and not cfg.get("wgmma"):
        raise ValueError(f"wg_tail={tail}: a wgmma tile option (set wgmma=1)")
    if tail not in WG_TAILS:
        raise ValueError(f"wg_tail={tail}: one of {WG_TAILS}")
    return tail


# tile option wg_maxnreg (wgmma only): a register cap for the kernels, so that more programs
# fit on an SM at the cost of spills (compile_probe, Triton 3.6, NF3 gate/up at 64 + 16
# slots: 230 registers, two programs an SM; capped at 168, three, with 72 bytes spilled
# and 16 local loads a K step). On the H200 (session 15) the same bits and 3-17 % slower in
# every class it was tried on — more programs an SM do not help these kernels — so off by
# default, a sweep candidate for other GPUs and Triton versions
WG_MAXNREG = (128, 255)


# tile option mma_nf3_maxnreg (mma.sync kernels, NF3 tier only): a register cap, so that
# more programs fit on an SM. Registers are handed out 8 a thread at a time per warp: the
# small class's tiled NF3 gate/up kernel at 96 registers fits five four-warp programs an
# SM, at 80 six (compile_probe, Triton 3.6: 32 bytes of stack outside the loop, loop 380 →
# 388 instructions), at 64 eight (120 bytes, 25 local loads a K step). The NVFP4 kernel
# (121 registers) spills 72 bytes already at 88, so the cap leaves that tier alone. On the
# H200 (session 21, bench_moe_h200_s21_nf3cap_i{512,2048}.json) slower at every cap: I=512,
# µs at 1 / 8 / 16 / 64 tokens, 80 → 98.5 / 182 / 242.5 / 438, 72 → 102 / 188 / 268 / 445,
# 64 → 137 / 221 / 272 / 538, against 85-86 / 152-163 / 220-225 / 428 uncapped; I=2048
# 80 → 164 / 445 / 728 / 1587 against 146-160 / 438 / 714-726 / 1550-1571. So off by
# default: more programs an SM do not make these kernels faster.
MMA_MAXNREG = (64, 255)


def launch_options(cfg: dict, fmt: int = 0) -> dict:
    """The kernels' compile options beyond num_warps that the tiles ask for: ``maxnreg``
    under tile option ``wg_maxnreg`` (wgmma kernels) or ``mma_nf3_maxnreg`` (mma.sync
    kernels of an NF3 tier, ``fmt`` 0); a clear error outside what ptxas takes or for
    the other kernels' option."""
    if cfg.get("wgmma"):
        if cfg.get("mma_nf3_maxnreg"):
            raise ValueError(f"mma_nf3_maxnreg={cfg['mma_nf3_maxnreg']}: an mma.sync tile option "
                             "(the wgmma kernels' is wg_maxnreg)")
        cap = cfg.get("wg_maxnreg")
        return register_cap("wg_maxnreg", cap, WG_MAXNREG) if cap else {}
    if cfg.get("wg_maxnreg"):
        raise ValueError(f"wg_maxnreg={cfg['wg_maxnreg']}: a wgmma tile option (set wgmma=1)")
    cap = cfg.get("mma_nf3_maxnreg")
    if not cap:
        return {}
    opts = register_cap("mma_nf3_maxnreg", cap, MMA_MAXNREG)
    return opts if fmt == 0 else {}


def wgmma_gu(cfg: dict) -> bool:
    """Tile option ``wg_gu`` (wgmma only): the gate/up kernel's tile holds gate rows and the
    up rows of the same columns, BN/2 columns a program with one accumulator
    (wgmma_gluon.wg13_kernel says why); a clear error without the wgmma kernels.

    Off by default: session 17 (H200, GLM-5.2 shape, I=512, hybrid layer,
    bench/results/sweep_h200_s17_gu.json) timed it slower in every class — 569 / 562 / 608
    against 524 / 540 / 593 µs at 128-384 tokens (16-token blocks), 775 / 779 against 686 /
    720 at 640 / 768 (32), 874 / 1014 against 818 / 935 at 1024 / 1280 (32 + 16), 1296
    against 1219 at 2048 (64 + 16; 127 registers instead of 221, four programs an SM). In
    128 + 16-slot blocks over 4096-token chunks each expert's weights were decoded once, and
    the layer took 2678 µs against 2508 in two passes of 2048 (bench_moe_h200_s17_huge.json):
    these kernels' time follows the block's token slots (padding included: 2415-2520 µs at
    3072 tokens in the same blocks), not the number of weight decodes."""
    on = bool(int(cfg.get("wg_gu", 0)))
    if on and not cfg.get("wgmma"):
        raise ValueError("wg_gu=1: a wgmma tile option (set wgmma=1)")
    return on


def block_slots(cfg: dict) -> int:
    """Routing slots a block of these tiles holds: its BM tokens and the wgmma tail's. Why
    a tail: each block decodes its expert's weights again, and the routed pairs an expert
    gets scatter around their mean (GLM-5.2, 2048 tokens: 64 ± 8 of top-8 of 256), so that
    with 64-slot blocks half the experts need a second block for a few pairs; with a
    16-slot tail almost none do, and the tail's MMAs run only for the experts above 64."""
    return int(cfg["BM"]) + wgmma_tail(cfg)


def wgmma_tile(cfg: dict, size: int) -> tuple:
    """(BM, warps, BN, stages) of the wgmma kernels for a GEMM of ``size`` output rows;
    a clear error for tiles wgmma cannot take."""
    bm = int(cfg["BM"])
    warps = int(cfg.get("wg_warps", WG_WARPS))
    stages = int(cfg.get("wg_stages", WG_STAGES))
    bn = 16 * warps
    if bm not in WG_BLOCKS:
        raise ValueError(f"wgmma tiles: BM={bm} tokens a block; one of {WG_BLOCKS}")
    if warps % 4 or size % bn:
        raise ValueError(f"wgmma tiles: wg_warps={warps} (a multiple of 4) must give rows tiles dividing {size}")
    if stages < 2:
        raise ValueError(f"wgmma tiles: wg_stages={stages}; at least 2")
    return bm, warps, bn, stages


@lru_cache(maxsize=None)
def _wg_layouts(bm: int, warps: int):
    from . import mma_gluon, wgmma_gluon

    _, lw, _ = mma_gluon.layouts(16 * warps, BK, warps, 1)
    return (*wgmma_gluon.layouts(bm, warps), lw)


def table_words(fmt: int, nf3_words) -> tuple:
    """The decode block's four table registers: the NF3 codebook's, or e2m1's (fmt 1)."""
    from .ptx_decode import E2M1_TABLE_WORDS

    return tuple(nf3_words) if fmt == 0 else tuple(E2M1_TABLE_WORDS) + (0,)


def _kernel_tiles(cfg: dict, size: int, gemm: str) -> tuple:
    """(kernel, rows a program, warps, tile constexprs) of GEMM ``gemm`` ("13": gate/up,
    "2": down) with ``size`` output rows: the wgmma variant under tile option ``wgmma``,
    else the mma.sync one. Both take the same arguments."""
    if cfg.get("wgmma"):
        from . import wgmma_gluon

        ahead(cfg)  # refuses mma_ahead here
        xahead(cfg)  # and mma_xahead
        xreg(cfg)  # and mma_xreg
        splitk(cfg)  # and mma_splitk
        tabvec(cfg)  # and mma_tabvec
        dahead(cfg)  # and mma_dahead
        gu = gemm == "13" and wgmma_gu(cfg)
        bm, warps, bn, stages = wgmma_tile(cfg, 2 * size if gu else size)
        tail = wgmma_tail(cfg)
        mma, xl, shl, lw = _wg_layouts(bm, warps)
        mma_t, xl_t = _wg_layouts(tail, warps)[:2] if tail else (mma, xl)
        tiles = dict(BM=bm, BN=bn, BK=BK, MMA=mma, LW=lw, XL=xl, SHL=shl, STAGES=stages, TAIL=tail, MMA_T=mma_t,
                     XL_T=xl_t)
        if gemm == "13":
            # a wg_gu tile's BN rows are BN/2 gate rows and their up rows: BN/2 columns a program
            return wgmma_gluon.wg13_kernel, bn // 2 if gu else bn, warps, dict(tiles, GU=gu)
        return wgmma_gluon.wg2_kernel, bn, warps, tiles
    from . import mma_gluon

    bn, warps, split = _tile(cfg, f"mma_bn{gemm}", size), int(cfg.get("mma_warps", WARPS)), _split(cfg)
    mma, lw, xl = _layouts(bn, BK, warps, split)
    kernel = mma_gluon.mma13_kernel if gemm == "13" else mma_gluon.mma2_kernel
    tiles = dict(BM=cfg["BM"], BN=bn, BK=BK, MMA=mma, LW=lw, XL=xl, SPLIT=split, AHEAD=ahead(cfg), XAHEAD=xahead(cfg),
                 XREG=xreg(cfg), TABVEC=tabvec(cfg))
    if gemm == "13":
        tiles["SPLITK"] = splitk(cfg)
        tiles["DAHEAD"] = dahead(cfg)
    return kernel, bn, warps, tiles


def launch_w13(xp, w13, s13, s13_2, sorted_ids, block_expert, topk_weights, inter, num_pairs, topk, inter_size,
               fmt, weight_on_input, cfg, words, tiled=False, partials=None):
    """``xp``: fp16 activations in activation order (tile option ``mma_xreg``: in
    ``fragment_order``); ``w13``: the tier's packed codes [E,
    2I, ·] bytes (NF3 in nibble layout — ``tiled``: with its scales in tiled layout,
    formats/nf3_tiled.py — or e2m1 with fmt 1 and its global scales ``s13_2`` [E, 2]);
    ``inter``: fp16 [slots, ≥ I], written in the same order as ``xp``; ``words``: ``table_words``;
    ``partials``: fp32 [≥ slots, S·2I] scratch under tile option ``mma_splitk`` S > 1."""
    kernel, bn, warps, tiles = _kernel_tiles(cfg, inter_size, "13")
    w = w13.view(torch.int32)
    parts = tiles.get("SPLITK", 1)
    s2 = s13_2 if s13_2 is not None else s13
    dest = inter
    if parts > 1:
        hidden = xp.shape[1]
        if hidden % (parts * BK):
            raise ValueError(f"mma_splitk={parts}: hidden {hidden} is not {parts} whole {BK}-wide K steps")
        if partials is None or partials.shape[0] < sorted_ids.numel() or partials.shape[1] < parts * 2 * inter_size:
            have = None if partials is None else tuple(partials.shape)
            raise ValueError(f"mma_splitk={parts}: partials scratch {have} is smaller than "
                             f"[{sorted_ids.numel()}, {parts * 2 * inter_size}]")
        dest = partials
    kernel[(block_expert.numel(), inter_size // bn * parts)](
        xp, xp.stride(0), w, s13, s2, sorted_ids, block_expert, topk_weights,
        dest, dest.stride(0), *words, num_pairs, topk, xp.shape[1], inter_size, w.stride(0), w.stride(1),
        s13.stride(0), s13.stride(1), FMT=fmt, HAS_S2=s13_2 is not None, WEIGHT_ON_INPUT=weight_on_input, **tiles,
        TILED=_tiled(fmt, tiled), num_warps=warps, **launch_options(cfg, fmt))
    if parts > 1:
        from . import mma_gluon

        mma_gluon.splitk13_kernel[(block_expert.numel(), inter_size // bn)](
            partials, partials.stride(0), s2, sorted_ids, block_expert, topk_weights, inter, inter.stride(0),
            num_pairs, inter_size, HAS_S2=s13_2 is not None, WEIGHT_ON_INPUT=weight_on_input, BM=tiles["BM"],
            BN=bn, MMA=tiles["MMA"], SPLITK=parts, XREG=tiles["XREG"], num_warps=warps)


def launch_w2(inter, w2, s2, s2_2, sorted_ids, block_expert, topk_weights, out, num_pairs, topk, inter_size,
              fmt, weight_on_input, cfg, words, pair_rows, tiled=False):
    """``out``: [pairs, hidden] (``pair_rows``: fp32 or bf16, each pair's row stored in its
    dtype) or fp32 [tokens, hidden] added into."""
    hidden = out.shape[1]
    kernel, bn, warps, tiles = _kernel_tiles(cfg, hidden, "2")
    w = w2.view(torch.int32)
    kernel[(block_expert.numel(), hidden // bn)](
        inter, inter.stride(0), w, s2, s2_2 if s2_2 is not None else s2, sorted_ids, block_expert, topk_weights,
        out, out.stride(0), *words, num_pairs, topk, inter_size, w.stride(0), w.stride(1), s2.stride(0),
        s2.stride(1), FMT=fmt, HAS_S2=s2_2 is not None, WEIGHT_ON_INPUT=weight_on_input, PAIR_ROWS=pair_rows,
        **tiles, TILED=_tiled(fmt, tiled), num_warps=warps, **launch_options(cfg, fmt))


def _tiled(fmt: int, tiled: bool) -> bool:
    if tiled and fmt != 0:
        raise ValueError("the tiled layout is NF3's (formats/nf3_tiled.py); this tier's format is e2m1")
    return bool(tiled)
