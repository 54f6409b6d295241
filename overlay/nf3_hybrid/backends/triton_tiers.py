"""Triton backends for the NF3 tier and the NVFP4 / MXFP4 kept tier.

Scratch lives in one ``Workspace`` per device, shared by every layer, sized once from
the serving capacity (vLLM's max_num_batched_tokens) while weights are processed —
before any CUDA graph is captured. A step allocates nothing but its bf16 result, does
not synchronise with the host, and only compiles kernels for batch shapes it has not
seen (vLLM's warm-up runs every captured size before capture).
"""
from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from typing import Dict, Optional

import torch

from ..flags import NF3_LAYOUTS, current as current_flags
from ..formats import e2m1, nf3, nf3_nibble, nf3_tiled
from ..kernels import align, expert_gemv, expert_mlp, interpret, mma_order, mma_tiles, pair_sum, ptx_decode
from .base import MXFP4, NF3, NVFP4, TierBackend, TierWeights
from .select import device_info

# tokens per pass; larger batches run in several passes over the same scratch. Its
# fp32 pair rows are tokens × top-k × hidden × 4 bytes: 403 MB at 2048 tokens for
# GLM-5.2 (hidden 6144, top-8); a further pass re-reads the layer's weights (~1 GB per
# rank at TP 4: ~0.25 ms against ~5 ms of compute for 2048 tokens). Session 17, H200,
# GLM-5.2, hybrid layer: 4096-token chunks (805 MB of pair rows) no faster — I=512 2426 µs
# at 4096 tokens on the large class's tiles (64 + 16 slots: two blocks an expert, as two
# passes decode each weight twice) against 2508 in two passes; 2163 at 3072 (96 pairs an
# expert: two blocks) against ~2015 (2048 and 1024 tokens' times added); I=2048 10269
# against 9446 at 4096 (bench_moe_h200_s17_as_large.json), and 128 + 16-slot blocks
# slower still (wg_gu).
CHUNK_TOKENS = 2048
# at most this many tokens: the per-pair GEMV path (no routing sort); above: grouped GEMM.
# H200, GLM-5.2 shape, I=512, one run's code: the GEMV took 1818 µs at 64 tokens
# (bench/results/bench_moe_h200.json), the grouped path's decode tiles 2261 / 3165 µs at
# 32 / 64 tokens (bench_moe_h200_grouped_decode.json). Session 9, after sessions 7-8 made
# both faster: GEMV / grouped (16-token blocks) 1360 / 1469 µs at 96 tokens, 1449 / 1477 at
# 104, 1562 / 1510 at 112 (sweep_h200_s9b.json, the GEMV's down tiles before the I-sized
# ones below, which took another ~10 % off it at I=512: sweep_h200_s9c.json)
# Session 10, grouped GEMMs on the mma kernels (kernels/mma_tiles.py): the grouped path
# wins from 32 tokens — GEMV / grouped 432 / 415 µs at 32, 232 / 291 at 16 (I=512), 1653 /
# 1530 and 846 / 957 (I=2048) (layer_mma_h200_s10b.json); the threshold is put between.
# The largest threshold (what the per-pair scratch is sized for); a layer's own is
# ``gemv_tokens(inter)``.
GEMV_TOKENS = 24
# Session 18: after sessions 14-17 (tiled NF3 layout, faster routing, one-kernel activation
# order) the grouped "small" tiles overtake the GEMV earlier, and the earlier the wider the
# layer's per-rank intermediate size — the GEMV's cost follows the routed pairs, the small
# tiles' the experts hit. H200, GLM-5.2, hybrid layer, µs, GEMV / small tiles in one call
# (bench_moe_h200_s18_{gemv,grouped}_bounds.json): I=512 181 / 206 at 12 tokens, 234 / 234
# at 16, 286 / 257 at 20, 337 / 284 at 24; I=1024 240 / 247 at 8, 343 / 320 at 12, 443 / 385
# at 16; I=2048 357 / 363 at 6, 459 / 434 at 8, 868 / 726 at 16. Session 29, on the GEMV's
# options of today (kconst, clamp, e2m1x2; 3-8 % faster from 4 tokens), H100 (the H200 was not
# lent), one call (bench_moe_h100_s29_bound2_{gemv,small}_i*.json): I=512 177.6 / 211.8 at 12,
# 219.9 / 255.7 at 16, 265.8 / 278.6 at 20, 309.3 / 294.9 at 24; I=1024 226.4 / 275.6 at 8,
# 266.1 / 284.7 at 10, 329.2 / 343.0 at 12, 427.5 / 405.5 at 16; I=2048 338.1 / 388.6 at 6,
# 438.0 / 463.0 at 8, 518.2 / 496.9 at 10, 633.1 / 637.6 at 12, 814.7 / 774.6 at 16. The
# bounds at I=1024 and 2048 move up to the last size the GEMV won on the H100 (12, 8); on the
# H200, session 18's times less the GEMV's gains measured since (kconst 2-8 %, clamp and
# e2m1x2 2-8 %) would put the two about level there (an estimate, not timed on the H200).
# I=512 keeps 16: on the H100 the GEMV also won at 20, but session 18's H200 had the small
# tiles 11 % ahead there, about what the GEMV has gained since, so the H200 would be level
# at best. So: (intermediate size at least, GEMV up to this many tokens); below 512 (not
# measured) the GEMV keeps GEMV_TOKENS.
GEMV_TOKENS_BY_INTER = ((512, 16), (1024, 12), (2048, 8))
DECODE_TOKENS = 64
# the grouped path runs the kept tier's two GEMMs on a second CUDA stream, beside the NF3
# tier's (each tier's launch covers every expert block and most of them exit at once: on
# its own, the 64-expert tier's w13 fills less than one wave of the GPU). H200, off / on
# in one session (bench_moe_h200_s8_streams{0,1}.json): I=512 3-8 % faster from 128 to
# 4096 tokens, I=2048 1.5-1.8 %; it costs a second region of the intermediate cache.
CONCURRENT_TIERS = True
# ... except where that measured slower. Session 30, H100, hybrid layer alone, concurrent /
# one after the other, two passes each (bench_moe_h100_s30_tiers_*.json, _ws*_i2048.json):
# at I=2048 on the large class (2048 tokens a pass, every tier on wgmma) 5063-5125 against
# 4224-4325 µs at 2048 tokens, 10059-10737 against 8906-9290 at 4096 — the concurrent graph
# took the fast schedule in 2 of 10 runs (4333, 4361). Everywhere else the overlap still
# paid: I=2048 2865-2890 against 2895-2922 at 1024 tokens (wide class); I=1024 2131-2159
# against 2158-2200 at 2048, 4392-4401 against 4469-4487 at 4096; I=512 3-10 %; 128-1024
# tokens 3-10 % at every size. So the large class on wgmma runs its tiers one after the
# other from this per-rank intermediate size (None: never). With the rule, the same host
# (bench_moe_h100_s30_rule_*_i2048.json, two passes): 4265-4311 against 4957-4982 µs at 2048
# tokens, 7321-7986 against 8353-8359 at 3072, 8713-8853 against 10105-10354 at 4096, 1024
# unchanged. Not timed on the H200, whose SMs and L2 are the H100's.
SERIAL_TIERS_FROM_INTER = 2048
# set by the benchmark's config sweep only
CONFIG_OVERRIDE: Optional[dict] = None
# the pair rows' dtype (read when a workspace is planned): bf16, what vLLM's own fused MoE
# keeps per routed pair — one bf16 rounding a row before the top-k sum adds them in fp32.
# Session 18, H200, GLM-5.2, hybrid layer, one call, fp32 against bf16 rows
# (bench_moe_h200_s18_{fp32,bf16}.json): I=512 654 / 775 / 1144 / 2346 µs against 628 / 740
# / 1055 / 2109 at 512 / 1024 / 2048 / 4096 tokens, I=2048 2234 / 2689 / 4389 against 2152 /
# 2621 / 4195 (8917 against 8945 at 4096), decode within 3 %; the top-k sum at 2048 tokens
# 107 → 56 µs (kernel_breakdown_h200_s18_bf16.json); half the workspace's largest buffer
# (403 → 201 MB at 2048 tokens). ``bench --pair-rows fp32`` times the exact rows.
PAIR_ROWS_DTYPE = torch.bfloat16

logger = logging.getLogger(__name__)

_FMT = {NF3: expert_mlp.FMT_NF3, NVFP4: expert_mlp.FMT_NVFP4, MXFP4: expert_mlp.FMT_MXFP4}


class CapacityError(RuntimeError):
    """A batch larger than the token capacity the scratch was planned for."""


# tile option l2pf's default: each decode GEMV program bulk-prefetches its weight rows and
# scales into L2 before its first load (SM90+, kernels/expert_gemv.py's _prefetch_rows)
GEMV_L2_PREFETCH = False


# tile options kconst13 / kconst2 (expert_gemv.kconst_options: each GEMV's K a compile-time
# constant; the same bits) on at these per-rank intermediate sizes, or from this many tokens.
# Session 26, H200, GLM-5.2, hybrid layer, both GEMVs, two runs in one process
# (bench_moe_h200_s26_kconst{1,2}_i*.json), µs at 1 / 2 / 4 / 8 / 16 tokens, off / on:
# I=2048 72.1 / 137.0 / 248.4 / 468.3 / 886.1 against 69.2 / 125.9 / 232.0 / 438.7 / 827.4, and
# 68.7 / 131.5 / 241.7 / 460.0 / 868.4 against 67.4 / 123.1 / 225.4 / 427.6 / 824.2 (2-8 %
# faster everywhere); I=512 25.8 / 44.6 / 74.0 / 131.5 / 234.9 against 28.2 / 47.2 / 73.6 /
# 127.0 / 231.0, and 27.8 / 46.8 / 76.7 / 136.0 / 239.1 against 28.6 / 47.5 / 73.4 / 128.4 /
# 230.2 (slower at 1-2 tokens, 1-6 % faster from 4). I=1024 was not measured: there only
# the token bound applies. (A layer at I=512 then compiles both variants in its warm-up.)
GEMV_KCONST_FROM_INTER = 2048
GEMV_KCONST_FROM_TOKENS = 4
# Tile options clamp (the next K-block's loads unmasked: the same bits) and e2m1x2 (the kept
# tier's e2m1 words dotted two to a block: 16 fp16 products a half before fp32, not 8) go
# with kconst: they were timed only beside it, and without it clamp lengthens the kept loops
# (compile_probe, Triton 3.6) and e2m1x2 takes 4 more registers in gate/up. Session 29, H100
# (the H200 was not lent), GLM-5.2, hybrid layer on the GEMV, µs at 1 / 2 / 4 / 8 / 16 tokens
# (bench_moe_h100_s29_{clamp,clamp2,kc13,kc2}_i*.json, sweeps_h100_s29.txt; four passes of the
# built-in tiles):
# I=512 built-in 24.5-24.9 / 46.0-46.6 / 75.8-76.5 / 131.8-132.6 / 236.1-237.3; kconst + clamp
# 24.4-27.6 / 47.5-49.9 / 75.4-76.2 / 126.9-130.0 / 223.8-228.0; with e2m1x2 as well 24.6-25.8
# / 47.4-48.9 / 72.6-74.4 / 123.7-125.6 / 216.9-218.9 (3-8 % faster from 4 tokens, 2-5 %
# slower at 2, where kconst is off); I=2048 (one pass, the built-in down tiles) 75.8 / 134.9 /
# 241.2 / 453.8 / 865.4 against 76.9 / 132.0 / 232.4 / 431.2 / 813.5 with both (1.5 % slower at
# one token, within the spread of I=512's passes there). Session 28 on
# the H200 (bench_moe_h200_s27_e2m1x2_i*.json): the sweep's fastest GEMV had all three, 2-11 %
# faster than the built-in tiles at I=512 and 1-12 % at I=2048; its error against float32 the
# same as without (accuracy_h200_s27_e2m1x2.json: 0.0027-0.0028). What e2m1x2 gives up: its
# fp16 partial sums hold 8 products a half instead of 4, so with every weight of a pair of
# words at e2m1's largest level (6 before the scale) they overflow once those 8 activations
# average above 65504 / 48 ≈ 1365 in magnitude, against ≈ 2730 with one-word blocks (the NF3
# group block, levels within ±1, at ≈ 8190).
GEMV_CLAMP_WITH_KCONST = True
GEMV_E2M1X2_WITH_KCONST = True


def gemv_tokens(inter: int, most: Optional[int] = None) -> int:
    """Up to how many tokens a layer of per-rank intermediate size ``inter`` takes the
    per-pair GEMV: ``most`` (default GEMV_TOKENS), lowered by GEMV_TOKENS_BY_INTER."""
    n = GEMV_TOKENS if most is None else most
    for at_least, tokens in GEMV_TOKENS_BY_INTER:
        if inter >= at_least:
            n = min(n, tokens)
    return n


def kernel_config(m: int, interp: bool, inter: int = 2048) -> dict:
    """Tile shapes for a batch of m tokens: the per-pair decode GEMV up to GEMV_TOKENS,
    else the grouped path's (``grouped_config``). ``inter``: the layer's (per-rank)
    intermediate size, the down GEMV's K, which sets its tiles (``down_tiles``)."""
    if m > GEMV_TOKENS:
        return grouped_config(m, interp)
    if CONFIG_OVERRIDE is not None and "gemv" in CONFIG_OVERRIDE:
        return dict(CONFIG_OVERRIDE["gemv"])
    if interp:
        # K steps of 128: whole tiles of a tiled NF3 tier
        return dict(BN13=16, BK13=128, BN2=32, BK2=128, warps=4)
    return gemv_config(m, inter)


def gemv_variant_tokens(inter: int) -> tuple:
    """The token counts at which the built-in GEMV options change (each count starts a
    compiled variant that the warm-up must see): 1, and GEMV_KCONST_FROM_TOKENS where K is
    a constant only from there."""
    return (1,) if inter >= GEMV_KCONST_FROM_INTER else (1, GEMV_KCONST_FROM_TOKENS)


def gemv_config(m: int, inter: int) -> dict:
    """The decode GEMV's built-in tiles and options for m tokens (compiled kernels) at
    per-rank intermediate size ``inter``."""
    # one-warp programs (bench_moe_h200_s6_gemv1w.json): 32.7 / 87.4 / 286.8 µs at 1 / 4 / 16
    # tokens against 35.5 / 106.7 / 360.1 with session 5's BN13=4, BN2=16 on two warps (not
    # profiled; a one-warp program's row sums need no cross-warp reduction through shared
    # memory, and at the same registers per thread twice as many programs fit on an SM)
    kc = int(inter >= GEMV_KCONST_FROM_INTER or m >= GEMV_KCONST_FROM_TOKENS)
    return dict(BN13=2, BK13=1024, warps=1, l2pf=int(GEMV_L2_PREFETCH), kconst13=kc, kconst2=kc,
                clamp=kc & int(GEMV_CLAMP_WITH_KCONST), e2m1x2=kc & int(GEMV_E2M1X2_WITH_KCONST), **down_tiles(inter))


def down_tiles(inter: int) -> dict:
    """The down GEMV's rows and K-step per program: 4096 weights in four K-steps, K-steps
    of 128-512. H200, GLM-5.2 shape, hybrid layer at 1 / 8 / 64 tokens (session 9,
    sweep_h200_s9c.json and _s9d.json):
    - I=512 (TP 4): BN2=32, BK2=128 24.5 / 126.7 / 824.1 µs against 27.6 / 147.7 / 908.8
      with the earlier BN2=8, BK2=512 (one K-step: a program issued its loads once and
      waited); 16/256 and 64/64 in between, 16/128 (2048 weights) and 32/256 slower;
    - I=1024 (TP 2): 16/256 41.2 / 230.8 / 1631 against 8/512's 39.9 / 236.1 / 1688;
    - I=2048 (TP 1), at 1 / 4 / 64 tokens: 8/512 67.3 / 232.8 / 3266 against 16/256's 70.0 /
      234.7 / 3231 and 32/128's 71.4 / 242.1 / 3224."""
    bk = 128
    while bk < 512 and bk * 4 < inter:
        bk *= 2
    return dict(BN2=4096 // bk, BK2=bk)


# grouped-path tiles per batch class (``grouped_class``): fastest of the candidates timed
# by `nf3-hybrid bench --sweep` on the H200 (GLM-5.2 shape, I=512), NF3 tiles decoded in
# registers (ptx) in all three:
# - small: bench_moe_h200_small_ptx.json — 1058 / 1902 µs at 16 / 64 tokens against 1728 /
#   3382 looked up in memory (the fused path's GEMV: 476 / 1830, so it keeps those sizes);
# - mid: bench_moe_h200_large_sweep2.json — 32-token blocks, 2120 µs at 512 tokens against
#   2506 with 64 (5191 against 3757 at 2048); up to 1024 tokens, where an expert gets 32
#   routed pairs on average (the boundary is reasoned, not timed);
# - large: the same sweeps — ptx 3757-3889 µs at 2048 tokens against 5055-5211 looked up
#   in memory.
# Session 5 (bench_moe_h200_s5_sweep.json): activations converted to fp16 once per chunk
# (x16) in mid and large — 2035 / 2883 µs at 512 / 1024 tokens against 2107 / 3166, 3423 /
# 7047 at 2048 / 4096 against 3704 / 7580; at 1024 tokens 64-token blocks were faster
# (2569 µs), so the mid class ends at 768 (between the timed 512 and 1024). 128-token
# blocks were no faster (3717-5850 µs at 2048).
# Session 7 (sweep_h200_s7_magic2.json): NVFP4 tiles scaled in fp16 (magic=2) in mid and
# large — 1839 / 1862 / 2186 µs at 256 / 512 / 1024 tokens against 1874 / 1905 / 2192, 3000
# / 6210 at 2048 / 4096 against 3054 / 6274: 1-2 %, at every size.
# Session 8 (sweep_h200_s8_ptx4.json): NVFP4 tiles decoded by the GEMV's byte-permute PTX
# block (ptx4; the same bits as magic=2, which MXFP4 tiles keep using as magic=1) — w13
# loop 590 → 337 SASS instructions (compile_probe, Triton 3.6); 643 / 838 / 1515 µs at
# 8 / 16 / 64 tokens in the small tiles against 818 / 977 / 1684, 1724 / 1736 at 256 / 512
# against 1790 / 1820, 2901 / 5993 at 2048 / 4096 against 2964 / 6109.
# Session 9 (sweep_h200_s9.json, _s9b.json): the mid tiles with 16-token blocks ("narrow",
# from the GEMV's end to 256 tokens, ≤ 8 routed pairs per expert on average) — 1510 / 1537 /
# 1527 / 1557 µs at 112 / 128 / 160 / 256 tokens against 1612 / 1632 / 1627 / 1651 with
# 32-token blocks, 2217 against 1672 at 512; the small class's tiles 1603 / 1625 at 128 /
# 256. Re-swept then and no faster than these tiles: the mid class with BK13=128 (1 %),
# 8 warps with BN13=128, 2 or 4 stages; the large class with 128-token blocks (4 or 8
# warps), BK13=128, 4 stages, BN2=64/BK2=128, swap13.
# Session 10: ``mma`` — the NF3 tier's two GEMMs on the mma kernels (kernels/mma_tiles.py)
# where the GPU and Triton allow, ``mma_kept`` the NVFP4 tier's too (MXFP4 keeps the Triton
# tiles). H200, GLM-5.2 shape, hybrid layer (layer_mma_h200_s10b.json), I=512: 644 / 680 /
# 1109 µs at 128 / 256 / 512 tokens against 1539 / 1566 / 1681 on the Triton tiles; the
# NVFP4 tier on them too 4-19 % faster up to 512 tokens, slower from 1024 in 64-token
# blocks (1817 against 1729 with NF3 alone; its w13 spills there), so the large class
# keeps the NVFP4 Triton tiles and the mid class (32-token blocks, both tiers: 1607 µs)
# now reaches 1024 tokens.
# Session 11, the classes' bounds on the mma kernels (layer_blocks_h200_s11{,b}.json, hybrid
# layer, µs, 16- against 32-token blocks): I=512 693 / 1034 against 1056 / 1126 at 320 /
# 576 tokens, 1158 against 1138 at 640; I=1024 1767 against 2110 at 512, 2198 against 2149
# at 640; I=2048 2724 against 4113 at 384, 4306 against 4220 at 640 — the narrow class
# reaches 576 tokens. Above 1024, 64-token blocks with the NVFP4 tier on the Triton tiles
# stayed the fastest in whole K steps: 2538 / 5113 µs at 2048 / 4096 (I=512) against 2684 /
# 5392 with 32-token blocks and both tiers on the mma kernels (split steps: below).
# Session 11, ``mma_split`` 2 (kernels/mma_tiles.py: each 128-wide K step in two halves,
# fewer registers, same bits): hybrid layer 1-3 % faster up to 512 tokens, 11 % at 800-1024
# (I=512 1592 → 1422 µs at 1024; I=2048 5875 → 5249), and in 64-token blocks the NVFP4 tier
# no longer spills (layer_split_h200_s11.json). Above 1024 tokens, with both tiers on the mma
# kernels, 32-token blocks are then the fastest: I=512 2389 / 4804 µs at 2048 / 4096 against
# 2515 / 5057 built-in before, I=2048 8734 / 17600 against 9394 / 19060 — ``all_mma``: the
# tiles that replace the class's when every tier of the layer runs on the mma kernels (a
# layer with an MXFP4 tier, or without Gluon, keeps 64-token blocks for its Triton tiles).
# Session 13, ``all_wgmma``: the tiles that replace the class's when every tier of the layer
# runs on the wgmma kernels (SM 9.x: kernels/wgmma_gluon.py; ``mma_split`` does not apply
# there). H200, GLM-5.2 shape, hybrid layer, µs, mma.sync built-in against wgmma
# (sweep_h200_s13_wgmma.json, I=512): narrow (16-token blocks) 629 / 660 against 619 / 637
# at 128 / 256 tokens; mid (32-token blocks) 1057 / 1433 against 831 / 1114 at 768 / 1024;
# large 2420 / 4857 against 1596 / 3212 at 2048 / 4096 (64-token blocks, three stages; 128
# on eight warps 2409 / 4803). I=2048 (sweep_h200_s13_small_i2048.json): large 8871 / 17680
# against 5876 / 12469 (two stages; three 5992 / 12494). The decode class on wgmma (16-token
# blocks, three stages) was at most 1 % faster than on mma.sync (287 against 290 µs at 16
# tokens, 625 against 626 at 128), so it keeps mma.sync. Bounds (sweep_h200_s13_bounds.json):
# 16-token blocks against 32, I=512 739 / 835 against 758 / 762 at 416 / 480 tokens, I=2048
# 2622 / 2983 against 2655 / 2652 — on wgmma the narrow class ends at WGMMA_NARROW_TOKENS;
# 32-token blocks against 64 stay the faster to 1024 (I=512 1124 against 1114 there, I=2048
# 4074 against 4274).
# Session 14, tile option ``wg_tail`` (kernels/mma_tiles.block_slots says why): blocks 16
# slots longer, the tail multiplied only when it holds a pair. H200, hybrid layer, µs, I=512
# (sweep_h200_s14_tail.json, sweep_h200_s14_bounds_tail.json): 32-token blocks with a tail
# 896 against 1099 at 1024 tokens, 840 against 854 at 832, 829 against 822 at 768 and 807
# against 782 at 640 — on wgmma the mid class ends at WGMMA_MID_TOKENS and the "wide" class
# (32 + 16 slots) begins; 64 + 16 slots 1302 / 2589 against 1580 / 3218 at 2048 / 4096 (three
# stages with the tail 1704 / 3384), slower than 32 + 16 up to 1280 tokens (1148 against 968
# at 1152) and faster from 1536 (1172 against 1309) — the wide class ends at WIDE_TOKENS
# (32 + 32 slots 1128 at 1536: not a class of its own). I=2048: 64 + 16 4968 / 10493 against
# 5803 / 12476 at 2048 / 4096, 32 + 16 3088 against 3879 at 1024, 2805 against 2857 at 768.
# The narrow class keeps its 16-token blocks (with a tail 643 / 658 / 689 against 625 / 643 /
# 704 at 128 / 256 / 384).
_WGMMA = dict(wgmma=1, mma_kept=1)
_MID_TILES = dict(BM=32, BN13=64, BK13=64, BN2=128, BK2=64, warps=4, stages=3, magic=2, ptx=1, x16=1, ptx4=1,
                  mma=1, mma_kept=1, mma_split=2, all_wgmma=_WGMMA)
_GROUPED_TILES = {
    "small": dict(BM=16, BN13=64, BK13=128, BN2=64, BK2=128, warps=4, stages=3, ptx=1, ptx4=1, mma=1, mma_kept=1,
                  mma_split=2),
    "narrow": dict(_MID_TILES, BM=16),
    "mid": _MID_TILES,
    # a class of the wgmma bounds only (grouped_class); its tiles off wgmma are the mid class's
    "wide": dict(_MID_TILES, all_wgmma=dict(_WGMMA, wg_tail=16)),
    "large": dict(BM=64, BN13=64, BK13=64, BN2=128, BK2=64, warps=4, stages=3, magic=2, ptx=1, x16=1, ptx4=1,
                  mma=1, mma_split=2, all_mma=dict(BM=32, mma_kept=1), all_wgmma=dict(_WGMMA, BM=64, wg_tail=16)),
}
# under the interpreter (CPU tests): small tiles, float32 dots; narrow and mid alike (BM 16)
_INTERP_MID_TILES = dict(BM=16, BN13=32, BK13=128, BN2=32, BK2=128, warps=4, stages=1)
_INTERP_TILES = {
    "small": dict(BM=16, BN13=16, BK13=64, BN2=32, BK2=128, warps=4, stages=1),
    "narrow": _INTERP_MID_TILES,
    "mid": _INTERP_MID_TILES,
    "wide": _INTERP_MID_TILES,
    "large": dict(BM=16, BN13=32, BK13=128, BN2=32, BK2=128, warps=4, stages=1),
}
NARROW_TOKENS = 576
MID_TOKENS = 1024
# the bounds when every tier of the layer runs on the wgmma kernels (measured: above)
WGMMA_NARROW_TOKENS = 448
WGMMA_MID_TOKENS = 768
WIDE_TOKENS = 1408


def grouped_class(m: int, wgmma: bool = False) -> str:
    """Up to DECODE_TOKENS the tiles stream weights (memory-bound: narrow token tiles);
    above they feed tensor cores, with token blocks sized to the routed pairs an expert
    gets on average (GLM-5.2's top-8 of 256: 18 at NARROW_TOKENS, 32 at MID_TOKENS).
    ``wgmma``: every tier of the layer runs on the wgmma kernels, whose 16-token blocks
    stop paying earlier and whose blocks may have tails (the wide class): the WGMMA_*
    and WIDE_TOKENS bounds, measured (see _GROUPED_TILES)."""
    if m <= DECODE_TOKENS:
        return "small"
    if not wgmma:
        return "narrow" if m <= NARROW_TOKENS else "mid" if m <= MID_TOKENS else "large"
    return ("narrow" if m <= WGMMA_NARROW_TOKENS else "mid" if m <= WGMMA_MID_TOKENS
            else "wide" if m <= WIDE_TOKENS else "large")


def class_sizes(wgmma: bool = False) -> tuple:
    """The first token count of each grouped class on one set of bounds (grouped_class's
    ``wgmma``), for warm-up."""
    if wgmma:
        return (1, DECODE_TOKENS + 1, WGMMA_NARROW_TOKENS + 1, WGMMA_MID_TOKENS + 1, WIDE_TOKENS + 1)
    return (1, DECODE_TOKENS + 1, NARROW_TOKENS + 1, MID_TOKENS + 1)


def class_tiles(interp: bool) -> dict:
    """Each grouped class's tiles as grouped_config gives them (an override included), by
    class name, on either set of bounds: the base a sweep or a test replaces one class of,
    and what the workspace plans routing slots for."""
    return {grouped_class(m, wgmma): grouped_config(m, interp, wgmma) for wgmma in (False, True)
            for m in class_sizes(wgmma)}


def grouped_config(m: int, interp: bool, wgmma: bool = False) -> dict:
    """Tiles of the routing-sorted grouped GEMMs for a batch of m tokens. Chosen by m
    (and ``wgmma``: grouped_class) alone, so whatever sends a small batch here (a lowered
    GEMV threshold, the benchmark's sweep) gets the decode tiles; the sweep may override a
    class."""
    cls = grouped_class(m, wgmma)
    if CONFIG_OVERRIDE is not None and cls in CONFIG_OVERRIDE:
        return dict(CONFIG_OVERRIDE[cls])
    return dict((_INTERP_TILES if interp else _GROUPED_TILES)[cls])


def layer_tiles(cfg: dict, tiers) -> dict:
    """A class's tiles for these tiers: when the tiles put the tiers on the mma kernels and
    every one of them can run there, its ``all_wgmma`` entries if every tier can also take
    the wgmma variant (SM 9.x), else its ``all_mma`` entries (see _GROUPED_TILES)."""
    on_wgmma, on_mma = cfg.pop("all_wgmma", None), cfg.pop("all_mma", None)
    if cfg.get("mma") and all(t.mma for t in tiers):
        if on_wgmma and all_wgmma(tiers):
            cfg.update(on_wgmma)
        elif on_mma:
            cfg.update(on_mma)
    return cfg


def all_wgmma(tiers) -> bool:
    """Whether every one of these tiers runs on the wgmma kernels (and so takes the
    classes' ``all_wgmma`` tiles and bounds)."""
    return bool(tiers) and all(t.wgmma for t in tiers)


def _bins(n_local_max: int) -> int:
    nb = 2
    while nb < n_local_max + 1:
        nb *= 2
    return nb


class Workspace:
    """Per-device scratch shared by all hybrid layers of the process."""

    _by_device: Dict[torch.device, "Workspace"] = {}
    _lock = threading.Lock()

    def __init__(self, device):
        self.device = torch.device(device)
        self.max_tokens = 0
        self.topk = 0
        self.hidden = 0
        self.inter = 0
        self.n_local = 0
        self.max_block = 0
        self.chunk = 0
        self.tables: Dict[str, torch.Tensor] = {}
        # programmatic dependent launch (SM90 and later): the decode path's kernels then
        # overlap their launches (kernels/expert_gemv.py)
        info = device_info(self.device)
        self.pdl = info.kind == "cuda" and info.capability[0] >= 9
        # the bulk copy engine's L2 prefetch (SM90 and later), tile option l2pf
        self.l2_prefetch = self.pdl
        # grouped path, two tiers: the side stream and the events that fork and join it
        self.side = None
        if info.kind == "cuda" and CONCURRENT_TIERS:
            self.side = torch.cuda.Stream(self.device)
            self.fork, self.join = torch.cuda.Event(), torch.cuda.Event()

    @classmethod
    def get(cls, device) -> "Workspace":
        dev = torch.device(device)
        with cls._lock:
            ws = cls._by_device.get(dev)
            if ws is None:
                ws = cls._by_device[dev] = Workspace(dev)
            return ws

    def reserve(self, max_tokens: int, topk: int, hidden: int, inter: int, n_local: int,
                block_sizes=()) -> bool:
        """Grow the scratch to cover these sizes (called while processing weights); whether
        it grew. ``block_sizes``: routing slots a block (mma_tiles.block_slots) to plan
        for beyond the built-in tiles' (the benchmark's sweep candidates)."""
        # each class's blocks as layer_tiles may give them: its own, all_mma's, all_wgmma's
        builtin = [mma_tiles.block_slots(t) for c in class_tiles(interpret()).values()
                   for t in (c, *(dict(c, **c[k]) for k in ("all_mma", "all_wgmma") if k in c))]
        need = (max(self.max_tokens, max_tokens), max(self.topk, topk), max(self.hidden, hidden),
                max(self.inter, inter), max(self.n_local, n_local), max([self.max_block, *builtin, *block_sizes]))
        if need == (self.max_tokens, self.topk, self.hidden, self.inter, self.n_local, self.max_block):
            return False
        self.max_tokens, self.topk, self.hidden, self.inter, self.n_local, self.max_block = need
        self.chunk = min(self.max_tokens, CHUNK_TOKENS)
        pairs = self.chunk * self.topk
        cap = blocks = 0
        for bm in {*builtin, self.max_block}:  # slots grow with the block size, blocks shrink
            c, b = align.capacity(pairs, self.n_local, bm)
            cap, blocks = max(cap, c), max(blocks, b)
        nb = _bins(self.n_local)
        d = self.device
        self.sorted_ids = torch.empty((2, cap), dtype=torch.int32, device=d)
        self.block_expert = torch.empty((2, blocks), dtype=torch.int32, device=d)
        self.cursor = torch.empty((2, nb), dtype=torch.int32, device=d)
        self.starts = torch.empty((2, nb), dtype=torch.int32, device=d)
        self.ends = torch.empty((2, nb), dtype=torch.int32, device=d)
        # decode path (kernels/expert_gemv.py): plane-order activations, intermediate
        gemv_tokens = min(self.chunk, GEMV_TOKENS)
        self.planes = torch.empty((2, gemv_tokens, self.hidden), dtype=torch.float16, device=d)
        self.pair_inter = torch.empty((gemv_tokens * self.topk, self.inter), dtype=torch.float16, device=d)
        # both paths: one output row per routed pair (PAIR_ROWS_DTYPE), summed per token in
        # slot order in float32
        self.pair_rows = torch.empty((pairs, self.hidden), dtype=PAIR_ROWS_DTYPE, device=d)
        # held in the tiers' dot operand type (fp16; bf16 for MXFP4 through a view of the same
        # bytes), so the down GEMM reads it as it is instead of converting every element;
        # one region per tier when the tiers run concurrently
        self.inter_slots = cap
        self.regions = 2 if self.side is not None else 1
        self.inter_cache = torch.empty((self.regions * cap, self.inter), dtype=torch.float16, device=d)
        self.x16 = None  # tile option x16 only: see fp16_activations
        self.x_mma = None  # mma tiles only: see mma_activations
        self.partials = None  # tile option mma_splitk only: see splitk_partials
        self.partial_slots = 0
        return True

    def fp16_activations(self, x: torch.Tensor) -> torch.Tensor:
        """The chunk's activations converted to fp16 into scratch (tile option x16). The
        buffer is made on first use — the option is off by default; a config that turns
        it on gets it in LayerExecutor.warmup, before any CUDA graph is captured."""
        if self.x16 is None:
            self.x16 = torch.empty((self.chunk, self.hidden), dtype=torch.float16, device=self.device)
        out = self.x16[: x.shape[0]]
        out.copy_(x)
        return out

    def mma_activations(self, x: torch.Tensor, fragments: bool = False) -> torch.Tensor:
        """The chunk's activations in fp16 and the mma kernels' order
        (kernels/mma_tiles.py; ``fragments``, tile option ``mma_xreg``: fragment order),
        converted and permuted by one kernel (kernels/mma_order.py says why) into scratch
        made on first use (in LayerExecutor.warmup, before any CUDA graph is captured,
        like ``x16``)."""
        if self.x_mma is None:
            self.x_mma = torch.empty((self.chunk, self.hidden), dtype=torch.float16, device=self.device)
        out = self.x_mma[: x.shape[0], : x.shape[1]]
        mma_order.launch(x, out, fragments=fragments)
        return out

    def splitk_partials(self, parts: int, region: int, slots: int) -> torch.Tensor:
        """fp32 [slots, parts·2I] for the gate/up kernel's partial sums under tile option
        ``mma_splitk`` (kernels/mma_tiles.py), one region per concurrent tier, made on first
        use (in LayerExecutor.warmup, before any CUDA graph is captured, like ``x_mma``)
        for batches of at most DECODE_TOKENS tokens: the decode batches it is for, which
        keeps it small (GLM-5.2, I=512, two parts: ~40 MB). A larger batch with the option
        is a clear error."""
        if self.partials is None or self.partials.shape[1] < parts * 2 * self.inter:
            pairs = min(self.chunk, DECODE_TOKENS) * self.topk
            self.partial_slots = align.capacity(pairs, self.n_local, self.max_block)[0]
            self.partials = torch.empty((self.regions * self.partial_slots, parts * 2 * self.inter), dtype=torch.float32,
                                        device=self.device)
        if slots > self.partial_slots:
            raise CapacityError(f"nf3-hybrid: tile option mma_splitk serves batches of at most {DECODE_TOKENS} "
                                f"tokens; this one needs {slots} routing slots (planned: {self.partial_slots})")
        r0 = region * self.partial_slots
        return self.partials[r0: r0 + slots]

    def table(self, name: str, values, dtype=torch.float16) -> torch.Tensor:
        """Decode tables are 16-bit (see kernels/expert_mlp.py for why)."""
        key = f"{name}:{dtype}"
        t = self.tables.get(key)
        if t is None:
            t = self.tables[key] = torch.tensor(values, dtype=torch.float32).to(dtype).to(self.device)
        return t

    def nbytes(self) -> int:
        return sum(t.numel() * t.element_size() for t in
                   (self.sorted_ids, self.block_expert, self.cursor, self.starts, self.ends, self.inter_cache,
                    self.pair_rows, self.planes, self.pair_inter, self.x16, self.x_mma, self.partials)
                   if t is not None)


def _e4m3_table():
    return torch.arange(256, dtype=torch.int32).to(torch.uint8).view(torch.float8_e4m3fn).float().nan_to_num(0.0).tolist()


def _e8m0_table():
    return [2.0 ** (i - 127) if i < 255 else 0.0 for i in range(256)]


def _to_kernel_layout(tier: TierWeights, layout: str) -> None:
    """The kernels read NF3 codes in nibble layout (formats/nf3_nibble.py: fewer integer
    instructions per code, measured faster on the H200), by default also tiled with the
    scales (formats/nf3_tiled.py: contiguous weight loads for the mma kernels) where the
    shapes are whole tiles. Rewritten in place — same bytes, no second copy of the tier —
    once; ``tier.code_layout`` tells every other reader, and a tier already rewritten keeps
    its layout."""
    if tier.code_layout in ("nibble", "tiled") or tier.num_experts == 0:
        return
    if tier.code_layout != "packed":
        raise ValueError(f"NF3 tier: unknown code layout {tier.code_layout!r} "
                         f"(known: {nf3_nibble.LAYOUTS + ('tiled',)})")
    if layout not in NF3_LAYOUTS:
        raise ValueError(f"NF3 tier: unknown kernel layout {layout!r} (known: {NF3_LAYOUTS})")
    tiled = layout == "tiled" and nf3_tiled.fits(2 * tier.inter, tier.hidden) and nf3_tiled.fits(tier.hidden, tier.inter)
    if layout == "tiled" and not tiled:
        _log_fallback_once(f"NF3 tiers of hidden {tier.hidden}, intermediate {tier.inter} stay in nibble layout: "
                           f"tiles need both in multiples of {nf3_tiled.WINDOW}")
    for t, sc in ((tier.w13, tier.w13_scale), (tier.w2, tier.w2_scale)):
        if getattr(t, "nf3_code_layout", "packed") == "packed":
            nf3_nibble.repack_inplace(t)
            if tiled:
                nf3_tiled.tile_inplace(t, sc)
            t.nf3_code_layout = "tiled" if tiled else "nibble"  # for any later TierWeights over this tensor
    tier.code_layout = tier.w13.nf3_code_layout


_MMA_FALLBACK_LOGGED = set()


def _mma_usable(tier: TierWeights) -> bool:
    """Whether a tier's grouped GEMMs can run on the mma kernels (kernels/mma_tiles.py): NF3
    or NVFP4, a CUDA GPU of compute capability 8.9 or later (the e4m3 scale conversion),
    not under TRITON_INTERPRET, K of both GEMMs in whole 128-wide windows, and a Triton
    with Gluon. Only the last one missing is a fallback: logged once per reason."""
    if tier.fmt not in (NF3, NVFP4) or tier.num_experts == 0 or interpret():
        return False
    info = device_info(tier.device)
    if info.kind != "cuda" or tuple(info.capability) < (8, 9):
        return False
    if not mma_tiles.shape_fits(tier.hidden, tier.inter):
        return False
    missing = mma_tiles.gluon_missing()
    if missing:
        _log_fallback_once(f"grouped GEMMs on the Triton tiles, not the mma kernels: this Triton has no Gluon "
                           f"({missing})")
        return False
    return True


def _wgmma_usable(tier: TierWeights) -> bool:
    """Whether a tier the mma kernels take (``_mma_usable``) can also take their wgmma
    variant (tile option ``wgmma``, kernels/wgmma_gluon.py): warpgroup MMA exists on SM 9.x
    only (sm_90a; not on Blackwell or the SM120 workstation parts), and this Triton must
    build it."""
    if device_info(tier.device).capability[0] != 9:
        return False
    missing = mma_tiles.wgmma_missing()
    if missing:
        _log_fallback_once(f"the wgmma kernels cannot be built ({missing})")
        return False
    return True


def _log_fallback_once(why: str):
    if why not in _MMA_FALLBACK_LOGGED:
        _MMA_FALLBACK_LOGGED.add(why)
        logger.warning("nf3-hybrid: %s", why)


class TritonTier(TierBackend):
    """One tier through the Triton expert-MLP kernels (NF3, NVFP4 or MXFP4)."""

    name = "triton"
    graph_safe = True

    def __init__(self, tier: TierWeights, workspace: Optional[Workspace] = None, nf3_layout: Optional[str] = None):
        """``nf3_layout``: "tiled" or "nibble" for an NF3 tier still in the checkpoint's
        packing (default: HYBRID_NF3_LAYOUT)."""
        super().__init__(tier)
        self.ws = workspace or Workspace.get(tier.device)
        self.fmt = _FMT[tier.fmt]
        if tier.fmt == NF3:
            levels = list(nf3.validate_codebook(tier.codebook))
            self.values = self.ws.table(f"nf3:{tier.codebook}", levels)
            self.table_words = ptx_decode.nf3_table_words(levels)  # the in-register decode's table
            _to_kernel_layout(tier, nf3_layout or current_flags().nf3_layout)
        else:
            self.values = self.ws.table("e2m1", e2m1.decode_table().tolist())
            self.table_words = None  # e2m1's table is a constant of ptx_decode
        # e4m3 scales are exact in fp16; e8m0's powers of two need bf16's range (exact too).
        # NF3 levels are rounded to fp16 (≤ 2**-11 relative), as the dot operands are anyway.
        if tier.fmt == MXFP4:
            self.scales = self.ws.table("e8m0", _e8m0_table(), torch.bfloat16)
        else:
            self.scales = self.ws.table("e4m3", _e4m3_table())
        # scale bits are read as bytes (e4m3 and e8m0 alike)
        self.w13_scale = tier.w13_scale.view(torch.uint8)
        self.w2_scale = tier.w2_scale.view(torch.uint8)
        self.own_maps = stacked_maps([self]) if tier.num_experts else None
        self.tiled = tier.code_layout == "tiled"
        self.mma = _mma_usable(tier)
        self.wgmma = self.mma and _wgmma_usable(tier)
        self.mma_words = mma_tiles.table_words(self.fmt, self.table_words) if self.mma else None

    def gemms(self, x, tw, sorted_ids, block_expert, out, num_pairs, topk, on_input, cfg, pair_rows, x16=None,
              region=0, x_mma=None):
        """``x16``: the activations already in fp16 (tile option ``x16``), read instead of
        ``x`` by the tiers whose dot operands are fp16 (all but MXFP4). ``region``: which
        tier's part of the intermediate cache (tiers running concurrently). ``x_mma``: the
        fp16 activations in the mma kernels' order (tile option ``mma``; in
        fragment order under ``mma_xreg``), for a tier that runs on them (``self.mma``)."""
        t = self.tier
        if t.num_experts == 0:
            return
        if x16 is not None and self.fmt != expert_mlp.FMT_MXFP4:
            x = x16
        dot32 = interpret()
        r0 = region * self.ws.inter_slots
        inter = self.ws.inter_cache[r0: r0 + sorted_ids.numel(), : t.inter].view(expert_mlp.inter_dtype(self.fmt))
        words = self.table_words
        if x_mma is not None and self.uses_mma(cfg):
            if cfg.get("wgmma") and not self.wgmma:
                _log_fallback_once(f"tile option wgmma needs an SM 9.x GPU (this tier's: "
                                   f"{device_info(t.device).capability}); its blocks of {cfg['BM']} tokens "
                                   "run on the mma.sync kernels")
                # the wgmma kernels' register cap does not carry over to the mma.sync ones
                cfg = {k: v for k, v in cfg.items() if k not in ("wgmma", "wg_maxnreg")}
            parts = mma_tiles.splitk(cfg)
            partials = self.ws.splitk_partials(parts, region, sorted_ids.numel()) if parts > 1 else None
            mma_tiles.launch_w13(x_mma, t.w13, self.w13_scale, t.w13_scale_2, sorted_ids, block_expert, tw, inter,
                                 num_pairs, topk, t.inter, self.fmt, on_input, cfg, self.mma_words, tiled=self.tiled,
                                 partials=partials)
            mma_tiles.launch_w2(inter, t.w2, self.w2_scale, t.w2_scale_2, sorted_ids, block_expert, tw, out,
                                num_pairs, topk, t.inter, self.fmt, on_input, cfg, self.mma_words, pair_rows,
                                tiled=self.tiled)
            return
        expert_mlp.launch_w13(x, t.w13, self.w13_scale, t.w13_scale_2, sorted_ids, block_expert, tw, inter,
                              self.values, num_pairs, topk, t.inter, self.fmt, on_input, cfg, dot32, words,
                              tiled=self.tiled)
        expert_mlp.launch_w2(inter, t.w2, self.w2_scale, t.w2_scale_2, sorted_ids, block_expert, tw, out,
                             self.values, num_pairs, topk, t.inter, self.fmt, on_input, cfg, dot32, words, pair_rows,
                             tiled=self.tiled)

    def uses_mma(self, cfg: dict) -> bool:
        """Whether these tiles put this tier on the mma (or wgmma) kernels, which read the
        activations in their own order (``Workspace.mma_activations``); else it takes the
        Triton tiles (expert_mlp.py), which read them as they are or as ``x16``."""
        return bool(self.mma and cfg.get("mma") and (self.fmt == expert_mlp.FMT_NF3 or cfg.get("mma_kept")))

    def run_into(self, out, x, topk_weights, topk_ids, weights_on_input=False):
        if self.tier.num_experts == 0:
            return
        maps = self.own_maps
        m = topk_ids.shape[0]
        check_capacity(self.ws, m)
        for c0 in range(0, m, self.ws.chunk):
            c1 = min(m, c0 + self.ws.chunk)
            run_chunk([self], maps, x[c0:c1], topk_weights[c0:c1], topk_ids[c0:c1], weights_on_input,
                      add_into=out[c0:c1])


def check_capacity(ws: Workspace, m: int):
    if m > ws.max_tokens:
        raise CapacityError(
            f"nf3-hybrid: a batch of {m} tokens exceeds the planned capacity of {ws.max_tokens} "
            "(vLLM's max_num_batched_tokens, or HYBRID_MAX_TOKENS)"
        )


def stacked_maps(tiers):
    """(local maps int32 [T, E], expert counts int32 [T]) for one routing launch."""
    maps = torch.stack([t.tier.local_map for t in tiers]).to(torch.int32).contiguous()
    n_local = torch.tensor([t.tier.num_experts for t in tiers], dtype=torch.int32, device=maps.device)
    return maps, n_local


def _flat_routing(topk_weights, topk_ids):
    """[M·k] contiguous expert ids and fp32 routing weights, pair p = token·k + slot
    (views when vLLM already hands them over that way, as it does)."""
    ids = topk_ids.reshape(-1)
    tw = topk_weights.reshape(-1)
    if tw.dtype != torch.float32 or not tw.is_contiguous():
        tw = tw.float().contiguous()
    if not ids.is_contiguous():
        ids = ids.contiguous()
    return ids, tw


def run_decode(kept, nf3_tier, result, x, topk_weights, topk_ids, weights_on_input):
    """At most GEMV_TOKENS tokens, both tiers in one launch per stage, straight into the
    bf16 ``result`` (no routing sort, no zero-fill)."""
    ws = (kept or nf3_tier).ws
    m, topk = topk_ids.shape
    if m > ws.planes.shape[1]:
        # only a threshold raised after the workspace was planned gets here (the GEMV would
        # write past its scratch)
        raise CapacityError(f"nf3-hybrid: the decode path got {m} tokens; its scratch was planned for "
                            f"{ws.planes.shape[1]} (GEMV_TOKENS when the workspace was sized)")
    ids, tw = _flat_routing(topk_weights, topk_ids)
    pairs = ids.numel()
    inter = (kept or nf3_tier).tier.inter
    expert_gemv.launch_decode(kept, nf3_tier, x, tw, ids, topk, ws.planes, ws.pair_inter[:pairs, :inter],
                              ws.pair_rows[:pairs], result, weights_on_input, kernel_config(m, interpret(), inter),
                              asm=not interpret(), pdl=ws.pdl, l2_prefetch=ws.l2_prefetch)


def tiers_concurrently(cls: str, inter: int, wgmma: bool) -> bool:
    """Whether a grouped pass of batch class ``cls`` runs its two tiers on two streams
    (CONCURRENT_TIERS permitting): not the large class on the wgmma kernels from
    SERIAL_TIERS_FROM_INTER (measured above)."""
    serial = (SERIAL_TIERS_FROM_INTER is not None and wgmma and cls == "large"
              and inter >= SERIAL_TIERS_FROM_INTER)
    return not serial


def run_chunk(tiers, maps, x, topk_weights, topk_ids, weights_on_input, *, result=None, add_into=None,
              marks=None):
    """At most ``chunk`` tokens: route once for all given Triton tiers (one launch), then
    each tier's two GEMMs. Exactly one destination: ``result`` [tokens, hidden] gets each
    token's pair rows summed in slot order (reproducible: kernels/pair_sum.py);
    ``add_into`` (fp32) has the tiers' rows added atomically (shared with another backend)."""
    if (result is None) == (add_into is None):
        raise ValueError("run_chunk: give exactly one of result / add_into")
    ws = tiers[0].ws
    m, topk = topk_ids.shape
    ids, tw = _flat_routing(topk_weights, topk_ids)
    wgmma = all_wgmma(tiers)
    cls = grouped_class(m, wgmma)
    cfg = layer_tiles(grouped_config(m, interpret(), wgmma), tiers)
    if mma_tiles.wgmma_tail(cfg) and not wgmma:
        # the routing below would lay the blocks out with their tails, which only the wgmma
        # kernels read: the mma.sync kernels and the Triton tiles would leave those pairs out
        raise ValueError("tile option wg_tail needs every tier on the wgmma kernels; this layer's cannot all run "
                         f"them (GPU capability {device_info(tiers[0].tier.device).capability}); drop wg_tail")
    pairs = ids.numel()
    slots = mma_tiles.block_slots(cfg)
    cap, blocks = align.capacity(pairs, ws.n_local, slots)
    if cap > ws.sorted_ids.shape[1] or blocks > ws.block_expert.shape[1]:
        # only a tile override with blocks larger than the workspace planned for gets here
        raise CapacityError(f"nf3-hybrid: {pairs} routed pairs in blocks of {slots} slots need {cap} slots; "
                            f"the workspace holds {ws.sorted_ids.shape[1]}")
    t_n = len(tiers)
    sorted_ids = ws.sorted_ids[:t_n, :cap]
    block_expert = ws.block_expert[:t_n, :blocks]
    dest = ws.pair_rows[:pairs] if result is not None else add_into
    # converted once per chunk instead of in every (expert block, row tile) program's K
    # loop: for the Triton tiles in fp16 (tile option x16; MXFP4's read bf16), for the mma
    # kernels in fp16 and their order, once for both tiers (before the side stream forks)
    on_mma = [t.uses_mma(cfg) for t in tiers]
    x16 = None
    if cfg.get("x16") and any(not mma and t.fmt != expert_mlp.FMT_MXFP4 for t, mma in zip(tiers, on_mma)):
        x16 = ws.fp16_activations(x)
    x_mma = ws.mma_activations(x, fragments=mma_tiles.xreg(cfg)) if any(on_mma) else None
    if marks is not None:
        marks[0].record()
    align.launch(ids, maps[0], maps[1], sorted_ids, block_expert, ws.cursor[:t_n], ws.starts[:t_n],
                 ws.ends[:t_n], slots)
    if marks is not None:
        marks[1].record()
    if (len(tiers) == 2 and ws.side is not None and marks is None
            and tiers_concurrently(cls, tiers[0].tier.inter, bool(cfg.get("wgmma")))):
        # tier 0 on the side stream, tier 1 here; both only write their own pairs' rows
        main = torch.cuda.current_stream(ws.device)
        ws.fork.record(main)
        ws.side.wait_event(ws.fork)
        with torch.cuda.stream(ws.side):
            tiers[0].gemms(x, tw, sorted_ids[0], block_expert[0], dest, pairs, topk, weights_on_input, cfg,
                           pair_rows=result is not None, x16=x16, region=0, x_mma=x_mma)
            ws.join.record(ws.side)
        tiers[1].gemms(x, tw, sorted_ids[1], block_expert[1], dest, pairs, topk, weights_on_input, cfg,
                       pair_rows=result is not None, x16=x16, region=1, x_mma=x_mma)
        main.wait_event(ws.join)
    else:
        for i, tier in enumerate(tiers):
            tier.gemms(x, tw, sorted_ids[i], block_expert[i], dest, pairs, topk, weights_on_input, cfg,
                       pair_rows=result is not None, x16=x16, x_mma=x_mma)
            if marks is not None and tier.tier.fmt != NF3:
                marks[2].record()
    if marks is not None:
        if all(t.tier.fmt == NF3 for t in tiers):
            marks[2].record()
        marks[3].record()
    if result is not None:
        pair_sum.launch(dest, result, topk, ids, maps[0])


# names the backend selection looks up
NF3TritonBackend = TritonTier
FP4TritonBackend = TritonTier
