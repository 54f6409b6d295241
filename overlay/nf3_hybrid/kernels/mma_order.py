"""The grouped path's activations for the mma and wgmma kernels: a chunk's input (bf16, or
fp16 / fp32) converted to fp16 and permuted into those kernels' activation order
(mma_tiles.activation_order), or for tile option ``mma_xreg`` into fragment order
(mma_tiles.fragment_order), in one pass.

Why: done as a dtype copy into a scratch buffer and an ``index_select`` from it — two
torch kernels, each reading and writing the whole chunk — they took 35 and 38 µs of the
hybrid layer's ~1.3 ms at 2048 tokens of GLM-5.2 (hidden 6144) on the H200
(torch.profiler: bench/results/kernel_breakdown_h200_s17.json). One pass reads the 25 MB
once and writes them once. The conversion rounds to nearest even as the copy did, so the
values are the same bits.
"""
import triton
import triton.language as tl

WINDOW = 128  # mma_tiles.WINDOW: the permutation repeats every 128 activations


@triton.jit
def _mma_order_kernel(x_ptr, stride_x, stride_xk, out_ptr, stride_o, K, BLOCK: tl.constexpr,
                      FRAGMENTS: tl.constexpr = False):
    """out[row, p] = fp16(x[row, source(p)]) for BLOCK positions p of one row, source as
    mma_tiles.activation_order gives it: within each 128-wide window, p = 2t + b + 8·j
    holds activation 32t + 8·(j // 4) + 2·(j % 4) + b; ``FRAGMENTS``: as
    mma_tiles.fragment_order gives it, p = 32i + 8t + v holds 32t + 8i + v."""
    row = tl.program_id(0).to(tl.int64)
    p = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    ok = p < K
    r = p % 128
    if FRAGMENTS:
        src = p - r + 32 * ((r // 8) % 4) + 8 * (r // 32) + r % 8
    else:
        j = r // 8
        src = p - r + 32 * ((r // 2) % 4) + 8 * (j // 4) + 2 * (j % 4) + r % 2
    v = tl.load(x_ptr + row * stride_x + src * stride_xk, mask=ok)
    tl.store(out_ptr + row * stride_o + p, v.to(tl.float16), mask=ok)


def launch(x, out, block: int = 1024, fragments: bool = False):
    """``x`` [m, K] (K a whole number of 128-wide windows, any strides) → ``out`` fp16
    [≥ m, ≥ K] (rows contiguous), its first m rows and K columns written, in activation
    order or (``fragments``) fragment order."""
    m, k = x.shape
    if k % WINDOW:
        raise ValueError(f"mma activation order: K={k} is not a multiple of {WINDOW}")
    if out.stride(1) != 1:
        raise ValueError("mma activation order: the output's rows must be contiguous")
    if out.shape[0] < m or out.shape[1] < k:
        raise ValueError(f"mma activation order: out {tuple(out.shape)} is smaller than x {tuple(x.shape)}")
    if m == 0:
        return out
    block = min(block, triton.next_power_of_2(k))
    _mma_order_kernel[(m, triton.cdiv(k, block))](x, x.stride(0), x.stride(1), out, out.stride(0), k, BLOCK=block,
                                                          FRAGMENTS=fragments)
    return out
