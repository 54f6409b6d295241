"""H200 probe: the Gluon mma.sync NF3 gate/up kernel (gmma2.py) against the grouped Triton
w13 kernel (kernels/expert_mlp.py) on the same random NF3 expert blocks: agreement and
time. Usage: PYTHONPATH=overlay:bench/gluon_probe python3 bench/gluon_probe/run13.py OUT.json"""
import json
import sys

import torch
from triton.experimental.gluon import language as gl

import gmma2
from nf3_hybrid.formats import nf3
from nf3_hybrid.kernels import expert_mlp, ptx_decode

dev = "cuda"
E, K, I, TOPK = 192, 6144, int(sys.argv[2]) if len(sys.argv) > 2 else 512, 6
g = torch.Generator(device=dev).manual_seed(0)
w13 = torch.randint(0, 256, (E, 2 * I, K // 32 * 12), dtype=torch.uint8, device=dev, generator=g)
s13 = torch.randint(0x20, 0x38, (E, 2 * I, K // 32), dtype=torch.uint8, device=dev, generator=g)
levels = list(nf3.validate_codebook(None))
vtab = torch.tensor(levels, dtype=torch.float32).to(torch.float16).to(dev)
words = ptx_decode.nf3_table_words(levels)
perm = gmma2.k_of_p(K).to(dev)


def blocks(m, bm):
    gg = torch.Generator().manual_seed(m)
    ids = torch.stack([torch.randperm(E, generator=gg)[:TOPK] for _ in range(m)]).flatten()
    order = torch.argsort(ids, stable=True)
    srt, bexp = [], []
    for e in range(E):
        p = order[ids[order] == e].tolist()
        for i in range(0, len(p), bm):
            chunk = p[i:i + bm]
            srt += chunk + [m * TOPK] * (bm - len(chunk))
            bexp.append(e)
    return (torch.tensor(srt, dtype=torch.int32, device=dev), torch.tensor(bexp, dtype=torch.int32, device=dev),
            m * TOPK)


def timeit(fn, reps=30):
    fn()
    torch.cuda.synchronize()
    st, en = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    st.record()
    for _ in range(reps):
        fn()
    en.record()
    torch.cuda.synchronize()
    return st.elapsed_time(en) / reps * 1000


res = []
MID = dict(BM=32, BN13=64, BK13=64, BN2=128, BK2=64, warps=4, stages=3, ptx=1, x16=1)
for m in (128, 256, 512, 1024, 2048):
    x = (torch.randn(m, K, device=dev, generator=g)).to(torch.float16)
    xp = x[:, perm].contiguous()
    row = dict(m=m, inter=I)
    # reference: the Triton grouped w13 kernel, its class tiles (BM 16 / 32 / 64)
    for name, cfg in (("triton_bm16", dict(MID, BM=16)), ("triton_bm32", MID), ("triton_bm64", dict(MID, BM=64))):
        srt, bexp, P = blocks(m, cfg["BM"])
        inter = torch.empty(srt.numel(), I, dtype=torch.float16, device=dev)
        tw = torch.ones(P, device=dev)
        f = lambda: expert_mlp.launch_w13(x, w13, s13, None, srt, bexp, tw, inter, vtab, P, TOPK, I, 0, False,
                                          cfg, False, words)
        row[name] = timeit(f)
        if cfg["BM"] == 16:
            ref16 = (srt, inter.clone())
        if cfg["BM"] == 32:
            ref32 = (srt, inter.clone())
    for BN, BK, BM, W in ((64, 128, 16, 4), (64, 128, 32, 4), (128, 128, 16, 4), (64, 256, 16, 4), (128, 128, 32, 4),
                          (32, 128, 16, 2), (64, 128, 16, 2)):
        srt, bexp, P = blocks(m, BM)
        inter = torch.full((srt.numel(), I), float("nan"), dtype=torch.float16, device=dev)
        mma, lw = gmma2.layouts(BN, BK, W)
        xl = gl.BlockedLayout(size_per_thread=[8, 1], threads_per_warp=[16, 2], warps_per_cta=[1, W], order=[0, 1])
        key = f"gluon_bn{BN}_bk{BK}_bm{BM}_w{W}"

        def f():
            gmma2.g13_kernel[(bexp.numel(), I // BN)](
                xp, xp.stride(0), w13.view(torch.int32), s13, srt, bexp, inter, inter.stride(0),
                *words, P, TOPK, K, I, w13.view(torch.int32).stride(0), w13.view(torch.int32).stride(1),
                s13.stride(0), s13.stride(1), BM=BM, BN=BN, BK=BK, MMA=mma, LW=lw, XL=xl, num_warps=W)
        try:
            row[key] = timeit(f)
        except Exception as exc:  # a probe: record the failure and go on
            row[key] = f"error: {type(exc).__name__}: {str(exc)[:300]}"
            continue
        ref_srt, ref = ref16 if BM == 16 else ref32
        if BM in (16, 32):
            valid = srt < P
            a, r = inter[valid].float(), ref[ref_srt < P].float()
            row[key + "_relerr"] = ((a - r).norm() / r.norm()).item()
            row[key + "_nan"] = bool(torch.isnan(a).any())
    print(json.dumps(row), flush=True)
    res.append(row)
json.dump(dict(command=" ".join(sys.argv), results=res), open(sys.argv[1], "w"), indent=1)
