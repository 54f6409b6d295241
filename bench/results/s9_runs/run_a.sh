#!/bin/bash
# session 9, bare H200 host: (1) grouped tiles re-swept after session 8's decode changes
# (nibble NF3, ptx4 NVFP4, two streams) at I=512; (2) the per-pair GEMV against the grouped
# path from 64 to 192 tokens (is GEMV_TOKENS=64 still the crossover?)
export PYTHONPATH=$PWD/overlay:$PWD
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
timeout 540 python3 - <<'PY' 2>&1 | grep -v Warning | tail -60
import json, os, traceback
import torch
from nf3_hybrid import bench as b
from nf3_hybrid.backends import triton_tiers as tt, executor as exm
from nf3_hybrid.backends.executor import LayerExecutor
from nf3_hybrid.backends.triton_tiers import TritonTier, Workspace

H, E, Kn, topk, inter = 6144, 256, 64, 8, 512
b.set_gemv_tokens(192)
kmap = [i if i < Kn else -1 for i in range(E)]
nmap = [i - Kn if i >= Kn else -1 for i in range(E)]
ws = Workspace(torch.device("cuda"))
ws.reserve(4096, topk, H, inter, E, block_sizes=[128])
ex = LayerExecutor({0: TritonTier(b.random_tier("nvfp4", Kn, H, inter, kmap, 1), ws),
                    1: TritonTier(b.random_tier("nf3", E - Kn, H, inter, nmap, 2), ws)}, H)
out = {"command": "bench/results/s9_runs/run_a.sh", "inter": inter, "gemv_vs_grouped": {}, "trials": []}

def t(m, iters=15):
    w, ids = b.random_routing(m, E, topk, m)
    x = (torch.randn(m, H, device="cuda") * 0.5).to(torch.bfloat16)
    return round(b.time_graph(lambda: ex.forward(x, w, ids), iters=iters), 1)

for m in (64, 96, 128, 192):
    exm.GEMV_TOKENS = tt.GEMV_TOKENS = 192
    g = t(m)
    exm.GEMV_TOKENS = tt.GEMV_TOKENS = 0
    r = t(m)
    out["gemv_vs_grouped"][m] = {"gemv_us": g, "grouped_us": r}
    print("gemv vs grouped", m, g, r, flush=True)
exm.GEMV_TOKENS = tt.GEMV_TOKENS = 0

mid, large = tt._GROUPED_TILES["mid"], tt._GROUPED_TILES["large"]
v = lambda base, **kw: {**base, **kw}
cands = {"mid": [mid, tt._GROUPED_TILES["small"], v(mid, BM=16), v(mid, BK13=128), v(mid, BK13=128, BK2=128),
                 v(mid, BN13=128, warps=8), v(mid, stages=4), v(mid, stages=2)],
         "large": [large, v(large, BM=128, warps=8), v(large, BM=128, BN13=128, warps=8), v(large, BK13=128),
                   v(large, stages=4), v(large, BN2=64, BK2=128), v(large, swap13=1)]}
tokens = {"mid": (128, 256, 512, 768), "large": (1024, 2048, 4096)}
default = {"gemv": tt.kernel_config(1, False), "small": tt.grouped_config(64, False),
           "mid": tt.grouped_config(512, False), "large": tt.grouped_config(2048, False)}
for cls, cs in cands.items():
    for cfg in cs:
        tt.CONFIG_OVERRIDE = {**default, cls: cfg}
        try:
            us = {m: t(m) for m in tokens[cls]}
        except Exception as e:  # experiment script: a candidate that fails to compile is reported
            us = {"error": repr(e)[:300]}
        out["trials"].append({"cls": cls, "cfg": cfg, "us": us})
        print(cls, cfg, us, flush=True)
        json.dump(out, open(os.environ["OUT"] + "/sweep_h200_s9.json", "w"), indent=1)
PY
