"""Kernel probe for tuning on the GPU host (no vLLM): one hybrid-layer call at a few
token counts (GLM-5.2 shape, I=512), so ncu / the Triton cache can be inspected.
Usage: python3 bench/probe_kernels.py [--gemv] [M ...]
(--gemv keeps the per-pair decode path for M ≤ 16; without it every M takes the grouped path)"""
import sys

import torch

from nf3_hybrid import bench
from nf3_hybrid.backends import executor as executor_mod
from nf3_hybrid.backends.executor import LayerExecutor
from nf3_hybrid.backends.triton_tiers import TritonTier, Workspace

args = sys.argv[1:]
if "--gemv" in args:
    args.remove("--gemv")
else:
    executor_mod.GEMV_TOKENS = 0
H, E, Kn, topk, inter = 6144, 256, 64, 8, 512
ws = Workspace(torch.device("cuda"))
ws.reserve(4096, topk, H, inter, E)
kmap = [i if i < Kn else -1 for i in range(E)]
nmap = [i - Kn if i >= Kn else -1 for i in range(E)]
ex = LayerExecutor({0: TritonTier(bench.random_tier("nvfp4", Kn, H, inter, kmap, 1), ws),
                    1: TritonTier(bench.random_tier("nf3", E - Kn, H, inter, nmap, 2), ws)}, H)
for m in [int(a) for a in args] or [1, 2048]:
    w, ids = bench.random_routing(m, E, topk, m)
    x = (torch.randn(m, H, device="cuda") * 0.5).to(torch.bfloat16)
    ex.forward(x, w, ids)
    torch.cuda.synchronize()
    ex.forward(x, w, ids)
    torch.cuda.synchronize()
print("done")
