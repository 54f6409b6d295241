#!/bin/bash
# session 11, bare H200 host: the grouped classes' token blocks on the mma kernels. Hybrid
# layer (64 NVFP4 + 192 NF3 experts, top-8, GLM-5.2 shape), I=512 and I=2048, CUDA-graph
# replay: the built-in class against (a) 16-token blocks (the narrow class) at 384-1024
# tokens, (b) in the large class, 32-token blocks with both tiers on the mma kernels and
# (c) 32-token blocks with the NVFP4 tier on the Triton tiles.
export PYTHONPATH=$PWD/overlay:$PWD
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
timeout 400 python3 - "$@" <<'PY' 2>&1 | grep -v Warning | tail -60
import json, sys
import torch
from nf3_hybrid import bench as b
from nf3_hybrid.backends import triton_tiers as tt
from nf3_hybrid.backends.executor import LayerExecutor
from nf3_hybrid.backends.triton_tiers import TritonTier, Workspace

out_path = sys.argv[1]
SIZES = json.loads(sys.argv[2]) if len(sys.argv) > 2 else ((512, (384, 512, 768, 1024, 2048, 4096)), (2048, (512, 1024, 2048, 4096)))
H, E, Kn, topk = 6144, 256, 64, 8
kmap = [i if i < Kn else -1 for i in range(E)]
nmap = [i - Kn if i >= Kn else -1 for i in range(E)]
res = {"command": "bench/results/s10_runs/run_b.sh " + " ".join(sys.argv[1:]), "rows": []}
large, narrow = tt._GROUPED_TILES["large"], tt._GROUPED_TILES["narrow"]
variants = {
    "narrow_tiles": lambda m: {tt.grouped_class(m): dict(narrow)},
    "bm32_both_mma": lambda m: {tt.grouped_class(m): dict(large, BM=32, mma_kept=1)},
    "bm32_nf3_mma": lambda m: {tt.grouped_class(m): dict(large, BM=32)},
}
for inter, sizes in SIZES:
    ws = Workspace(torch.device("cuda"))
    ws.reserve(4096, topk, H, inter, E, block_sizes=[16, 32, 64])
    nf3 = TritonTier(b.random_tier("nf3", E - Kn, H, inter, nmap, 2), ws)
    kept = TritonTier(b.random_tier("nvfp4", Kn, H, inter, kmap, 1), ws)
    ex = LayerExecutor({0: kept, 1: nf3}, H)
    print("mma usable: nf3", nf3.mma, "kept", kept.mma, flush=True)

    def t(m, iters=12):
        w, ids = b.random_routing(m, E, topk, m)
        x = (torch.randn(m, H, device="cuda") * 0.5).to(torch.bfloat16)
        return round(b.time_graph(lambda: ex.forward(x, w, ids), iters=iters), 1)

    for m in sizes:
        row = {"inter": inter, "m": m, "class": tt.grouped_class(m), "builtin": t(m)}
        for name, cfg in variants.items():
            if name == "narrow_tiles" and m > 1024 or name != "narrow_tiles" and m <= 1024:
                continue
            tt.CONFIG_OVERRIDE = cfg(m)
            row[name] = t(m)
            tt.CONFIG_OVERRIDE = None
        print(json.dumps(row), flush=True)
        res["rows"].append(row)
    del ex, nf3, kept, ws
    torch.cuda.empty_cache()
json.dump(res, open(out_path, "w"), indent=1)
PY
