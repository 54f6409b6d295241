"""Routing → expert blocks for every tier of a layer at once (three launches), graph-safe.

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


@triton.jit
def _tier_pairs(ids_ptr, P, local_map_ptr, map_stride, CHUNK: tl.constexpr):
    """(pair indices, their local expert in tier program_id(0) or −1, in range) of this
    program's CHUNK pairs."""
    t = tl.program_id(0)
    offs = tl.program_id(1) * CHUNK + tl.arange(0, CHUNK)
    m = offs < P
    g = tl.load(ids_ptr + offs, mask=m, other=0).to(tl.int32)
    loc = tl.load(local_map_ptr + t * map_stride + g, mask=m, other=-1)
    return offs, loc, m


@triton.jit(do_not_specialize=["P"])
def _count_kernel(ids_ptr, P, local_map_ptr, map_stride, counts_ptr, scratch_stride,
                  NB: tl.constexpr, CHUNK: tl.constexpr):
    """Pairs per local expert, added into the zeroed counts (bin NB − 1 collects the pairs
    of other tiers and masked lanes): one histogram and NB atomics a program."""
    _, loc, m = _tier_pairs(ids_ptr, P, local_map_ptr, map_stride, CHUNK)
    loc = tl.where(m & (loc >= 0), loc, NB - 1)
    bins = tl.arange(0, NB)
    tl.atomic_add(counts_ptr + tl.program_id(0) * scratch_stride + bins, tl.histogram(loc, NB), sem="relaxed")


@triton.jit(do_not_specialize=["P", "cap", "max_blocks"])
def _layout_kernel(P, n_local_ptr, counts_ptr, starts_ptr, scratch_stride, sorted_ptr, sorted_stride,
                   bexp_ptr, bexp_stride, cap, max_blocks,
                   NB: tl.constexpr, BLOCK_M: tl.constexpr, BLOCKS: tl.constexpr, SLOTS: tl.constexpr):
    """Each expert's run of whole blocks from the counts (every program works them out;
    the first stores each expert's first slot), then this program's BLOCKS blocks: their
    expert (−1 past the end) and their slots set to the sentinel P, which the scatter
    overwrites with pairs."""
    t = tl.program_id(0)
    b0 = tl.program_id(1) * BLOCKS
    bins = tl.arange(0, NB)
    n_local = tl.load(n_local_ptr + t)
    counts = tl.load(counts_ptr + t * scratch_stride + bins)
    counts = tl.where(bins < n_local, counts, 0)
    padded = (counts + BLOCK_M - 1) // BLOCK_M * BLOCK_M
    ends = tl.cumsum(padded, 0)
    if tl.program_id(1) == 0:
        tl.store(starts_ptr + t * scratch_stride + bins, ends - padded)
    blk = b0 + tl.arange(0, BLOCKS)
    # a block's expert: how many experts' runs end at or before its first slot
    owner = tl.sum((ends[None, :] <= (blk * BLOCK_M)[:, None]).to(tl.int32), axis=1)
    owner = tl.where(owner < n_local, owner, -1)
    tl.store(bexp_ptr + t * bexp_stride + blk, owner, mask=blk < max_blocks)
    slot = b0 * BLOCK_M + tl.arange(0, SLOTS)
    inside = (slot < (b0 + BLOCKS) * BLOCK_M) & (slot < cap)
    tl.store(sorted_ptr + t * sorted_stride + slot, tl.zeros([SLOTS], dtype=tl.int32) + P, mask=inside)


@triton.jit(do_not_specialize=["P"])
def _scatter_kernel(ids_ptr, P, local_map_ptr, map_stride, cursor_ptr, starts_ptr, scratch_stride,
                    sorted_ptr, sorted_stride, CHUNK: tl.constexpr):
    """Each pair of the tier into the next free slot of its expert's run."""
    offs, loc, m = _tier_pairs(ids_ptr, P, local_map_ptr, map_stride, CHUNK)
    t = tl.program_id(0)
    ok = m & (loc >= 0)
    safe = tl.where(ok, loc, 0)
    rank = tl.atomic_add(cursor_ptr + t * scratch_stride + safe, 1, mask=ok, sem="relaxed")
    base = tl.load(starts_ptr + t * scratch_stride + safe, mask=ok, other=0)
    tl.store(sorted_ptr + t * sorted_stride + base + rank, offs, mask=ok)


def capacity(num_pairs: int, n_local_max: int, block_m: int):
    """(slots, blocks) one tier needs for ``num_pairs`` routed pairs: each expert wastes
    less than one block of padding."""
    blocks = triton.cdiv(num_pairs, block_m) + n_local_max
    return blocks * block_m, blocks


def launch(ids, local_maps, n_local, sorted_ids, block_expert, cursor, starts, ends, block_m: int,
           chunk: int = 1024, warps: int = 4):
    """ids: [P] routed expert ids; local_maps: int32 [T, E]; n_local: int32 [T];
    sorted_ids: int32 [T, cap]; block_expert: int32 [T, max_blocks]; cursor / starts /
    ends: int32 [T, NB] scratch (``ends`` holds the counts). ``chunk``: pairs a program
    of the count and scatter launches.

    Three launches over many programs (after zeroing the counts and cursors): count,
    lay out the blocks, scatter. Until session 17 it was one program per tier stepping
    through the pairs, each step waiting on its global atomics: 69 µs of the hybrid
    layer's ~1.3 ms at 2048 tokens (GLM-5.2, H200, torch.profiler:
    bench/results/kernel_breakdown_h200_s17.json; 25 µs at 512)."""
    T = local_maps.shape[0]
    P = ids.numel()
    nb = cursor.shape[1]
    cap, max_blocks = sorted_ids.shape[1], block_expert.shape[1]
    counts = ends
    counts.zero_()
    cursor.zero_()
    pair_grid = (T, max(1, triton.cdiv(P, chunk)))
    _count_kernel[pair_grid](ids, P, local_maps, local_maps.stride(0), counts, counts.stride(0),
                             NB=nb, CHUNK=chunk, num_warps=warps)
    blocks = 64  # a layout program's blocks; its programs cover every block and every slot
    _layout_kernel[(T, triton.cdiv(max(max_blocks, triton.cdiv(cap, block_m)), blocks))](
        P, n_local, counts, starts, starts.stride(0), sorted_ids, sorted_ids.stride(0), block_expert,
        block_expert.stride(0), cap, max_blocks, NB=nb, BLOCK_M=block_m, BLOCKS=blocks,
        SLOTS=triton.next_power_of_2(blocks * block_m), num_warps=warps)
    _scatter_kernel[pair_grid](ids, P, local_maps, local_maps.stride(0), cursor, starts, starts.stride(0),
                               sorted_ids, sorted_ids.stride(0), CHUNK=chunk, num_warps=warps)
