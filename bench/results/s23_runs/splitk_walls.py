"""Session 23, call 5: mma_splitk's per-kernel device times (torch.profiler) beside the
hybrid layer's wall time (bench.time_graph: CUDA-graph replay, as the sweep times it), with the two
tiers on concurrent streams (the default) and one after the other, at 16 and 64 tokens,
GLM-5.2 shape, every batch on the grouped path. Call 4's script took its "built-in" tiles
at I=2048 from the previous run's override (its splitk4); here every setting is built from
the class tiles read once.
Usage (bare H200 host): PYTHONPATH=$PWD/overlay python3 bench/results/s23_runs/splitk_walls.py OUT.json"""
import json
import sys

import torch
from torch.profiler import ProfilerActivity, profile

from nf3_hybrid import bench
from nf3_hybrid.backends import triton_tiers
from nf3_hybrid.backends.executor import LayerExecutor
from nf3_hybrid.backends.triton_tiers import TritonTier, Workspace

bench.set_gemv_tokens(0)
CLASSES = triton_tiers.class_tiles(False)
G = bench.GLM52
H, E, KN, TOPK = G["hidden"], G["experts"], G["kept"], G["topk"]
out = {}
for concurrent in (True, False):
    triton_tiers.CONCURRENT_TIERS = concurrent
    for inter in (512, 2048):
        ws = Workspace(torch.device("cuda"))
        ws.reserve(64, TOPK, H, inter, E)
        ex = LayerExecutor({0: TritonTier(bench.random_tier("nvfp4", KN, H, inter,
                                                            [i if i < KN else -1 for i in range(E)], 1), ws),
                            1: TritonTier(bench.random_tier("nf3", E - KN, H, inter,
                                                            [i - KN if i >= KN else -1 for i in range(E)], 2), ws)}, H)
        for name, extra in (("builtin", {}), ("splitk2", dict(mma_splitk=2)), ("builtin_again", {})):
            triton_tiers.CONFIG_OVERRIDE = {**CLASSES, "small": dict(CLASSES["small"], **extra)}
            for m in (16, 64):
                w, ids = bench.random_routing(m, E, TOPK, m)
                x = (torch.randn(m, H, device="cuda") * 0.5).to(torch.bfloat16)
                for _ in range(3):
                    ex.forward(x, w, ids)
                torch.cuda.synchronize()
                wall = bench.time_graph(lambda: ex.forward(x, w, ids))
                with profile(activities=[ProfilerActivity.CUDA]) as prof:
                    for _ in range(10):
                        ex.forward(x, w, ids)
                    torch.cuda.synchronize()
                rows = {}
                for ev in prof.key_averages():
                    t = getattr(ev, "device_time_total", None) or getattr(ev, "cuda_time_total", 0)
                    if t and ("mma" in ev.key or "splitk" in ev.key):
                        rows[ev.key] = round(t / 10, 2)
                key = f"{'concurrent' if concurrent else 'serial'}_i{inter}_{name}_m{m}"
                out[key] = dict(wall_us=round(wall, 2), kernels_us=rows)
                print(key, out[key], flush=True)
json.dump(out, open(sys.argv[1], "w"), indent=2)
