#!/bin/bash
# session 11, bare H200 host: the mma kernels with each 128-wide K step in two halves (tile
# option mma_split=2): first the GPU tests of it (same bits as whole steps, the reference's
# result), then the hybrid layer (64 NVFP4 + 192 NF3 experts, top-8, GLM-5.2 shape, CUDA-graph
# replay) with each class's built-in tiles against the same with mma_split=2 and, in the
# large class, with the NVFP4 tier on the mma kernels too (it spilled there in whole steps).
export PYTHONPATH=$PWD/overlay:$PWD
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
timeout 120 python3 -m pytest -q tests/kernels/test_expert_kernels.py -k "mma_split" 2>&1 | tail -4 > $OUT/kernels_h200_s11_split.txt
tail -2 $OUT/kernels_h200_s11_split.txt
timeout 200 python3 - "$@" <<'PY' 2>&1 | grep -v Warning | tail -40
import json, sys
import torch
from nf3_hybrid import bench as b
from nf3_hybrid.backends import triton_tiers as tt
from nf3_hybrid.backends.executor import LayerExecutor
from nf3_hybrid.backends.triton_tiers import TritonTier, Workspace

out_path = sys.argv[1]
H, E, Kn, topk = 6144, 256, 64, 8
kmap = [i if i < Kn else -1 for i in range(E)]
nmap = [i - Kn if i >= Kn else -1 for i in range(E)]
res = {"command": "bench/results/s11_runs/run_c.sh " + " ".join(sys.argv[1:]), "rows": []}
for inter, sizes in ((512, (32, 64, 128, 512, 800, 1024, 2048, 4096)), (2048, (32, 128, 512, 1024, 2048, 4096))):
    ws = Workspace(torch.device("cuda"))
    ws.reserve(4096, topk, H, inter, E, block_sizes=[16, 32, 64])
    nf3 = TritonTier(b.random_tier("nf3", E - Kn, H, inter, nmap, 2), ws)
    kept = TritonTier(b.random_tier("nvfp4", Kn, H, inter, kmap, 1), ws)
    ex = LayerExecutor({0: kept, 1: nf3}, H)

    def t(m, iters=12):
        w, ids = b.random_routing(m, E, topk, m)
        x = (torch.randn(m, H, device="cuda") * 0.5).to(torch.bfloat16)
        return round(b.time_graph(lambda: ex.forward(x, w, ids), iters=iters), 1)

    for m in sizes:
        cls = tt.grouped_class(m) if m > tt.GEMV_TOKENS else "gemv"
        row = {"inter": inter, "m": m, "class": cls, "builtin": t(m)}
        base = tt.grouped_config(m, False)
        tt.CONFIG_OVERRIDE = {cls: dict(base, mma_split=2)}
        row["split"] = t(m)
        if cls == "large":
            tt.CONFIG_OVERRIDE = {cls: dict(base, mma_split=2, mma_kept=1)}
            row["split_kept_mma"] = t(m)
            tt.CONFIG_OVERRIDE = {cls: dict(base, BM=32, mma_split=2, mma_kept=1)}
            row["split_bm32_kept_mma"] = t(m)
        tt.CONFIG_OVERRIDE = None
        print(json.dumps(row), flush=True)
        res["rows"].append(row)
    del ex, nf3, kept, ws
    torch.cuda.empty_cache()
json.dump(res, open(out_path, "w"), indent=1)
PY
