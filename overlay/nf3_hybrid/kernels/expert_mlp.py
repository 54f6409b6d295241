"""Weight-only quantized grouped expert MLP: ``down(silu(gate(x)) * up(x))`` per block
of routed tokens, with the weights dequantized inside the kernel.

Two kernels per tier, the structure of vLLM's fused MoE:
- ``_w13_kernel``: for one expert block and one tile of the intermediate dimension,
  gate and up GEMMs over the hidden dimension, then SiLU·mul, into an intermediate
  cache row per block slot;
- ``_w2_kernel``: the down GEMM of that cache, times the routing weight, atomically
  added (fp32) into the token's output row, which both tiers share.

Weights are read in the checkpoint's own packing — no repacked copy, so loading costs
no extra memory or time. Measured on the H200 (bench/results/bench_moe_h200.json) this
path is far slower than vLLM's Marlin for the same bytes (prefill 0.07-0.19×): the
in-register dequantization (8-/16-entry value tables, 256-entry scale tables, reshapes
of 3-D code tensors) dominates the tensor-core work. Whether a load-time repack into a
dot-operand-friendly layout wins is the next measurement, not yet made. The tables do let
one kernel serve any NF3 codebook the checkpoint carries.

Products are computed as [N-tile × M-tile] = W[N, K] · xᵀ[K, M]: the large weight tile
is the natural left operand and only the small activation tile is read transposed.
Under the interpreter (CPU tests) ``DOT_FP32`` makes the dots float32.
"""
import triton
import triton.language as tl

FMT_NF3 = 0
FMT_NVFP4 = 1
FMT_MXFP4 = 2


@triton.jit
def _weight_tile(w_ptr, s_ptr, e, row0, k0, stride_we, stride_wn, stride_se, stride_sn,
                 val_tab_ptr, scale_tab_ptr,
                 FMT: tl.constexpr, GROUP: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """Dequantized float32 weights W[row0:row0+BN, k0:k0+BK] of local expert e
    (GROUP: weights per scale along K)."""
    rows = row0 + tl.arange(0, BN)
    wbase = w_ptr + e.to(tl.int64) * stride_we + rows[:, None].to(tl.int64) * stride_wn
    if FMT == 0:
        words = k0 // 8 + tl.arange(0, BK // 8)
        p = wbase + words[None, :] * 3
        b0 = tl.load(p).to(tl.int32)
        b1 = tl.load(p + 1).to(tl.int32)
        b2 = tl.load(p + 2).to(tl.int32)
        word = b0 | (b1 << 8) | (b2 << 16)
        codes = (word[:, :, None] >> (3 * tl.arange(0, 8))[None, None, :]) & 7
    else:
        nib = k0 // 2 + tl.arange(0, BK // 2)
        byte = tl.load(wbase + nib[None, :]).to(tl.int32)
        codes = (byte[:, :, None] >> (4 * tl.arange(0, 2))[None, None, :]) & 15
    codes = tl.reshape(codes, (BN, BK))
    vals = tl.load(val_tab_ptr + codes)
    groups = k0 // GROUP + tl.arange(0, BK // GROUP)
    sbits = tl.load(s_ptr + e.to(tl.int64) * stride_se + rows[:, None].to(tl.int64) * stride_sn + groups[None, :])
    scale = tl.load(scale_tab_ptr + sbits.to(tl.int32))
    scale = tl.reshape(tl.broadcast_to(scale[:, :, None], (BN, BK // GROUP, GROUP)), (BN, BK))
    return vals * scale


@triton.jit(do_not_specialize=["P", "topk"])
def _w13_kernel(
    x_ptr, stride_xm, w_ptr, s_ptr, s2_ptr, sorted_ptr, bexp_ptr, tw_ptr, inter_ptr, stride_im,
    val_tab_ptr, scale_tab_ptr, P, topk, K, I,
    stride_we, stride_wn, stride_se, stride_sn,
    FMT: tl.constexpr, GROUP: tl.constexpr, HAS_S2: tl.constexpr, WEIGHT_ON_INPUT: tl.constexpr,
    BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, DOT_FP32: tl.constexpr,
):
    b = tl.program_id(0)
    j = tl.program_id(1)
    e = tl.load(bexp_ptr + b)
    if e < 0:
        return
    pairs = tl.load(sorted_ptr + b * BM + tl.arange(0, BM))
    valid = pairs < P
    tok = tl.where(valid, pairs // topk, 0).to(tl.int64)
    acc_g = tl.zeros([BN, BM], dtype=tl.float32)
    acc_u = tl.zeros([BN, BM], dtype=tl.float32)
    for k0 in range(0, K, BK):
        kk = k0 + tl.arange(0, BK)
        xt = tl.load(x_ptr + tok[None, :] * stride_xm + kk[:, None], mask=valid[None, :], other=0.0)
        wg = _weight_tile(w_ptr, s_ptr, e, j * BN, k0, stride_we, stride_wn, stride_se, stride_sn,
                          val_tab_ptr, scale_tab_ptr, FMT, GROUP, BN, BK)
        wu = _weight_tile(w_ptr, s_ptr, e, I + j * BN, k0, stride_we, stride_wn, stride_se, stride_sn,
                          val_tab_ptr, scale_tab_ptr, FMT, GROUP, BN, BK)
        if DOT_FP32:
            xf = xt.to(tl.float32)
            acc_g += tl.dot(wg, xf)
            acc_u += tl.dot(wu, xf)
        else:
            # fp16 operands: dequantized NF3/FP4 values keep 11 mantissa bits instead of
            # bf16's 8 (post-norm activations are far inside fp16's range)
            xh = xt.to(tl.float16)
            acc_g += tl.dot(wg.to(tl.float16), xh)
            acc_u += tl.dot(wu.to(tl.float16), xh)
    if HAS_S2:
        acc_g *= tl.load(s2_ptr + e * 2)
        acc_u *= tl.load(s2_ptr + e * 2 + 1)
    if WEIGHT_ON_INPUT:
        rw = tl.load(tw_ptr + pairs, mask=valid, other=0.0).to(tl.float32)
        acc_g *= rw[None, :]
        acc_u *= rw[None, :]
    h = acc_g * tl.sigmoid(acc_g) * acc_u
    cols = j * BN + tl.arange(0, BN)
    slots = (b * BM + tl.arange(0, BM)).to(tl.int64)
    tl.store(inter_ptr + slots[None, :] * stride_im + cols[:, None], h.to(inter_ptr.dtype.element_ty))


@triton.jit(do_not_specialize=["P", "topk"])
def _w2_kernel(
    inter_ptr, stride_im, w_ptr, s_ptr, s2_ptr, sorted_ptr, bexp_ptr, tw_ptr, out_ptr, stride_om,
    val_tab_ptr, scale_tab_ptr, P, topk, K,
    stride_we, stride_wn, stride_se, stride_sn,
    FMT: tl.constexpr, GROUP: tl.constexpr, HAS_S2: tl.constexpr, WEIGHT_ON_INPUT: tl.constexpr,
    BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, DOT_FP32: tl.constexpr,
):
    b = tl.program_id(0)
    j = tl.program_id(1)
    e = tl.load(bexp_ptr + b)
    if e < 0:
        return
    pairs = tl.load(sorted_ptr + b * BM + tl.arange(0, BM))
    valid = pairs < P
    slots = (b * BM + tl.arange(0, BM)).to(tl.int64)
    acc = tl.zeros([BN, BM], dtype=tl.float32)
    for k0 in range(0, K, BK):
        kk = k0 + tl.arange(0, BK)
        ht = tl.load(inter_ptr + slots[None, :] * stride_im + kk[:, None])
        w = _weight_tile(w_ptr, s_ptr, e, j * BN, k0, stride_we, stride_wn, stride_se, stride_sn,
                         val_tab_ptr, scale_tab_ptr, FMT, GROUP, BN, BK)
        if DOT_FP32:
            acc += tl.dot(w, ht.to(tl.float32))
        else:
            acc += tl.dot(w.to(tl.float16), ht.to(tl.float16))
    if HAS_S2:
        acc *= tl.load(s2_ptr + e)
    if not WEIGHT_ON_INPUT:
        rw = tl.load(tw_ptr + pairs, mask=valid, other=0.0).to(tl.float32)
        acc *= rw[None, :]
    tok = tl.where(valid, pairs // topk, 0).to(tl.int64)
    cols = j * BN + tl.arange(0, BN)
    tl.atomic_add(out_ptr + tok[None, :] * stride_om + cols[:, None], acc, mask=valid[None, :])


def launch_w13(x, w, s, s2, sorted_ids, block_expert, topk_weights, inter, val_tab, scale_tab,
               num_pairs, topk, inter_size, fmt, weight_on_input, cfg, dot_fp32):
    K = x.shape[1]
    grid = (block_expert.numel(), inter_size // cfg["BN13"])
    _w13_kernel[grid](
        x, x.stride(0), w, s, s2 if s2 is not None else w, sorted_ids, block_expert, topk_weights, inter, inter.stride(0),
        val_tab, scale_tab, num_pairs, topk, K, inter_size,
        w.stride(0), w.stride(1), s.stride(0), s.stride(1),
        FMT=fmt, GROUP=16 if fmt == FMT_NVFP4 else 32, HAS_S2=s2 is not None, WEIGHT_ON_INPUT=weight_on_input,
        BM=cfg["BM"], BN=cfg["BN13"], BK=min(cfg["BK13"], K), DOT_FP32=dot_fp32,
        num_warps=cfg["warps"], num_stages=cfg["stages"],
    )


def launch_w2(inter, w, s, s2, sorted_ids, block_expert, topk_weights, out, val_tab, scale_tab,
              num_pairs, topk, inter_size, fmt, weight_on_input, cfg, dot_fp32):
    N = out.shape[1]
    grid = (block_expert.numel(), N // cfg["BN2"])
    _w2_kernel[grid](
        inter, inter.stride(0), w, s, s2 if s2 is not None else w, sorted_ids, block_expert, topk_weights,
        out, out.stride(0), val_tab, scale_tab, num_pairs, topk, inter_size,
        w.stride(0), w.stride(1), s.stride(0), s.stride(1),
        FMT=fmt, GROUP=16 if fmt == FMT_NVFP4 else 32, HAS_S2=s2 is not None, WEIGHT_ON_INPUT=weight_on_input,
        BM=cfg["BM"], BN=cfg["BN2"], BK=min(cfg["BK2"], inter_size), DOT_FP32=dot_fp32,
        num_warps=cfg["warps"], num_stages=cfg["stages"],
    )
