#!/bin/bash
# session 10, bare H200 host: the hybrid layer (64 NVFP4 + 192 NF3 experts, top-8, GLM-5.2
# shape) with the tiers' grouped GEMMs on the mma kernels (kernels/mma_tiles.py) against
# the Triton tiles, and against the per-pair GEMV at decode sizes; I=512 and I=2048.
# Also: the large class with 32-token blocks against its 64.
export PYTHONPATH=$PWD/overlay:$PWD
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
timeout 420 python3 - "$@" <<'PY' 2>&1 | grep -v Warning | tail -60
import json, os, sys
import torch
from nf3_hybrid import bench as b
from nf3_hybrid.backends import triton_tiers as tt
from nf3_hybrid.backends.executor import LayerExecutor
from nf3_hybrid.backends.triton_tiers import TritonTier, Workspace

out_path = sys.argv[1]
H, E, Kn, topk = 6144, 256, 64, 8
kmap = [i if i < Kn else -1 for i in range(E)]
nmap = [i - Kn if i >= Kn else -1 for i in range(E)]
res = {"command": "bench/results/s10_runs/run_a.sh " + out_path, "rows": []}
for inter, sizes in ((512, (8, 16, 32, 40, 48, 56, 64, 96, 112, 128, 256, 512, 1024, 2048, 4096)),
                     (2048, (16, 32, 48, 64, 112, 128, 512, 2048))):
    b.set_gemv_tokens(112)
    ws = Workspace(torch.device("cuda"))
    ws.reserve(4096, topk, H, inter, E, block_sizes=[64])
    nf3 = TritonTier(b.random_tier("nf3", E - Kn, H, inter, nmap, 2), ws)
    kept = TritonTier(b.random_tier("nvfp4", Kn, H, inter, kmap, 1), ws)
    ex = LayerExecutor({0: kept, 1: nf3}, H)
    print("mma usable: nf3", nf3.mma, "kept", kept.mma, flush=True)

    def t(m, iters=15):
        w, ids = b.random_routing(m, E, topk, m)
        x = (torch.randn(m, H, device="cuda") * 0.5).to(torch.bfloat16)
        return round(b.time_graph(lambda: ex.forward(x, w, ids), iters=iters), 1)

    for m in sizes:
        row = {"inter": inter, "m": m}
        if m <= 112:
            b.set_gemv_tokens(112)
            row["gemv"] = t(m)
        b.set_gemv_tokens(0)
        nf3.mma = kept.mma = True
        row["grouped_mma"] = t(m)
        kept.mma = False
        row["grouped_mma_nf3_only"] = t(m)
        nf3.mma = False
        row["grouped_triton"] = t(m)
        nf3.mma = kept.mma = True
        if m >= 1024:
            tt.CONFIG_OVERRIDE = {"large": dict(tt._GROUPED_TILES["large"], BM=32)}
            row["grouped_mma_bm32"] = t(m)
            tt.CONFIG_OVERRIDE = None
        b.set_gemv_tokens(112)
        print(json.dumps(row), flush=True)
        res["rows"].append(row)
    del ex, nf3, ws
    torch.cuda.empty_cache()
json.dump(res, open(out_path, "w"), indent=1)
PY
