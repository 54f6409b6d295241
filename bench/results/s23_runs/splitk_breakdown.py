"""Session 23, call 4: where the small class's time goes with and without mma_splitk —
torch.profiler's per-kernel device time of one hybrid layer call (bench.breakdown, GLM-5.2
shape) at 16 and 64 tokens, every batch on the grouped path.
Usage (bare H200 host): PYTHONPATH=$PWD/overlay python3 bench/results/s23_runs/splitk_breakdown.py OUT.json"""
import json
import sys

from nf3_hybrid import bench
from nf3_hybrid.backends import triton_tiers

bench.set_gemv_tokens(0)
out = {}
for inter in (512, 2048):
    for name, extra in (("builtin", {}), ("splitk2", dict(mma_splitk=2)), ("splitk4", dict(mma_splitk=4))):
        classes = triton_tiers.class_tiles(False)
        triton_tiers.CONFIG_OVERRIDE = {**classes, "small": dict(classes["small"], **extra)}
        print(f"== {name} I={inter}", flush=True)
        out[f"{name}_i{inter}"] = bench.breakdown(inter=inter, tokens=(16, 64))
json.dump(out, open(sys.argv[1], "w"), indent=2)
