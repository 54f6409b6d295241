"""The routed output of each token: its top-k pair rows summed in slot order.

Both paths write one row per routed (token, slot) pair — bf16 as vLLM's fused MoE keeps
them, or fp32 under the benchmark's ``--pair-rows fp32`` (triton_tiers.PAIR_ROWS_DTYPE) —
and this kernel adds a token's k rows in fp32, slot 0 first, rounding once to the
activation dtype. A fixed order makes the layer's output bit-for-bit reproducible: fp32 atomics into shared token
rows (what the grouped path did before) sum in whatever order the CTAs finish, so two
runs of one batch differed in the last bits — enough, on a tiny random model, to move
teacher-forced log-probs at near-tied positions and hide real differences between
serving modes. A pair routed to no tier of this rank (expert parallel, or an expert
map with -1) is never written by the grouped path; with ``MASKED`` its row is skipped
by looking its expert up in the tiers' local maps (``N_MAPS`` > 0).
"""
import triton
import triton.language as tl


@triton.jit
def _pair_sum_kernel(y_ptr, stride_y, out_ptr, stride_o, N, ids_ptr, maps_ptr, stride_map, TOPK: tl.constexpr,
                     N_MAPS: tl.constexpr, BR: tl.constexpr, PDL: tl.constexpr):
    """Top-k unrolled (TOPK a constant of the model): the k rows' loads, and the id and map
    lookups that mask them, do not wait for one another. With a loop over a runtime top-k
    each step's loads waited for the step before — at one token of GLM-5.2 that was the
    kernel's time (ncu, bench/results/ncu_h200_s17_gemv_m1_m16.txt.gz: 5.3 µs, 14 cycles of
    long-scoreboard stall an instruction); the sum's order, k ascending, is unchanged."""
    if PDL:
        tl.extra.cuda.gdc_wait()  # launched behind the kernel writing the pair rows
    t = tl.program_id(0)
    j = tl.program_id(1)
    cols = j * BR + tl.arange(0, BR)
    m = cols < N
    acc = tl.zeros([BR], dtype=tl.float32)
    for k in tl.static_range(TOPK):
        p = (t * TOPK + k).to(tl.int64)
        keep = m
        if N_MAPS > 0:
            g = tl.load(ids_ptr + p)
            routed = tl.load(maps_ptr + g) >= 0
            for i in tl.static_range(1, N_MAPS):
                routed = routed | (tl.load(maps_ptr + i * stride_map + g) >= 0)
            keep = keep & routed
        acc += tl.load(y_ptr + p * stride_y + cols, mask=keep, other=0.0)
    tl.store(out_ptr + t.to(tl.int64) * stride_o + cols, acc.to(out_ptr.dtype.element_ty), mask=m)


def launch(pair_rows, out, topk, ids=None, maps=None, pdl=False):
    """out[t] = Σ_k pair_rows[t·topk + k] (k ascending) for every token row of ``out``.
    With ``ids`` (flat expert ids) and ``maps`` (int32 [tiers, experts] local maps) rows
    of pairs no tier holds are skipped, so they need not be written. ``pdl``: launched by
    programmatic dependent launch behind the kernel that writes ``pair_rows``."""
    tokens, n = out.shape
    br = min(1024, triton.next_power_of_2(n))
    masked = maps is not None
    _pair_sum_kernel[(tokens, triton.cdiv(n, br))](
        pair_rows, pair_rows.stride(0), out, out.stride(0), n,
        ids if masked else pair_rows, maps if masked else pair_rows, maps.stride(0) if masked else 0,
        TOPK=topk, N_MAPS=maps.shape[0] if masked else 0, BR=br, PDL=pdl, launch_pdl=pdl)
