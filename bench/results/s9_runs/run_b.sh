#!/bin/bash
# session 9, bare H200 host, I=512: (1) the GEMV against the grouped path with 16-token
# blocks between 96 and 128 tokens (where is the crossover); (2) 16-token blocks with the
# mid tiles' options against the small class's tiles at 8-64 tokens (GEMV off); (3) taller
# down-GEMV programs (BN2=16) at 1-16 tokens
export PYTHONPATH=$PWD/overlay:$PWD
timeout 400 python3 - <<'PY' 2>&1 | grep -v Warning | tail -40
import json, os
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
ws.reserve(2048, topk, H, inter, E, block_sizes=[16])
ex = LayerExecutor({0: TritonTier(b.random_tier("nvfp4", Kn, H, inter, kmap, 1), ws),
                    1: TritonTier(b.random_tier("nf3", E - Kn, H, inter, nmap, 2), ws)}, H)
out = {"command": "bench/results/s9_runs/run_b.sh", "inter": inter, "crossover": {}, "small": [], "gemv": []}

def t(m, iters=20):
    w, ids = b.random_routing(m, E, topk, m)
    x = (torch.randn(m, H, device="cuda") * 0.5).to(torch.bfloat16)
    return round(b.time_graph(lambda: ex.forward(x, w, ids), iters=iters), 1)

def dump():
    json.dump(out, open(os.environ["OUT"] + "/sweep_h200_s9b.json", "w"), indent=1)

mid, small = tt._GROUPED_TILES["mid"], tt._GROUPED_TILES["small"]
mid16 = {**mid, "BM": 16}
default = {"gemv": tt.kernel_config(1, False), "small": small, "mid": mid, "large": tt.grouped_config(2048, False)}
for m in (96, 104, 112, 120, 128, 160):
    tt.CONFIG_OVERRIDE = {**default, "mid": mid16}
    exm.GEMV_TOKENS = tt.GEMV_TOKENS = 192
    g = t(m)
    exm.GEMV_TOKENS = tt.GEMV_TOKENS = 0
    r16 = t(m)
    tt.CONFIG_OVERRIDE = dict(default)
    r32 = t(m)
    out["crossover"][m] = {"gemv_us": g, "grouped_bm16_us": r16, "grouped_bm32_us": r32}
    print("crossover", m, g, r16, r32, flush=True)
    dump()
exm.GEMV_TOKENS = tt.GEMV_TOKENS = 0
for cfg in (small, mid16):
    tt.CONFIG_OVERRIDE = {**default, "small": cfg}
    us = {m: t(m) for m in (8, 16, 64)}
    out["small"].append({"cfg": cfg, "us": us})
    print("small", cfg, us, flush=True)
    dump()
exm.GEMV_TOKENS = tt.GEMV_TOKENS = 192
g0 = default["gemv"]
for cfg in (g0, {**g0, "BN2": 16}, {**g0, "BN2": 16, "BK2": 256}, {**g0, "BN2": 16, "warps": 2}):
    tt.CONFIG_OVERRIDE = {**default, "gemv": cfg}
    us = {m: t(m, 40) for m in (1, 2, 4, 8, 16)}
    out["gemv"].append({"cfg": cfg, "us": us})
    print("gemv", cfg, us, flush=True)
    dump()
PY
