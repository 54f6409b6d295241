"""Relative error of the Triton hybrid layer against the float32 reference backend on
random GLM-like tiers, per batch size and kept format — to compare two versions of the
kernels on the same inputs (run it with PYTHONPATH pointing at each overlay in turn).
Usage: python3 bench/accuracy_probe.py [--hidden 1024 --inter 512 --experts 64 --topk 8]
       [--gemv-options e2m1x2=1,...]  (decode GEMV tile options over its built-in tiles, at
       the token counts the GEMV serves: the same kernels with and without an option that
       changes the rounding, in one overlay)"""
import argparse
import json

import torch

from nf3_hybrid.backends import triton_tiers
from nf3_hybrid.backends.executor import LayerExecutor
from nf3_hybrid.backends.ref import RefBackend
from nf3_hybrid.backends.triton_tiers import TritonTier, Workspace
from tests.kernels.tiers import make_tier, routing, split_experts


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hidden", type=int, default=1024)
    ap.add_argument("--inter", type=int, default=512)
    ap.add_argument("--experts", type=int, default=64)
    ap.add_argument("--kept", type=int, default=16)
    ap.add_argument("--topk", type=int, default=8)
    ap.add_argument("--tokens", type=int, nargs="*", default=[1, 8, 64, 300, 2048])
    ap.add_argument("--gemv-options", default="", help="k=v,... added to the GEMV's built-in tiles")
    a = ap.parse_args()
    extra = {k: int(v) for k, v in (kv.split("=") for kv in a.gemv_options.split(",") if kv)}
    out = {}
    for fmt in ("nvfp4", "mxfp4_e8m0k32"):
        kmap, nmap = split_experts(a.experts, a.kept, 3)
        ka = make_tier(fmt, a.kept, a.hidden, a.inter, kmap, "cuda", 4)
        nb = make_tier("nf3", a.experts - a.kept, a.hidden, a.inter, nmap, "cuda", 5)
        ws = Workspace(torch.device("cuda"))
        ws.reserve(max(a.tokens), a.topk, a.hidden, a.inter, max(a.kept, a.experts - a.kept))
        ref = LayerExecutor({0: RefBackend(ka), 1: RefBackend(nb)}, a.hidden)
        tri = LayerExecutor({0: TritonTier(ka, ws), 1: TritonTier(nb, ws)}, a.hidden)
        for m in a.tokens:
            w, ids = routing(m, a.experts, a.topk, seed=m, device="cuda")
            g = torch.Generator(device="cuda").manual_seed(m)
            x = (torch.randn(m, a.hidden, device="cuda", generator=g) * 2).to(torch.bfloat16)
            want = ref.forward(x, w, ids).float()
            if extra:  # the GEMV's built-in tiles at m tokens (unused where m takes the grouped path)
                triton_tiers.CONFIG_OVERRIDE = {"gemv": dict(triton_tiers.gemv_config(m, a.inter), **extra)}
            got = tri.forward(x, w, ids).float()
            err = float((got - want).norm() / want.norm())
            out[f"{fmt} M={m}"] = round(err, 6)
            print(fmt, m, f"{err:.3e}", flush=True)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
