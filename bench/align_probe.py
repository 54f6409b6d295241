"""Time the routing launches (kernels/align.py) per pairs-a-program and warp count on the
GPU, and check every variant sorts like the first: the same blocks, the same pairs per
expert.
Usage: python3 bench/align_probe.py [--tokens 512 2048] [--out FILE]"""
import argparse
import json

import torch

from nf3_hybrid import bench
from nf3_hybrid.backends.triton_tiers import Workspace, stacked_maps
from nf3_hybrid.kernels import align


class _T:  # what stacked_maps reads of a tier
    def __init__(self, local_map, n):
        self.tier = type("tier", (), {"local_map": local_map, "num_experts": n})()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokens", type=int, nargs="*", default=[512, 2048])
    ap.add_argument("--out")
    a = ap.parse_args()
    E, kept, topk, H, inter, bm = 256, 64, 8, 6144, 512, 64
    dev = torch.device("cuda")
    kmap = torch.tensor([i if i < kept else -1 for i in range(E)], dtype=torch.int32, device=dev)
    nmap = torch.tensor([i - kept if i >= kept else -1 for i in range(E)], dtype=torch.int32, device=dev)
    maps, n_local = stacked_maps([_T(kmap, kept), _T(nmap, E - kept)])
    ws = Workspace(dev)
    ws.reserve(max(a.tokens), topk, H, inter, E)
    res = {}
    for m in a.tokens:
        _, ids = bench.random_routing(m, E, topk, m)
        ids = ids.reshape(-1).to(torch.int32)
        cap, blocks = align.capacity(ids.numel(), E, bm)
        srt, bexp = ws.sorted_ids[:, :cap], ws.block_expert[:, :blocks]

        def run(chunk, warps):
            align.launch(ids, maps, n_local, srt, bexp, ws.cursor, ws.starts, ws.ends, bm, chunk, warps)

        def summary():
            # per tier: the block → expert map, and each expert's pairs as a set
            out = []
            for t in range(2):
                b = bexp[t].tolist()
                s = srt[t].view(blocks, bm).tolist()
                per = {}
                for e, slots in zip(b, s):
                    if e >= 0:
                        per.setdefault(e, set()).update(p for p in slots if p < ids.numel())
                out.append((b, per))
            return out

        run(256, 4)
        want = summary()
        for chunk in (256, 1024, 2048, 4096):
            for warps in (4, 8, 16):
                run(chunk, warps)
                ok = summary() == want
                us = bench.time_graph(lambda: run(chunk, warps), iters=20)
                res[f"M={m} chunk={chunk} warps={warps}"] = dict(us=round(us, 1), same=ok)
                print(m, chunk, warps, f"{us:.1f} us", "same" if ok else "DIFFERENT", flush=True)
    if a.out:
        with open(a.out, "w") as f:
            json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
