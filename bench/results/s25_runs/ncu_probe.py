"""Session 25: one launch each of three stream probes (the pattern alone, with the real
decode, with the decode and 16 pad copies) and one forward pass of the real layer (tiers one
after the other: the kept tier's mma13_kernel, then the NF3 tier's), for ncu to profile
side by side (bench/results/s25_runs/call2.sh). Usage: ncu_probe.py INTER TOKENS"""
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import stream_probe as sp  # noqa: E402
from nf3_hybrid import bench  # noqa: E402

inter, tokens = int(sys.argv[1]), int(sys.argv[2])
g = bench.GLM52
tier = sp.Tier(g["experts"] - g["kept"], inter, g["hidden"], "cuda")
hit = sp.hit_experts(tokens, g["experts"], g["kept"], g["topk"], tokens, "cuda")
rows = {r[0]: sp._probe(r) for r in sp.PROBES}
for name in ("mirror", "decode", "decode_pad16"):
    _, bn, warps, work, ahead, persist, pad, bar, decode = rows[name]
    out = torch.empty((hit.numel() * tier.blocks // warps, warps, sp.RUN + sp.SCALE_RUN), dtype=torch.int32,
                      device="cuda")
    sp.launch(tier, hit, out, bn, warps, work, ahead, persist, pad, bar, decode)
    torch.cuda.synchronize()
    print(name, "launched", flush=True)
del tier
run, restore = sp.real_layer(inter, tokens)
run()
torch.cuda.synchronize()
restore()
print("real layer ran", flush=True)
