"""``nf3-hybrid bench``: the hybrid tiers against vLLM's own MoE paths, one process, one GPU.

For GLM-5.2's expert shapes (hidden 6144; per-rank intermediate 2048/1024/512 for TP
1/2/4; 256 experts = 64 kept + 192 NF3; top-8) and the tiny model's, at each token count
and with uniform random routing, it times (CUDA-graph replay, median of CUDA events):
our NF3 tier alone, our NVFP4 tier alone, the full hybrid layer, vLLM's stock NVFP4 MoE
(whatever its oracle picks here — Marlin W4A16 on SM90) for the same expert counts and
routing, and vLLM's bf16 fused MoE. Each row reports the bytes the call must read
(weights of the experts touched + activations) and the bandwidth achieved against the
device-to-device copy bandwidth measured in the same run. Writes JSON and a PNG.
"""
from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path
from typing import Callable, Dict, List

import torch

TOKENS = (1, 2, 4, 8, 16, 64, 512, 2048, 8192)
GLM52 = dict(name="glm5.2", hidden=6144, experts=256, kept=64, topk=8, inters=(2048, 1024, 512))
TINY = dict(name="tiny", hidden=256, experts=32, kept=8, topk=4, inters=(256,))


def time_graph(fn: Callable[[], object], iters: int = 30) -> float:
    """Median µs of ``fn`` replayed from a CUDA graph (after one eager warm-up)."""
    fn()
    torch.cuda.synchronize()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        fn()
    times = []
    for _ in range(iters):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        g.replay()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) * 1000.0)
    del g
    return statistics.median(times)


def copy_bandwidths(nbytes: int = 1 << 30) -> Dict[str, float]:
    """GB/s of a device-to-device copy, counting bytes read plus bytes written, done two
    ways: ``memcpy`` (``Tensor.copy_`` of a contiguous tensor; in a CUDA graph a memcpy
    node, which on the H200 moved ~2.7 TB/s, the number sessions 1-6 used as the
    denominator) and ``kernel`` (an elementwise kernel on the SMs, ``torch.add(src, 0,
    out=dst)``, the way the MoE kernels themselves move bytes). The larger is the copy
    bandwidth the bench compares against. int64 elements: a uint8 copy runs a narrow
    per-byte kernel and understates it."""
    src = torch.empty(nbytes // 8, dtype=torch.int64, device="cuda")
    dst = torch.empty_like(src)
    out = {}
    for name, fn in (("memcpy", lambda: dst.copy_(src)), ("kernel", lambda: torch.add(src, 0, out=dst))):
        us = time_graph(fn, iters=20)
        out[name] = round(2 * nbytes / (us * 1e-6) / 1e9, 1)
    del src, dst
    return out


def random_routing(m: int, experts: int, topk: int, seed: int):
    g = torch.Generator(device="cuda").manual_seed(seed)
    ids = torch.rand(m, experts, generator=g, device="cuda").topk(topk, dim=1).indices.to(torch.int32)
    w = torch.rand(m, topk, generator=g, device="cuda") + 0.05
    return (w / w.sum(1, keepdim=True)).float(), ids


def random_tier(fmt: str, n: int, hidden: int, inter: int, local_map, seed: int):
    """Random packed weights/scales (values do not matter for timing; the kernels are
    checked against the reference elsewhere)."""
    from .backends.base import NVFP4, NF3, TierWeights

    g = torch.Generator(device="cuda").manual_seed(seed)

    def rb(*shape):
        return torch.randint(0, 256, shape, generator=g, device="cuda", dtype=torch.uint8)

    def scales(*shape):
        bits = torch.randint(0x30, 0x40, shape, generator=g, device="cuda", dtype=torch.int32).to(torch.uint8)
        return bits if fmt not in (NVFP4, NF3) else bits.view(torch.float8_e4m3fn)

    if fmt == NF3:
        w13, s13 = rb(n, 2 * inter, hidden // 8 * 3), scales(n, 2 * inter, hidden // 32)
        w2, s2 = rb(n, hidden, inter // 8 * 3), scales(n, hidden, inter // 32)
    else:
        grp = 16 if fmt == NVFP4 else 32
        w13, s13 = rb(n, 2 * inter, hidden // 2), scales(n, 2 * inter, hidden // grp)
        w2, s2 = rb(n, hidden, inter // 2), scales(n, hidden, inter // grp)
    return TierWeights(
        fmt=fmt, num_experts=n, hidden=hidden, inter=inter, w13=w13, w13_scale=s13, w2=w2, w2_scale=s2,
        local_map=torch.tensor(local_map, dtype=torch.int32, device="cuda"),
        w13_scale_2=torch.full((n, 2), 1e-3, device="cuda") if fmt == NVFP4 else None,
        w2_scale_2=torch.full((n,), 1e-3, device="cuda") if fmt == NVFP4 else None,
        codebook=None if fmt != NF3 else (-1.0, -0.6047, -0.3563, -0.1275, 0.1275, 0.3563, 0.6047, 1.0),
    )


def _tier_bytes(t) -> int:
    return sum(x.numel() * x.element_size() for x in (t.w13, t.w13_scale, t.w2, t.w2_scale)) // max(t.num_experts, 1)


def _touched(ids, experts_in) -> int:
    return int(torch.isin(ids.unique(), experts_in).sum())


def run(shapes, tokens=TOKENS, out_dir="bench/results", tag="h200", seed=0, log=print, with_stock=True) -> dict:
    from .backends import triton_tiers
    from .backends.executor import LayerExecutor
    from .backends.triton_tiers import TritonTier, Workspace

    if with_stock:
        from .vllm_patch import stock_moe

        stock_moe.init_single_gpu()
    dev = torch.cuda.get_device_name(0)
    cap = torch.cuda.get_device_capability(0)
    copies = copy_bandwidths()
    bw = max(copies.values())
    log(f"{dev} SM{cap[0]}{cap[1]}: device-to-device copy {bw:.0f} GB/s ({copies})")
    rows: List[dict] = []
    stock_backends: Dict[str, str] = {}
    for shape in shapes:
        H, E, Kn, topk = shape["hidden"], shape["experts"], shape["kept"], shape["topk"]
        for inter in shape["inters"]:
            g = torch.Generator().manual_seed(seed + inter)
            perm = torch.randperm(E, generator=g).tolist()
            kept = sorted(perm[:Kn])
            kmap = [-1] * E
            nmap = [-1] * E
            for i, e in enumerate(kept):
                kmap[e] = i
            for i, e in enumerate(sorted(perm[Kn:])):
                nmap[e] = i
            Km = E - Kn
            ws = Workspace(torch.device("cuda"))
            ws.reserve(max(tokens), topk, H, inter, max(Kn, Km, E))
            a = random_tier("nvfp4", Kn, H, inter, kmap, seed + 1)
            b = random_tier("nf3", Km, H, inter, nmap, seed + 2)
            a_only = random_tier("nvfp4", Kn, H, inter, list(range(Kn)), seed + 3)
            b_only = random_tier("nf3", Km, H, inter, list(range(Km)), seed + 4)
            ours = {
                "ours_hybrid": (LayerExecutor({0: TritonTier(a, ws), 1: TritonTier(b, ws)}, H), E),
                "ours_nf3_tier": (LayerExecutor({1: TritonTier(b_only, ws)}, H), Km),
                "ours_nvfp4_tier": (LayerExecutor({0: TritonTier(a_only, ws)}, H), Kn),
            }
            kept_t = torch.tensor(kept, device="cuda")
            nf3_t = torch.tensor(sorted(perm[Kn:]), device="cuda")
            per_a, per_b = _tier_bytes(a), _tier_bytes(b)
            stock = {}
            stock_specs = (("vllm_nvfp4", "nvfp4", E), ("vllm_nvfp4_nf3set", "nvfp4", Km),
                           ("vllm_nvfp4_keptset", "nvfp4", Kn), ("vllm_bf16", "bf16", E)) if with_stock else ()
            for name, kind, n_exp in stock_specs:
                fn, backend, per = stock_moe.build(kind, n_exp, H, inter, topk, seed)
                stock[name] = (fn, n_exp, per)
                stock_backends[f"{kind}:{shape['name']}:I{inter}:E{n_exp}"] = backend
            for m in tokens:
                x = (torch.randn(m, H, device="cuda") * 0.5).to(torch.bfloat16)
                routes = {n: random_routing(m, n, topk, seed + m) for n in {E, Km, Kn}}
                act = m * H * 2 * 2  # read x, write the output
                entries = []
                for name, (ex, n) in ours.items():
                    w, ids = routes[n]
                    if name == "ours_hybrid":
                        nbytes = _touched(ids, kept_t) * per_a + _touched(ids, nf3_t) * per_b
                    else:
                        nbytes = int(ids.unique().numel()) * (per_b if n == Km else per_a)
                    entries.append((name, lambda ex=ex, w=w, ids=ids: ex.forward(x, w, ids), nbytes + act))
                for name, (fn, n, per) in stock.items():
                    w, ids = routes[n]
                    entries.append((name, lambda fn=fn, w=w, ids=ids: fn(x, w, ids),
                                    int(ids.unique().numel()) * per + act))
                for name, fn, nbytes in entries:
                    us = time_graph(fn)
                    gbs = nbytes / (us * 1e-6) / 1e9
                    rows.append(dict(shape=shape["name"], inter=inter, tokens=m, contender=name, us=round(us, 2),
                                     bytes=nbytes, gbs=round(gbs, 1), frac_copy_bw=round(gbs / bw, 3)))
                log(_line(rows[-len(entries):]))
            del ours, stock, a, b, a_only, b_only, ws
            torch.cuda.empty_cache()
    res = {"device": dev, "capability": list(cap), "copy_gbs": round(bw, 1), "copy_gbs_by_method": copies,
           "stock_backends": stock_backends, "tile_override": triton_tiers.CONFIG_OVERRIDE,
           "rows": rows, "ratios": ratios(rows), "command": " ".join(sys.argv), "date": time.strftime("%Y-%m-%d")}
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"bench_moe_{tag}.json").write_text(json.dumps(res, indent=2) + "\n")
    plot(res, out / f"bench_moe_{tag}.png")
    log(table(res))
    return res


def _line(rows):
    r0 = rows[0]
    parts = [f"{r['contender']} {r['us']:.1f}us ({100 * r['frac_copy_bw']:.0f}%)" for r in rows]
    return f"{r0['shape']} I={r0['inter']} M={r0['tokens']}: " + ", ".join(parts)


def ratios(rows) -> List[dict]:
    """Per shape/M: stock NVFP4 time over ours (>1 means we are faster)."""
    idx = {(r["shape"], r["inter"], r["tokens"], r["contender"]): r for r in rows}
    out = []
    for (shape, inter, m, name), r in idx.items():
        if name != "ours_hybrid":
            continue
        get = lambda c: idx.get((shape, inter, m, c), {}).get("us")  # noqa: E731
        out.append(dict(
            shape=shape, inter=inter, tokens=m,
            hybrid_vs_stock_nvfp4=_div(get("vllm_nvfp4"), get("ours_hybrid")),
            nf3_tier_vs_stock_nvfp4=_div(get("vllm_nvfp4_nf3set"), get("ours_nf3_tier")),
            nvfp4_tier_vs_stock_nvfp4=_div(get("vllm_nvfp4_keptset"), get("ours_nvfp4_tier")),
            hybrid_vs_bf16=_div(get("vllm_bf16"), get("ours_hybrid")),
        ))
    return out


def _div(a, b):
    return round(a / b, 3) if a and b else None


def table(res) -> str:
    lines = [f"copy bandwidth {res['copy_gbs']} GB/s; stock backends: {sorted(set(res['stock_backends'].values()))}",
             "| shape | I | M | ours hybrid µs | stock NVFP4 µs | speed-up | NF3 tier speed-up | NVFP4 tier speed-up | vs bf16 | NF3 tier %BW | NVFP4 tier %BW |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    idx = {(r["shape"], r["inter"], r["tokens"], r["contender"]): r for r in res["rows"]}
    for q in res["ratios"]:
        k = (q["shape"], q["inter"], q["tokens"])
        h, s = idx[k + ("ours_hybrid",)], idx.get(k + ("vllm_nvfp4",), {})
        nf, kp = idx[k + ("ours_nf3_tier",)], idx[k + ("ours_nvfp4_tier",)]
        lines.append(f"| {q['shape']} | {q['inter']} | {q['tokens']} | {h['us']} | {s.get('us')} | "
                     f"{q['hybrid_vs_stock_nvfp4']} | {q['nf3_tier_vs_stock_nvfp4']} | {q['nvfp4_tier_vs_stock_nvfp4']} | "
                     f"{q['hybrid_vs_bf16']} | {100 * nf['frac_copy_bw']:.0f}% | {100 * kp['frac_copy_bw']:.0f}% |")
    return "\n".join(lines)


# the README's table: one column per contender, in this order
REPORT_COLUMNS = (("ours_nf3_tier", "our NF3 tier"), ("vllm_nvfp4_nf3set", "stock NVFP4, same 192 experts"),
                  ("ours_nvfp4_tier", "our NVFP4 tier"), ("vllm_nvfp4_keptset", "stock, 64 experts"),
                  ("ours_hybrid", "our hybrid layer"), ("vllm_nvfp4", "stock NVFP4, 256"), ("vllm_bf16", "vLLM bf16"))


def _benchmark_json(path: str) -> dict:
    """A benchmark result file (``run``'s JSON), or a ValueError naming the file."""
    try:
        res = json.loads(Path(path).read_text())
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: not JSON ({exc})") from exc
    missing = [k for k in ("device", "copy_gbs", "rows") if not isinstance(res, dict) or k not in res]
    if missing:
        raise ValueError(f"{path}: not a benchmark result (no {', '.join(missing)}; bench writes bench_moe_<tag>.json)")
    return res


def report(results: List[dict]) -> str:
    """The README's table from one or more benchmark JSONs of one device (e.g. a run at
    I=512 and 2048 and another at I=1024): median µs per contender, then the hybrid layer
    over Marlin by size. Written from the JSON so that a refreshed table is copied, not
    typed. A row one run lacks (e.g. --ours-only) shows "—"; the same (shape, I, tokens,
    contender) in two files, or files of different devices, is an error."""
    devices = sorted({r["device"] for r in results})
    if len(devices) != 1:
        raise ValueError(f"--report: one device per table, these JSONs come from {devices}")
    idx = {}
    for res in results:
        for r in res["rows"]:
            k = (r["shape"], r["inter"], r["tokens"], r["contender"])
            if k in idx:
                raise ValueError(f"--report: {k} is in more than one of these JSONs")
            idx[k] = r["us"]
    sizes = sorted({k[:3] for k in idx}, key=lambda k: (k[0] != "glm5.2", k[0], k[1], k[2]))
    cell = lambda k, c: f"{idx[k + (c,)]:.0f}" if k + (c,) in idx else "—"  # noqa: E731
    copy = ", ".join(f"{r['copy_gbs']:.0f}" for r in results)
    lines = [f"{devices[0]}; device-to-device copy {copy} GB/s; median µs, CUDA-graph replay", "",
             "| shape | per-rank I | tokens | " + " | ".join(name for _, name in REPORT_COLUMNS) + " | hybrid over stock |",
             "|" + " --- |" * (len(REPORT_COLUMNS) + 4)]
    for k in sizes:
        stock, ours = idx.get(k + ("vllm_nvfp4",)), idx.get(k + ("ours_hybrid",))
        ratio = stock / ours if stock and ours else None
        lines.append(f"| {k[0]} | {k[1]} | {k[2]} | " + " | ".join(cell(k, c) for c, _ in REPORT_COLUMNS)
                     + f" | {'—' if ratio is None else f'{ratio:.2f}×'} |")
    return "\n".join(lines)


def plot(res, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    keys = sorted({(r["shape"], r["inter"]) for r in res["rows"]})
    fig, axes = plt.subplots(1, len(keys), figsize=(5 * len(keys), 4), squeeze=False)
    for ax, (shape, inter) in zip(axes[0], keys):
        for name in ("ours_hybrid", "ours_nf3_tier", "ours_nvfp4_tier", "vllm_nvfp4", "vllm_bf16"):
            pts = [(r["tokens"], r["gbs"]) for r in res["rows"] if (r["shape"], r["inter"], r["contender"]) == (shape, inter, name)]
            if pts:
                ax.plot(*zip(*pts), marker="o", label=name)
        ax.axhline(res["copy_gbs"], color="k", ls="--", lw=1, label="D2D copy")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("tokens")
        ax.set_ylabel("GB/s of bytes that must be read")
        ax.set_title(f"{shape} I={inter}")
        ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


# both tiers' grouped GEMMs on the wgmma kernels (tile option wgmma; BM, wg_warps and
# wg_stages set per candidate): the Triton-tile keys are those the MXFP4 fallback reads
_WG = dict(BN13=64, BK13=64, BN2=128, BK2=64, warps=4, stages=3, magic=2, ptx=1, x16=1, ptx4=1, mma=1, mma_kept=1,
           wgmma=1)
# the small class's built-in tiles (triton_tiers._GROUPED_TILES)
_SMALL_MMA = dict(BM=16, BN13=64, BK13=128, BN2=64, BK2=128, warps=4, stages=3, ptx=1, ptx4=1, mma=1, mma_kept=1,
                  mma_split=2)
# candidate tile configs per batch class; "gemv" is the per-pair decode path, timed
# against the grouped path's "small" configs on the same token counts
SWEEP = {
    # the default's down tiles follow the intermediate size (triton_tiers.down_tiles); the
    # first candidate here is I=2048's, the last I=512's (session 9: ~10 % faster there at
    # 1-96 tokens, sweep_h200_s9c.json)
    "gemv": [dict(BN13=2, BK13=1024, BN2=8, BK2=512, warps=1),
             # session 5: smaller tiles with fewer registers on two warps were within 5 %
             # (bench_moe_h200_s5_gemv.json; ncu at 8 tokens: 4 of 16 warps per scheduler,
             # limited by registers, 42 % of cycles waiting on loads). Session 6: one-warp
             # programs 10-20 % faster (bench_moe_h200_s6_gemv1w.json); the weight loads
             # issued blocks ahead by Triton's pipeliner (async copies to shared memory,
             # 64-96 registers instead of 128) 12-90 % slower, and the top-k sum done by
             # the down GEMV's last program per tile (a barrier and a gpu-scope
             # acquire-release atomic per program) 6-18 % slower
             # (bench_moe_h200_s6_gemv_stages.json): both dropped
             # session 6, dropped: two routed pairs of one expert per program (weights read
             # and decoded once for both; 168 registers) — slower at every size, 1220 against
             # 1046 µs even at 64 tokens, where ~57 % of the routed pairs find an earlier pair
             # of their expert (bench_moe_h200_s6_pair2.json): the loop is bound by issue
             # and latency, not by the weight bytes
             # session 7 (sweep_h200_s7_gemv.json, after the flat loads): BN13=4/BK13=512,
             # BK13=512/BK2=256, BK13=2048 and PDL at every size 1-20 % slower than these
             # tiles; dropped: the activations loaded a K-step ahead like the weights (tile
             # option xpf, +16 registers a lane) 5-7 % slower at 1-64 tokens, with 512-wide
             # gate/up steps (80 registers) 7-15 % slower (sweep_h200_s7_xpf.json)
             dict(BN13=2, BK13=1024, BN2=4, BK2=512, warps=1),
             # the four decode launches chained by programmatic dependent launch (default:
             # up to 8 tokens, from SM90) against plain launches (bench_moe_h200_s6_pdl.json)
             # session 8 (sweep_h200_s8_pf.json, nibble layout): the next two K-blocks in
             # flight (+38 registers; code not kept) and BN13=1/BN2=4 2-10 % slower from two
             # tokens on
             dict(BN13=2, BK13=1024, BN2=8, BK2=512, warps=1, pdl=0),
             dict(BN13=2, BK13=1024, BN2=16, BK2=256, warps=1),
             dict(BN13=2, BK13=1024, BN2=32, BK2=128, warps=1),
             # session 19: each program bulk-prefetches its weight rows and scales over all
             # of K into L2 before its first load (SM90+; kernels/expert_gemv.py's
             # _prefetch_rows), at I=512's and I=2048's down tiles
             dict(BN13=2, BK13=1024, BN2=32, BK2=128, warps=1, l2pf=1),
             dict(BN13=2, BK13=1024, BN2=8, BK2=512, warps=1, l2pf=1),
             # session 20: register caps for more programs an SM (expert_gemv.register_caps),
             # at I=512's down tiles: all slower, 1-8 % at 8-16 tokens
             # (bench_moe_h200_s20_maxnreg.json)
             dict(BN13=2, BK13=1024, BN2=32, BK2=128, warps=1, maxnreg13=112, maxnreg2=112),
             dict(BN13=2, BK13=1024, BN2=32, BK2=128, warps=1, maxnreg13=104, maxnreg2=104),
             dict(BN13=2, BK13=1024, BN2=32, BK2=128, warps=1, maxnreg13=96, maxnreg2=96),
             dict(BN13=2, BK13=1024, BN2=32, BK2=128, warps=1, maxnreg13=128, maxnreg2=96),
             # session 26: the GEMVs' K a compile-time constant (expert_gemv.kconst_options;
             # compile_probe: NF3 loops 422 -> 403 / 430 -> 399 instructions, 128 -> 96
             # registers), both GEMVs at I=2048's and I=512's down tiles, then one at a time
             dict(BN13=2, BK13=1024, BN2=8, BK2=512, warps=1, kconst13=1, kconst2=1),
             dict(BN13=2, BK13=1024, BN2=32, BK2=128, warps=1, kconst13=1, kconst2=1),
             dict(BN13=2, BK13=1024, BN2=32, BK2=128, warps=1, kconst13=1),
             dict(BN13=2, BK13=1024, BN2=32, BK2=128, warps=1, kconst2=1),
             dict(BN13=2, BK13=1024, BN2=8, BK2=512, warps=1, kconst13=1),
             dict(BN13=2, BK13=1024, BN2=8, BK2=512, warps=1, kconst2=1),
             # session 26: the next K block's loads unmasked (expert_gemv.clamp_option;
             # compile_probe, tiled NF3, with kconst: NF3 loops 403 -> 366 instructions), with
             # and without kconst; built in beside kconst since session 29
             dict(BN13=2, BK13=1024, BN2=32, BK2=128, warps=1, clamp=1),
             dict(BN13=2, BK13=1024, BN2=32, BK2=128, warps=1, clamp=1, kconst13=1, kconst2=1),
             dict(BN13=2, BK13=1024, BN2=8, BK2=512, warps=1, clamp=1),
             dict(BN13=2, BK13=1024, BN2=8, BK2=512, warps=1, clamp=1, kconst13=1, kconst2=1),
             # session 27: the kept tier's e2m1 words two to a block (expert_gemv.e2m1x2_option;
             # compile_probe, Triton 3.6, with kconst and clamp: kept loops 421 -> 391
             # instructions, 96 -> 80 registers); built in beside kconst since session 29
             dict(BN13=2, BK13=1024, BN2=32, BK2=128, warps=1, e2m1x2=1),
             dict(BN13=2, BK13=1024, BN2=32, BK2=128, warps=1, e2m1x2=1, kconst13=1, kconst2=1),
             dict(BN13=2, BK13=1024, BN2=32, BK2=128, warps=1, e2m1x2=1, kconst13=1, kconst2=1, clamp=1),
             dict(BN13=2, BK13=1024, BN2=8, BK2=512, warps=1, e2m1x2=1, kconst13=1, kconst2=1),
             dict(BN13=2, BK13=1024, BN2=8, BK2=512, warps=1, e2m1x2=1, kconst13=1, kconst2=1, clamp=1),
             # session 29: the NF3 group block's four words summed in fp16 in one run
             # (expert_gemv.nf3x4_option; compile_probe, Triton 3.6, with kconst, clamp and
             # e2m1x2: NF3 loops 364 -> 349 gate/up, 367 -> 351-352 down), beside the built-in
             # options from 4 tokens, at both down tiles; session 30's H100 sweep: no faster
             dict(BN13=2, BK13=1024, BN2=32, BK2=128, warps=1, e2m1x2=1, kconst13=1, kconst2=1, clamp=1, nf3x4=1),
             dict(BN13=2, BK13=1024, BN2=8, BK2=512, warps=1, e2m1x2=1, kconst13=1, kconst2=1, clamp=1, nf3x4=1)],
    "small": [
        # the built-in tiles (both tiers on the mma kernels since session 10); the Triton
        # tiles below are far slower — session 18, I=2048, µs at 1 / 8 / 16 / 64 tokens: the
        # fastest of them (ptx4) 293 / 1008 / 1691 / 3659 (sweep's timings in
        # bench_moe_h200_s18_small_sweep_i2048.json) against 434 µs at 8 and 726 at 16 on
        # these (bench_moe_h200_s18_grouped_bounds.json)
        _SMALL_MMA,
        dict(BM=16, BN13=64, BK13=128, BN2=64, BK2=128, warps=4, stages=3, ptx=1),
        dict(BM=16, BN13=64, BK13=128, BN2=64, BK2=128, warps=4, stages=3, magic=1, ptx=1),
        dict(BM=16, BN13=32, BK13=256, BN2=64, BK2=256, warps=4, stages=2, ptx=1),
        # session 8: NVFP4 tiles decoded by the byte-permute block (ptx4), the default in
        # every grouped class (sweep_h200_s8_ptx4.json)
        dict(BM=16, BN13=64, BK13=128, BN2=64, BK2=128, warps=4, stages=3, ptx=1, ptx4=1),
        # session 21: two K steps of words in flight (mma_ahead; compile_probe, Triton 3.6,
        # tiled NF3 gate/up 96 -> 116 registers, NVFP4 121 -> 128 and 8 bytes of stack);
        # mma_ahead=1 is the built-in tiles again, last, to see the run's drift. H200
        # (bench_moe_h200_s21_ahead_i{512,2048}.json), µs at 1 / 8 / 16 / 64 tokens: I=512
        # 83.5 / 155 / 225 / 440 against 83-87 / 160-162 / 219-223 / 425-432, I=2048 150 /
        # 456 / 753 / 1631 against 153-160 / 445-446 / 726-730 / 1575-1584: slower from 16
        # tokens, so off
        dict(_SMALL_MMA, mma_ahead=2),
        dict(_SMALL_MMA, mma_split=1, mma_ahead=2),
        dict(_SMALL_MMA, mma_ahead=1),
        # session 21: fewer weight rows a program on fewer warps (mma_bn13 / mma_bn2 /
        # mma_warps): each program streams its rows' whole K, so at 12-64 tokens the
        # grid (experts hit × row tiles) is one to two waves of long programs
        # (bench_moe_h200_s21_grouped_bounds*.json.gz: the hybrid layer 167 → 205 µs from 10
        # to 12 tokens at I=512, the NF3-only layer 170 → 180); shorter programs would fill
        # the last wave finer.
        # compile_probe, Triton 3.6, tiled NF3 gate/up: 32 rows on two warps 116
        # registers, 16 on one 120 (64 on four: 96)
        # H200 (bench_moe_h200_s21_rows_i{512,2048}.json), µs at 1 / 8 / 16 / 64 tokens,
        # I=512: built-in 84 / 161 / 222 / 427, 32 rows 115 / 188 / 247 / 478, 16 rows 152 /
        # 245 / 300 / 539, 16 + 32 118 / 208 / 260 / 481; I=2048: built-in 147-157 / 437-458
        # / 717-741 / 1566-1612, 32 rows 169 / 500 / 805 / 1731 — slower everywhere: not
        # the waves. 128 rows on eight warps (the same 16 rows a warp, 94 registers, the
        # same 380-instruction loop: half the programs) slower too — I=512 109 / 160 / 238 /
        # 448 against 95-96 / 164 / 222-225 / 427-430, I=2048 146 / 468 / 764 / 1688 against
        # 151-161 / 437 / 716-722 / 1558-1568 (bench_moe_h200_s21_rows128_i*.json)
        dict(_SMALL_MMA, mma_bn13=32, mma_bn2=32, mma_warps=2),
        dict(_SMALL_MMA, mma_bn13=16, mma_bn2=16, mma_warps=1),
        dict(_SMALL_MMA, mma_bn13=16, mma_bn2=32, mma_warps=1),
        dict(_SMALL_MMA, mma_bn13=128, mma_bn2=128, mma_warps=8),
        dict(_SMALL_MMA, mma_split=1, mma_bn13=128, mma_bn2=128, mma_warps=8),
        dict(_SMALL_MMA, mma_warps=4),
        # session 21: the NF3 tier's kernels under a register cap (mma_nf3_maxnreg,
        # kernels/mma_tiles.py says why: six or eight programs an SM instead of five, and
        # has the H200's times: slower at every cap); 128 is above what they use, the
        # built-in tiles again
        dict(_SMALL_MMA, mma_nf3_maxnreg=80),
        dict(_SMALL_MMA, mma_nf3_maxnreg=72),
        dict(_SMALL_MMA, mma_nf3_maxnreg=64),
        dict(_SMALL_MMA, mma_nf3_maxnreg=128),
        # session 22: the next K step's activations loaded while this one is multiplied
        # (mma_xahead; the weights' words already are). compile_probe, Triton 3.6, tiled NF3
        # gate/up 96 -> 109 registers (five programs an SM -> four), loop 380 -> 393
        # instructions; down 56 -> 72. H200 (bench_moe_h200_s22_xahead{1,2}_i*.json, two
        # runs), µs at 1 / 8 / 16 / 64 tokens: I=512 82-95 / 154-161 / 224-225 / 433-438
        # against 85-93 / 162-163 / 220-225 / 425-431; I=2048 144-145 / 436-440 / 727-736 /
        # 1576-1586 against 150-154 / 436-440 / 717-721 / 1560-1568; split=1 and ahead=2 on
        # top 2-9 % slower: no gain, so off
        dict(_SMALL_MMA, mma_xahead=1),
        dict(_SMALL_MMA, mma_split=1, mma_xahead=1),
        dict(_SMALL_MMA, mma_ahead=2, mma_xahead=1),
        # session 23: each lane loads its own B fragment (mma_xreg: no shared memory, no
        # barrier, no ldmatrix). First with the activations in their original order (9402200:
        # a lane's four 16-byte runs 64 bytes apart): compile_probe, Triton 3.6, tiled NF3
        # gate/up 96 -> 90 registers, loop 380 -> 366 instructions; H200
        # (bench_moe_h200_s23_xreg1_i*.json) µs at 1 / 8 / 16 / 64 tokens, I=512 100 / 187 /
        # 271 / 501 against 94 / 162 / 223 / 428, I=2048 169 / 528 / 872 / 1876 against 143 /
        # 444 / 720 / 1563: 15-20 % slower. Then in fragment order (the four lanes' runs side
        # by side: 64 contiguous bytes of each token a load): gate/up 94 registers, loop 364,
        # I=512 94 / 165 / 238 / 431 against 92 / 161 / 220 / 428 (whole steps 83 / 155 /
        # 221 / 443), I=2048 162 / 460 / 746 / 1656 against 158 / 439 / 720 / 1570 (whole
        # steps 142 / 444 / 753 / 1695; bench_moe_h200_s23_xreg2_i*.json): no gain from 16
        # tokens, so off
        dict(_SMALL_MMA, mma_xreg=1),
        dict(_SMALL_MMA, mma_split=1, mma_xreg=1),
        dict(_SMALL_MMA, mma_ahead=2, mma_xreg=1),
        # session 23: the gate/up kernel's hidden dimension in 2 or 4 parts (mma_splitk:
        # their fp32 partial sums added and finished by a second kernel), for more warps in
        # flight — ncu at 16 tokens (session 20) had 7-15 warps an SM on these kernels.
        # compile_probe, Triton 3.6, tiled NF3: the same 96 registers, loop 380 -> 385.
        # H200 (bench_moe_h200_s23_splitk_i*.json) µs at 1 / 8 / 16 / 64 tokens: I=512
        # built-in 94 / 160 / 220 / 429, two parts 81 / 151 / 220 / 447, four 72 / 154 / 234
        # / 467; I=2048 151 / 445 / 729 / 1577, two parts 133 / 459 / 755 / 1640. Faster
        # only at the GEMV's token counts; splitk_walls_h200_s23.json: with the tiers one
        # after the other two parts gain 12 % at 16 tokens (I=512), with them concurrent
        # (the default) nothing — so off
        dict(_SMALL_MMA, mma_splitk=2),
        dict(_SMALL_MMA, mma_splitk=4),
        dict(_SMALL_MMA, mma_splitk=2, mma_xreg=1),
        dict(_SMALL_MMA, mma_splitk=4, mma_split=1),
        # session 23: the decode table's words in vector registers (mma_tabvec): ptxas had
        # copied one from a uniform register before each table lookup. compile_probe, Triton
        # 3.6: tiled NF3 gate/up loop 380 -> 347 instructions (96 registers), down 208 ->
        # 191; NVFP4 gate/up 426 -> 395 (121 -> 126 registers), down 229 -> 221. H200
        # (bench_moe_h200_s23_tabvec{1,2}_i*.json, two runs) µs at 8 / 16 / 64 tokens: I=512
        # 160 / 220-221 / 425-428 against 162-164 / 221-223 / 430-432; I=2048 436-448 /
        # 713-723 / 1561-1575 against 437-441 / 720-725 / 1577-1584; whole steps and
        # mma_xreg on top no better. Within the noise: off
        dict(_SMALL_MMA, mma_tabvec=1),
        dict(_SMALL_MMA, mma_split=1, mma_tabvec=1),
        dict(_SMALL_MMA, mma_xreg=1, mma_tabvec=1),
        # session 25: the next K step decoded while this one is multiplied (mma_dahead), for
        # a gate/up kernel whose ALU pipe the decode fills. compile_probe, Triton 3.6, tiled
        # NF3 gate/up: 96 -> 168 registers (three programs an SM instead of five), loop 380 ->
        # 477 instructions (PRMT 134 -> 176: the carried fp16 operands repacked). H200
        # (bench_moe_h200_s25_dahead_i*.json) µs at 8 / 16 / 64 tokens: I=512 198 / 272 / 540
        # against 163 / 223 / 428; I=2048 548 / 900 / 1964 against 439 / 717 / 1559 — off
        dict(_SMALL_MMA, mma_dahead=1),
        dict(_SMALL_MMA, mma_split=1, mma_dahead=1),
    ],
    # session 9 (sweep_h200_s9.json, _s9b.json): the mid tiles with 16-token blocks, from the
    # GEMV's end to 256 tokens
    "narrow": [
        dict(BM=16, BN13=64, BK13=64, BN2=128, BK2=64, warps=4, stages=3, magic=2, ptx=1, x16=1, ptx4=1),
        dict(BM=32, BN13=64, BK13=64, BN2=128, BK2=64, warps=4, stages=3, magic=2, ptx=1, x16=1, ptx4=1),
        dict(BM=16, BN13=64, BK13=128, BN2=64, BK2=128, warps=4, stages=3, ptx=1, ptx4=1),
        # session 12: the wgmma kernels (see "large") in the mma.sync kernels' block sizes
        # (compile_probe: gate/up 115 / 155 registers at BM=16 / 32); session 13, H200, I=512:
        # BM=16 619 / 637 µs at 128 / 256 tokens against mma.sync's 629 / 660, the default
        # (sweep_h200_s13_wgmma.json)
        dict(_WG, BM=16),
        dict(_WG, BM=32),
        # session 14: a 16-slot tail after each block's 16 (wg_tail, see "large"): an expert
        # with 17-32 pairs takes one block, its tail multiplied only then (compile_probe,
        # Triton 3.6: gate/up 128 registers, 492 NF3 loop instructions a K step against 437)
        dict(_WG, BM=16, wg_tail=16),
        # session 17: gate and up rows in one tile (wg_gu; compile_probe, Triton 3.6: NF3 tiled
        # gate/up 72 registers at 16 slots) — 569 / 562 / 608 against 524 / 540 / 593 µs
        # (sweep_h200_s17_gu.json; every class there)
        dict(_WG, BM=16, wg_gu=1),
        # session 15, dropped (the record of all three classes in docs/measurements.md):
        # each step's first MMA in flight while its second weight tile is decoded (wg_async,
        # s15_runs/wg_async.patch; the same bits) 625 / 642 / 703 against 632 / 650 / 711 µs;
        # the weight tiles through shared memory, every MMA asynchronous (wg_ashared,
        # s15_runs/wg_ashared.patch; the same bits) 919 / 935 / 1028 against 619 / 636 / 700
    ],
    "mid": [
        dict(BM=32, BN13=64, BK13=64, BN2=128, BK2=64, warps=4, stages=3, magic=1, ptx=1),
        dict(BM=32, BN13=64, BK13=64, BN2=128, BK2=64, warps=4, stages=3, magic=1, ptx=1, x16=1),
        dict(BM=64, BN13=64, BK13=64, BN2=128, BK2=64, warps=4, stages=3, magic=1, ptx=1),
        dict(BM=32, BN13=64, BK13=128, BN2=128, BK2=64, warps=4, stages=3, magic=1, ptx=1),
        dict(BM=64, BN13=64, BK13=64, BN2=64, BK2=64, warps=4, stages=3, magic=1, ptx=1, x16=1, swap13=1,
             swap2=1),
        # NVFP4 tiles scaled in fp16 (magic=2): compile_probe on Triton 3.6, NVFP4 w13 loop
        # 677 -> 573 SASS instructions, w2 689 -> 617; H200 1-2 % faster at every size
        # (sweep_h200_s7_magic2.json), the default since session 7
        dict(BM=32, BN13=64, BK13=64, BN2=128, BK2=64, warps=4, stages=3, magic=2, ptx=1, x16=1),
        dict(BM=32, BN13=64, BK13=64, BN2=128, BK2=64, warps=4, stages=3, magic=2, ptx=1, x16=1, ptx4=1),
        # session 12: the wgmma kernels (see "large"); session 13: BM=32 831 / 1114 µs at 768 /
        # 1024 tokens against mma.sync's 1057 / 1433 (BM=64 1113 / 1108), the default
        dict(_WG, BM=32),
        dict(_WG, BM=64),
        # session 13, dropped: the down GEMM four row tiles a program with the block's
        # intermediate resident in shared memory (wg2_rows; see "large") 853 / 1123 µs at
        # 768 / 1024 against 818 / 1108. Session 14: a 16-slot tail (wg_tail, see "large")
        # 829 / 897 against 822 / 1099 at 768 / 1024: from 769 tokens the wide class
        dict(_WG, BM=32, wg_tail=16),
        # session 15: capped at 128 registers (wg_maxnreg; compile_probe, Triton 3.6: NF3
        # gate/up 146 -> 128 registers without a spill, NVFP4 163 -> 128 with 64 bytes of
        # stack): four programs an SM instead of three, and slower — 817 / 843 against 791 /
        # 819 µs at 640 / 768 (sweep_h200_s15_maxnreg.json). Dropped: wg_async 789 / 828
        # against 785 / 829, wg_ashared 1071 / 1131 (one buffer) and 1269 / 1330 (two)
        # against 780 / 821 (see "narrow")
        dict(_WG, BM=32, wg_maxnreg=128),
        # session 17: gate and up rows in one tile (wg_gu) — 775 / 779 against 686 / 720 µs
        dict(_WG, BM=32, wg_gu=1),
    ],
    # session 14: the mid class's blocks with a 16-slot tail, on wgmma only (triton_tiers:
    # WGMMA_MID_TOKENS to WIDE_TOKENS; compile_probe, Triton 3.6: gate/up 167 registers
    # against 155, 501 NF3 loop instructions a K step against 425)
    "wide": [
        dict(_WG, BM=32, wg_tail=16),
        dict(_WG, BM=32, wg_tail=32),
        dict(_WG, BM=64, wg_tail=16),
        # session 15: capped at 128 registers (wg_maxnreg; compile_probe, Triton 3.6: NF3
        # gate/up 167 -> 128 registers with 80 bytes of stack and 18 local loads in a
        # 550-instruction K step, NVFP4 128 bytes): four programs an SM instead of three,
        # and slower — 1023 / 1151 against 910 / 1020 µs at 1024 / 1280. Dropped: wg_async
        # 961 / 1080 against 902 / 1014, wg_ashared 1405 / 1588 against 899 / 1015
        dict(_WG, BM=32, wg_tail=16, wg_maxnreg=128),
        # session 17: gate and up rows in one tile (wg_gu; compile_probe, Triton 3.6: NF3 tiled
        # gate/up 96 registers at 32 + 16 slots against 167) — 874 / 1014 against 818 / 935 µs
        dict(_WG, BM=32, wg_tail=16, wg_gu=1),
    ],
    "large": [
        dict(BM=64, BN13=64, BK13=64, BN2=128, BK2=64, warps=4, stages=3, magic=1, ptx=1),
        dict(BM=64, BN13=64, BK13=64, BN2=128, BK2=64, warps=4, stages=3, magic=1, ptx=1, x16=1),
        dict(BM=64, BN13=64, BK13=64, BN2=128, BK2=64, warps=4, stages=4, magic=1, ptx=1),
        dict(BM=64, BN13=64, BK13=128, BN2=128, BK2=64, warps=4, stages=3, magic=1, ptx=1),
        # fewer token blocks per expert (~64 routed pairs per expert at 2048 tokens, ~128
        # at 4096): each weight tile decoded fewer times
        dict(BM=128, BN13=64, BK13=64, BN2=128, BK2=64, warps=8, stages=3, magic=1, ptx=1),
        dict(BM=128, BN13=64, BK13=64, BN2=128, BK2=64, warps=4, stages=3, magic=1, ptx=1),
        dict(BM=128, BN13=64, BK13=64, BN2=64, BK2=64, warps=4, stages=2, magic=1, ptx=1),
        # activations on the left of the products (the dequantized tile the shared-memory
        # operand): compile_probe, w13 loop 418 -> 332 SASS instructions, its four MMAs
        # issued back to back instead of each waited for; BN2=128 with swap2 does not
        # compile (Triton 3.8: "Illegal shared layout")
        dict(BM=64, BN13=64, BK13=64, BN2=128, BK2=64, warps=4, stages=3, magic=1, ptx=1, x16=1, swap13=1),
        dict(BM=64, BN13=64, BK13=64, BN2=64, BK2=64, warps=4, stages=3, magic=1, ptx=1, x16=1, swap13=1,
             swap2=1),
        dict(BM=128, BN13=128, BK13=64, BN2=64, BK2=64, warps=8, stages=3, magic=1, ptx=1, x16=1, swap13=1,
             swap2=1),
        dict(BM=64, BN13=64, BK13=64, BN2=128, BK2=64, warps=4, stages=3, magic=2, ptx=1, x16=1),
        dict(BM=64, BN13=64, BK13=64, BN2=128, BK2=64, warps=4, stages=3, magic=2, ptx=1, x16=1, ptx4=1),
        # session 12: both tiers on the wgmma kernels
        # (kernels/wgmma_gluon.py), 64-256 tokens a block, each weight decoded once per block
        # (~64 routed pairs per expert at 2048 tokens, ~128 at 4096); compile_probe, SM90,
        # gate/up kernel: BM=64 on four warps 168 registers (Triton 3.8; 221 on 3.6), BM=128
        # on eight 255 without spills, 437 NF3 loop instructions per 128-wide K step either way.
        # Session 13, H200, I=512, µs at 2048 / 4096 tokens: 1608 / 3253, three stages 1596 /
        # 3212 (the default), BM=128 2409 / 4803, three stages 2466 / 4932; mma.sync 2420 / 4857
        dict(_WG, BM=64),
        dict(_WG, BM=64, wg_stages=3),
        dict(_WG, BM=128, wg_warps=8),
        dict(_WG, BM=128, wg_warps=8, wg_stages=3),
        # session 13, dropped: the down GEMM's row tiles four (or eight) a program with the
        # block's whole intermediate resident in shared memory (wg2_rows, built after ncu at
        # 2048 tokens had the NF3 tier's down GEMM at 516 µs beside its gate/up GEMM's 676,
        # streaming each block's intermediate once per 64 rows): correct on the H200, slower —
        # 1705 / 3411 (four) and 1672 / 3381 (eight) against 1599 / 3225 µs
        # (sweep_h200_s14_wg2_rows.json; the kernel is gone since, its record in
        # docs/measurements.md). Session 14: each block 16 or 32 slots longer (wg_tail), the
        # tail multiplied from the same decoded weights only when it holds a pair — at 2048
        # tokens an expert gets 64 ± 8 pairs, so with 64-slot blocks ~1.5 blocks an expert
        # decode its weights, with 80 slots ~1.03 (compile_probe, Triton 3.6: NF3 gate/up
        # 232 registers against 168 — two programs an SM instead of three — NVFP4 243 against
        # 221; 32 slots: 255)
        dict(_WG, BM=64, wg_stages=3, wg_tail=16),
        dict(_WG, BM=64, wg_tail=16),
        dict(_WG, BM=64, wg_stages=3, wg_tail=32),
        # (on eight warps, two warpgroups sharing the activations: 1479 / 2866 against 1317 /
        # 2604, sweep_h200_s14_warps_tail.json). Built in session 14, not yet run: the 64 + 16
        # tiles capped at 168 registers (wg_maxnreg; compile_probe, Triton 3.6: three
        # programs an SM instead of two, NF3 gate/up 72 bytes spilled and 16 local loads in a
        # 558-instruction K step, NVFP4 128 bytes and 29). Run in session 15: slower —
        # 1479 / 2897 against 1310 / 2604 µs at 2048 / 4096 (I=2048 4966 / 10687 against
        # 4711 / 9809; sweep_h200_s15_maxnreg*.json): more programs an SM do not help, the
        # L1 data pipe is what they share (docs/measurements.md, session 15). Dropped in
        # session 15: wg_async 1335 / 2630 against 1313 / 2601, wg_ashared 1810 / 3566 (one
        # buffer) and 1859 / 3694 (two) against 1300 / 2590 (see "narrow")
        dict(_WG, BM=64, wg_tail=16, wg_maxnreg=168),
        # session 17: gate and up rows in one tile (wg_gu; compile_probe, Triton 3.6: NF3 tiled
        # gate/up 127 registers at 64 + 16 slots against 221, four programs an SM instead of
        # two) — 1296 against 1219 µs at 2048 tokens; 128 + 16 slots over 4096-token chunks
        # (each weight decoded once; bench_moe_h200_s17_huge.json) 2678 against 2508 µs in
        # two passes of 64 + 16 (mma_tiles.wgmma_gu)
        dict(_WG, BM=64, wg_tail=16, wg_gu=1),
        # session 13, dropped: the MMAs asynchronous, overlapping the next step's decode
        # (its wg_async, s13_runs/wg_async.patch): wrong results on the H200, and no faster as
        # timed — 1622 / 3270 µs at 2048 / 4096 against 1615 / 3231 (BM=64), BM=128 on
        # eight warps 2382 / 4751 (sweep_h200_s13_async_wgmma.json)
        # session 7, dropped: the MMAs as Ampere-style mma.sync instead of warpgroup MMAs
        # (DISABLE_MMA_V3=1, a Triton environment switch: 230 registers, w13 loop 396 -> 605
        # SASS instructions) — 2187 / 4258 µs at 512 / 2048 tokens against 1913 / 3148
        # (bench_moe_h200_s7_mmav2.json); eight warps (the down tile then fed from registers,
        # no 16-bit shared stores) 14-34 % slower, BN2=64/BK2=128 2 % slower
        # (sweep_h200_s7_large8w.json)
    ],
}
# token counts each class is timed at: inside the class (a candidate replaces only its own
# class's tiles; 512 and 1024 had been left in "mid" and "large" when session 11 moved the
# bounds, so there every candidate was timed on the class below's built-in tiles)
SWEEP_TOKENS = {"gemv": (1, 2, 4, 8, 16, 32, 64, 96), "small": (1, 8, 16, 64), "narrow": (128, 256, 384),
                "mid": (640, 768), "wide": (1024, 1280), "large": (2048, 4096)}


def sweep_candidates(cls: str, builtin: dict, only: str = None) -> list:
    """A class's candidates (SWEEP); with ``only``, its built-in tiles first (the baseline)
    and then just the candidates that set that tile option."""
    if not only:
        return list(SWEEP[cls])
    return [dict(builtin)] + [c for c in SWEEP[cls] if c.get(only)]


def sweep(inter=512, log=print, classes=None, only=None) -> dict:
    """Times the hybrid layer (GLM-5.2 shape) under each candidate tile configuration
    (per token count, so the choice can be read off) and returns the fastest per batch
    class by the sum over its token counts of time / best time at that count. The
    decode classes are timed with the per-pair path on ("gemv") and off ("small").
    ``only``: a tile option; then a class's candidates are its built-in tiles and the
    candidates that set that option (fewer kernels to compile on the device); the GEMV's
    built-in tiles are then timed as they are at each token count
    (triton_tiers.gemv_config; the trial says ``builtin_by_tokens``, its ``cfg`` is one
    token's)."""
    from .backends import triton_tiers
    from .backends import executor as executor_mod
    from .kernels import mma_tiles
    from .backends.executor import LayerExecutor
    from .backends.triton_tiers import TritonTier, Workspace

    H, E, Kn, topk = GLM52["hidden"], GLM52["experts"], GLM52["kept"], GLM52["topk"]
    kmap = [i if i < Kn else -1 for i in range(E)]
    nmap = [i - Kn if i >= Kn else -1 for i in range(E)]
    ws = Workspace(torch.device("cuda"))
    ws.reserve(4096, topk, H, inter, E,
               block_sizes=[mma_tiles.block_slots(c) for cs in SWEEP.values() for c in cs if "BM" in c])
    ex = LayerExecutor({0: TritonTier(random_tier("nvfp4", Kn, H, inter, kmap, 1), ws),
                        1: TritonTier(random_tier("nf3", E - Kn, H, inter, nmap, 2), ws)}, H)
    chosen, trials = {}, []
    default = {"gemv": triton_tiers.kernel_config(1, False, inter),
               **triton_tiers.class_tiles(False)}
    gemv_tokens, by_inter = executor_mod.GEMV_TOKENS, triton_tiers.GEMV_TOKENS_BY_INTER
    for cls in SWEEP:
        if classes and cls not in classes:
            continue
        cands = sweep_candidates(cls, default[cls], only)
        executor_mod.GEMV_TOKENS = gemv_tokens if cls == "gemv" else 0
        # the GEMV's tiles timed up to GEMV_TOKENS at every intermediate size
        triton_tiers.GEMV_TOKENS_BY_INTER = () if cls == "gemv" else by_inter
        per_m = []
        for i, cfg in enumerate(cands):
            triton_tiers.CONFIG_OVERRIDE = {**default, cls: cfg}
            by_tokens = cls == "gemv" and bool(only) and i == 0  # the built-in GEMV tiles
            times = {}
            for m in SWEEP_TOKENS[cls]:
                if by_tokens:
                    # the built-in GEMV tiles as they are at m tokens (options by token count)
                    triton_tiers.CONFIG_OVERRIDE = {**default, cls: triton_tiers.gemv_config(m, inter)}
                w, ids = random_routing(m, E, topk, m)
                x = (torch.randn(m, H, device="cuda") * 0.5).to(torch.bfloat16)
                times[m] = round(time_graph(lambda: ex.forward(x, w, ids), iters=15), 1)
            per_m.append((cfg, times))
            trials.append(dict(cls=cls, cfg=cfg, us=times, **({"builtin_by_tokens": True} if by_tokens else {})))
            log(f"sweep {cls} {cfg}: {times}")
        best_at = {m: min(t[m] for _, t in per_m) for m in SWEEP_TOKENS[cls]}
        chosen[cls] = min(per_m, key=lambda ct: sum(ct[1][m] / best_at[m] for m in best_at))[0]
    executor_mod.GEMV_TOKENS, triton_tiers.GEMV_TOKENS_BY_INTER = gemv_tokens, by_inter
    triton_tiers.CONFIG_OVERRIDE = {**default, **chosen}
    return {"chosen": chosen, "trials": trials, "inter": inter}


# the token counts ``bench --breakdown`` profiles unless --tokens names others
BREAKDOWN_TOKENS = (1, 8, 64, 2048)


def breakdown(inter=512, tokens=BREAKDOWN_TOKENS, log=print) -> dict:
    """Per-kernel GPU time of one hybrid layer call (GLM-5.2 shape) from torch.profiler:
    where the time goes, for tuning (run on the H200: w13 is ~70 % of the layer)."""
    from torch.profiler import ProfilerActivity, profile

    from .backends.executor import LayerExecutor
    from .backends.triton_tiers import TritonTier, Workspace

    H, E, Kn, topk = GLM52["hidden"], GLM52["experts"], GLM52["kept"], GLM52["topk"]
    kmap = [i if i < Kn else -1 for i in range(E)]
    nmap = [i - Kn if i >= Kn else -1 for i in range(E)]
    ws = Workspace(torch.device("cuda"))
    ws.reserve(max(tokens), topk, H, inter, E)
    ex = LayerExecutor({0: TritonTier(random_tier("nvfp4", Kn, H, inter, kmap, 1), ws),
                        1: TritonTier(random_tier("nf3", E - Kn, H, inter, nmap, 2), ws)}, H)
    out = {}
    for m in tokens:
        w, ids = random_routing(m, E, topk, m)
        x = (torch.randn(m, H, device="cuda") * 0.5).to(torch.bfloat16)
        for _ in range(3):
            ex.forward(x, w, ids)
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(10):
                ex.forward(x, w, ids)
            torch.cuda.synchronize()
        rows = {}
        for ev in prof.key_averages():
            t = getattr(ev, "device_time_total", None) or getattr(ev, "cuda_time_total", 0)
            if t:
                rows[ev.key] = round(t / 10, 2)
        out[m] = rows
        log(f"M={m}: " + ", ".join(f"{k} {v}us" for k, v in sorted(rows.items(), key=lambda kv: -kv[1])[:8]))
    return {"inter": inter, "per_call_us": out}


def use_tiles(result: dict) -> dict:
    """Applies the grouped classes' tiles a sweep chose (its JSON: ``kernel_configs.chosen``)
    so a later run (say, the one with vLLM's Marlin MoE beside ours) times the same tiles
    without sweeping again. The per-pair decode path ("gemv") keeps its own tiles."""
    from .backends import triton_tiers

    chosen = result.get("kernel_configs", result).get("chosen")
    if not isinstance(chosen, dict) or not chosen:
        raise ValueError("--tiles: no kernel_configs.chosen in this JSON (write it with bench --sweep)")
    grouped = {c: dict(t) for c, t in chosen.items() if c != "gemv"}
    unknown = set(grouped) - set(triton_tiers.class_tiles(False))
    if unknown:
        raise ValueError(f"--tiles: unknown batch classes {sorted(unknown)}")
    triton_tiers.CONFIG_OVERRIDE = {**triton_tiers.class_tiles(False), **grouped}
    return grouped


def set_gemv_tokens(n: int):
    """Moves the decode-path threshold, to n for every intermediate size (the workspace
    sizes its per-pair buffer from it)."""
    from .backends import executor as executor_mod
    from .backends import triton_tiers

    triton_tiers.GEMV_TOKENS = executor_mod.GEMV_TOKENS = n
    triton_tiers.GEMV_TOKENS_BY_INTER = ()


def main(args) -> int:
    if args.report:
        print(report([_benchmark_json(f) for f in args.report]))
        return 0
    if args.gemv_tokens is not None:
        set_gemv_tokens(args.gemv_tokens)
    from .backends import triton_tiers

    # all read when a workspace is planned
    if args.chunk_tokens is not None:
        if args.chunk_tokens < 1:
            raise ValueError(f"--chunk-tokens {args.chunk_tokens}: at least 1")
        triton_tiers.CHUNK_TOKENS = args.chunk_tokens
    if args.tiers == "serial":
        triton_tiers.CONCURRENT_TIERS = False
    elif args.tiers == "concurrent":
        triton_tiers.SERIAL_TIERS_FROM_INTER = None
    if args.pair_rows is not None:
        triton_tiers.PAIR_ROWS_DTYPE = {"fp32": torch.float32, "bf16": torch.bfloat16}[args.pair_rows]
    shapes = [GLM52, TINY] if args.shape == "all" else [GLM52 if args.shape == "glm5.2" else TINY]
    if args.inter:
        shapes = [dict(s, inters=tuple(args.inter)) for s in shapes]
    tokens = tuple(args.tokens) if args.tokens else TOKENS
    if args.breakdown:
        if not args.ours_only:
            from .vllm_patch import stock_moe

            stock_moe.init_single_gpu()
        res = breakdown(inter=args.inter[0] if args.inter else 512,
                        tokens=tuple(args.tokens) if args.tokens else BREAKDOWN_TOKENS)
        Path(args.out_dir).mkdir(parents=True, exist_ok=True)
        Path(args.out_dir, f"kernel_breakdown_{args.tag}.json").write_text(json.dumps(res, indent=2) + "\n")
        return 0
    if args.tiles:
        use_tiles(json.loads(Path(args.tiles).read_text()))
    swept = None
    if args.sweep:
        if not args.ours_only:
            from .vllm_patch import stock_moe

            stock_moe.init_single_gpu()
        swept = sweep(inter=args.inter[0] if args.inter else 512, classes=args.sweep_classes, only=args.sweep_only)
    res = run(shapes, tokens, args.out_dir, args.tag, with_stock=not args.ours_only)
    if swept is not None:
        res["kernel_configs"] = swept
        Path(args.out_dir, f"bench_moe_{args.tag}.json").write_text(json.dumps(res, indent=2) + "\n")
    return 0
