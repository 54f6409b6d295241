#!/bin/bash
# session 9, bare H200 host: decode-GEMV tile shapes around BN2=16/BK2=256 (7-13 % faster
# at 1-8 tokens than BN2=8/BK2=512 in run_b), at I=512 and I=2048, 1-96 tokens
export PYTHONPATH=$PWD/overlay:$PWD
timeout 500 python3 - <<'PY' 2>&1 | grep -v Warning | tail -40
import json, os
import torch
from nf3_hybrid import bench as b
from nf3_hybrid.backends import triton_tiers as tt, executor as exm
from nf3_hybrid.backends.executor import LayerExecutor
from nf3_hybrid.backends.triton_tiers import TritonTier, Workspace

H, E, Kn, topk = 6144, 256, 64, 8
b.set_gemv_tokens(128)
out = {"command": "bench/results/s9_runs/run_c.sh", "trials": []}
g0 = tt.kernel_config(1, False)
cands = [g0, {**g0, "BN2": 16, "BK2": 256}, {**g0, "BN2": 32, "BK2": 128}, {**g0, "BN2": 16, "BK2": 128},
         {**g0, "BN2": 32, "BK2": 256}, {**g0, "BN2": 16, "BK2": 256, "BN13": 4, "BK13": 512},
         {**g0, "BN2": 16, "BK2": 256, "BK13": 512}]
for inter in (512, 2048):
    kmap = [i if i < Kn else -1 for i in range(E)]
    nmap = [i - Kn if i >= Kn else -1 for i in range(E)]
    ws = Workspace(torch.device("cuda"))
    ws.reserve(128, topk, H, inter, E)
    ex = LayerExecutor({0: TritonTier(b.random_tier("nvfp4", Kn, H, inter, kmap, 1), ws),
                        1: TritonTier(b.random_tier("nf3", E - Kn, H, inter, nmap, 2), ws)}, H)

    def t(m, iters=30):
        w, ids = b.random_routing(m, E, topk, m)
        x = (torch.randn(m, H, device="cuda") * 0.5).to(torch.bfloat16)
        return round(b.time_graph(lambda: ex.forward(x, w, ids), iters=iters), 1)

    for cfg in cands:
        tt.CONFIG_OVERRIDE = {"gemv": cfg}
        us = {m: t(m) for m in ((1, 2, 4, 8, 16, 32, 64, 96) if inter == 512 else (1, 4, 16, 64))}
        out["trials"].append({"inter": inter, "cfg": cfg, "us": us})
        print(inter, cfg, us, flush=True)
        json.dump(out, open(os.environ["OUT"] + "/sweep_h200_s9c.json", "w"), indent=1)
PY
