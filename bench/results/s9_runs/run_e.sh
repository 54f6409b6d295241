#!/bin/bash
# session 9, bare H200 host, the code with the I-sized down-GEMV tiles, the narrow class and
# GEMV_TOKENS=112: GPU kernel tests, then the GEMV against the grouped path around the
# threshold at I=512, 1024 and 2048 (the first run left the threshold at 0 after I=512 and
# crashed at I=1024: its workspace had planned no GEMV scratch; I=1024 and 2048 were then
# run again with SKIP_TESTS=1 INTERS="1024 2048" TAG=b)
export PYTHONPATH=$PWD/overlay:$PWD
[ -n "$SKIP_TESTS" ] || timeout 260 python3 -m pytest -q tests/kernels tests/test_nf3_nibble.py 2>&1 | tail -15 > $OUT/kernels_h200_s9.txt; [ -n "$SKIP_TESTS" ] || tail -3 $OUT/kernels_h200_s9.txt
timeout 300 python3 - <<'PY' 2>&1 | grep -v Warning | tail -30
import json, os
import torch
from nf3_hybrid import bench as b
from nf3_hybrid.backends import triton_tiers as tt, executor as exm
from nf3_hybrid.backends.executor import LayerExecutor
from nf3_hybrid.backends.triton_tiers import TritonTier, Workspace

H, E, Kn, topk = 6144, 256, 64, 8
b.set_gemv_tokens(160)
out = {"command": "bench/results/s9_runs/run_e.sh", "gemv_us": {}, "grouped_us": {}}
for inter in [int(v) for v in os.environ.get("INTERS", "512 1024 2048").split()]:
    b.set_gemv_tokens(160)  # the loop below leaves it at 0: the workspace sizes its GEMV scratch from it
    kmap = [i if i < Kn else -1 for i in range(E)]
    nmap = [i - Kn if i >= Kn else -1 for i in range(E)]
    ws = Workspace(torch.device("cuda"))
    ws.reserve(160, topk, H, inter, E)
    ex = LayerExecutor({0: TritonTier(b.random_tier("nvfp4", Kn, H, inter, kmap, 1), ws),
                        1: TritonTier(b.random_tier("nf3", E - Kn, H, inter, nmap, 2), ws)}, H)
    g, r = out["gemv_us"].setdefault(inter, {}), out["grouped_us"].setdefault(inter, {})
    for m in (64, 80, 96, 112, 128, 144):
        w, ids = b.random_routing(m, E, topk, m)
        x = (torch.randn(m, H, device="cuda") * 0.5).to(torch.bfloat16)
        for n, d in ((160, g), (0, r)):
            exm.GEMV_TOKENS = tt.GEMV_TOKENS = n
            d[m] = round(b.time_graph(lambda: ex.forward(x, w, ids), iters=20), 1)
        print(inter, m, "gemv", g[m], "grouped", r[m], flush=True)
        json.dump(out, open(os.environ["OUT"] + f"/crossover_h200_s9_{os.environ.get('TAG', 'all')}.json", "w"), indent=1)
PY
