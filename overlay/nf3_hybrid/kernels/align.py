"""Routing → expert blocks, one launch for every tier of a layer, graph-safe.

For each tier t: routed (token, k) pairs whose expert belongs to t are placed, grouped
by local expert, into blocks of BLOCK_M slots (padding slots hold the sentinel P =
M·top_k); ``block_expert[t, b]`` is the local expert of block b, −1 for blocks past the
end. Pairs of other tiers (local map −1) get no slot, so no weights are read for them.

All sizes are fixed by the caller's capacity, nothing is synchronised with the host,
so it can be captured in a CUDA graph. Order inside an expert's blocks follows atomic
increments; results do not depend on it (every slot's row is computed independently).
"""
import triton
import triton.language as tl


@triton.jit(do_not_specialize=["P", "cap", "max_blocks"])
def _align_kernel(
    ids_ptr, P, local_map_ptr, map_stride, n_local_ptr,
    sorted_ptr, sorted_stride, bexp_ptr, bexp_stride, cursor_ptr, starts_ptr, ends_ptr, scratch_stride,
    cap, max_blocks,
    NB: tl.constexpr, LOG2_NB: tl.constexpr, BLOCK_M: tl.constexpr, CHUNK: tl.constexpr,
):
    t = tl.program_id(0)
    n_local = tl.load(n_local_ptr + t)
    srt = sorted_ptr + t * sorted_stride
    bexp = bexp_ptr + t * bexp_stride
    cur = cursor_ptr + t * scratch_stride
    stp = starts_ptr + t * scratch_stride
    endp = ends_ptr + t * scratch_stride
    bins = tl.arange(0, NB)
    # phase 0: sentinel everywhere, cursors at zero
    for start in range(0, cap, CHUNK):
        offs = start + tl.arange(0, CHUNK)
        tl.store(srt + offs, tl.zeros([CHUNK], dtype=tl.int32) + P, mask=offs < cap)
    tl.store(cur + bins, tl.zeros([NB], dtype=tl.int32))
    # phase 1: pairs per local expert (bin NB-1 collects other tiers and masked lanes)
    counts = tl.zeros([NB], dtype=tl.int32)
    for start in range(0, P, CHUNK):
        offs = start + tl.arange(0, CHUNK)
        m = offs < P
        g = tl.load(ids_ptr + offs, mask=m, other=0).to(tl.int32)
        loc = tl.load(local_map_ptr + t * map_stride + g, mask=m, other=-1)
        loc = tl.where(loc < 0, NB - 1, loc)
        counts += tl.histogram(loc, NB)
    counts = tl.where(bins < n_local, counts, 0)
    padded = (counts + BLOCK_M - 1) // BLOCK_M * BLOCK_M
    ends = tl.cumsum(padded, 0)
    tl.store(stp + bins, ends - padded)
    tl.store(endp + bins, ends)
    tl.debug_barrier()
    # block → expert: binary search for the first expert whose slots end after the
    # block's first slot (ends is non-decreasing; unused bins end at the total)
    for start in range(0, max_blocks, CHUNK):
        blk = start + tl.arange(0, CHUNK)
        target = blk * BLOCK_M
        lo = tl.zeros([CHUNK], dtype=tl.int32)
        for i in tl.static_range(LOG2_NB):
            cand = lo + (NB >> (i + 1))
            lo = tl.where(tl.load(endp + cand - 1) <= target, cand, lo)
        owner = tl.where(tl.load(endp + lo) <= target, lo + 1, lo)
        owner = tl.where(owner < n_local, owner, -1)
        tl.store(bexp + blk, owner, mask=blk < max_blocks)
    tl.debug_barrier()
    # phase 2: each pair takes the next slot of its expert
    for start in range(0, P, CHUNK):
        offs = start + tl.arange(0, CHUNK)
        m = offs < P
        g = tl.load(ids_ptr + offs, mask=m, other=0).to(tl.int32)
        loc = tl.load(local_map_ptr + t * map_stride + g, mask=m, other=-1)
        ok = m & (loc >= 0)
        safe = tl.where(ok, loc, 0)
        rank = tl.atomic_add(cur + safe, 1, mask=ok)
        base = tl.load(stp + safe, mask=ok, other=0)
        tl.store(srt + base + rank, offs, mask=ok)


def capacity(num_pairs: int, n_local_max: int, block_m: int):
    """(slots, blocks) one tier needs for ``num_pairs`` routed pairs: each expert wastes
    less than one block of padding."""
    blocks = triton.cdiv(num_pairs, block_m) + n_local_max
    return blocks * block_m, blocks


def launch(ids, local_maps, n_local, sorted_ids, block_expert, cursor, starts, ends, block_m: int,
           chunk: int = 4096, warps: int = 16):
    """ids: [P] routed expert ids; local_maps: int32 [T, E]; n_local: int32 [T];
    sorted_ids: int32 [T, cap]; block_expert: int32 [T, max_blocks]; cursor/starts:
    int32 [T, NB] (ends too). ``chunk``: pairs per step of the one program per tier; each
    step waits on its global atomics, so few wide steps: 4096 pairs on 16 warps took 72 µs
    for 2048 tokens (16384 pairs) where 256 on 4 warps took 178, 25 against 49 µs for 512
    tokens (H200, bench/align_probe.py → bench/results/align_probe_h200.json)."""
    T = local_maps.shape[0]
    P = ids.numel()
    nb = cursor.shape[1]
    _align_kernel[(T,)](
        ids, P, local_maps, local_maps.stride(0), n_local,
        sorted_ids, sorted_ids.stride(0), block_expert, block_expert.stride(0), cursor, starts, ends, cursor.stride(0),
        sorted_ids.shape[1], block_expert.shape[1],
        NB=nb, LOG2_NB=nb.bit_length() - 1, BLOCK_M=block_m, CHUNK=chunk, num_warps=warps,
    )
