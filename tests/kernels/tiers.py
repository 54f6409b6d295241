"""Random tier weights for kernel tests: quantized from Gaussian weights with the
package's own quantizers (the formats are tested against float64 elsewhere)."""
import torch

from nf3_hybrid.backends.base import MXFP4, NF3, NVFP4, TierWeights
from nf3_hybrid.formats import mxfp4, nf3, nvfp4


def make_tier(fmt, n, hidden, inter, global_map, device="cpu", seed=0, codebook=None, std=0.05):
    """``global_map``: list, global expert → local index in this tier or −1."""
    g = torch.Generator(device=device).manual_seed(seed)
    w13s, s13s, w2s, s2s, g13, g2 = [], [], [], [], [], []
    for _ in range(n):
        gate = torch.randn(inter, hidden, generator=g, device=device) * std
        up = torch.randn(inter, hidden, generator=g, device=device) * std * 1.5
        down = torch.randn(hidden, inter, generator=g, device=device) * std
        if fmt == NVFP4:
            qg, sg, s2g = nvfp4.quantize(gate)
            qu, su, s2u = nvfp4.quantize(up)  # different gate/up global scales on purpose
            qd, sd, s2d = nvfp4.quantize(down)
            w13s.append(torch.cat([qg, qu])); s13s.append(torch.cat([sg, su])); g13.append(torch.stack([s2g, s2u]))
            w2s.append(qd); s2s.append(sd); g2.append(s2d)
        elif fmt == MXFP4:
            qg, sg = mxfp4.quantize(gate); qu, su = mxfp4.quantize(up); qd, sd = mxfp4.quantize(down)
            w13s.append(torch.cat([qg, qu])); s13s.append(torch.cat([sg, su])); w2s.append(qd); s2s.append(sd)
        else:
            qg, sg = nf3.quantize(gate, codebook); qu, su = nf3.quantize(up, codebook); qd, sd = nf3.quantize(down, codebook)
            w13s.append(torch.cat([qg, qu])); s13s.append(torch.cat([sg, su])); w2s.append(qd); s2s.append(sd)

    def stack(ts, empty_shape, dtype):
        return torch.stack(ts).to(device) if ts else torch.empty(empty_shape, dtype=dtype, device=device)

    return TierWeights(
        fmt=fmt, num_experts=n, hidden=hidden, inter=inter,
        w13=stack(w13s, (0, 2 * inter, 1), torch.uint8), w13_scale=stack(s13s, (0, 2 * inter, 1), torch.uint8),
        w2=stack(w2s, (0, hidden, 1), torch.uint8), w2_scale=stack(s2s, (0, hidden, 1), torch.uint8),
        local_map=torch.tensor(global_map, dtype=torch.int32, device=device),
        w13_scale_2=stack(g13, (0, 2), torch.float32) if fmt == NVFP4 else None,
        w2_scale_2=stack(g2, (0,), torch.float32) if fmt == NVFP4 else None,
        codebook=tuple(nf3.validate_codebook(codebook)) if fmt == NF3 else None,
    )


def split_experts(num_experts, n_kept, seed=0):
    g = torch.Generator().manual_seed(seed)
    perm = torch.randperm(num_experts, generator=g).tolist()
    kept = sorted(perm[:n_kept])
    kmap = [-1] * num_experts
    nmap = [-1] * num_experts
    for i, e in enumerate(kept):
        kmap[e] = i
    for i, e in enumerate(sorted(perm[n_kept:])):
        nmap[e] = i
    return kmap, nmap


def routing(m, num_experts, topk, seed=0, device="cpu"):
    g = torch.Generator().manual_seed(seed)
    ids = torch.stack([torch.randperm(num_experts, generator=g)[:topk] for _ in range(m)]).to(torch.int32)
    w = torch.rand(m, topk, generator=g) + 0.05
    return (w / w.sum(1, keepdim=True)).to(device), ids.to(device)


def gemv_up_to(monkeypatch, n):
    """The per-pair path up to n tokens: tests whose batches of 70 are to take the grouped
    path pin it, whatever the built-in threshold. Both copies of the threshold: the
    executor's picks the path, the workspace's sizes the per-pair scratch (call before
    the workspace is planned); n for every intermediate size (no GEMV_TOKENS_BY_INTER)."""
    from nf3_hybrid.backends import executor, triton_tiers

    monkeypatch.setattr(executor, "GEMV_TOKENS", n)
    monkeypatch.setattr(triton_tiers, "GEMV_TOKENS", n)
    monkeypatch.setattr(triton_tiers, "GEMV_TOKENS_BY_INTER", ())
