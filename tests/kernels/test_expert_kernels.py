"""Triton tier kernels vs the reference backend (dequantize + float32 matmul).

On a GPU-less machine these run under TRITON_INTERPRET=1 (set by tests/conftest.py;
the kernels dot in float32 there); on the GPU host the same tests run the compiled
kernels, plus the ``gpu``-marked ones at GLM-5.2 shapes. Scratch and outputs are
poisoned before every run, so a row the kernels forget to write fails.
"""
import pytest
import torch

from nf3_hybrid.backends.executor import LayerExecutor
from nf3_hybrid.backends.ref import RefBackend
from nf3_hybrid.backends.triton_tiers import CapacityError, TritonTier, Workspace
from tests.kernels.tiers import gemv_up_to, make_tier, routing, split_experts

DEV = "cuda" if torch.cuda.is_available() else "cpu"
TOL = 1.5e-2  # bf16 activations, bf16 intermediate cache and output


def poison(ws):
    ws.inter_cache.fill_(float("nan"))
    for t in (ws.planes, ws.pair_inter, ws.pair_rows):
        t.fill_(float("nan"))
    ws.sorted_ids.fill_(-7)
    ws.block_expert.fill_(123456)


def rel(a, b):
    return float((a.float() - b.float()).norm() / b.float().norm().clamp_min(1e-30))


def build(kept_fmt, n_kept, num_experts, hidden, inter, max_tokens, topk, seed=0, codebook=None, nf3_layout=None):
    """``nf3_layout``: the NF3 tier's (default: HYBRID_NF3_LAYOUT's, tiled where it fits)."""
    kmap, nmap = split_experts(num_experts, n_kept, seed)
    a = make_tier(kept_fmt, n_kept, hidden, inter, kmap, DEV, seed + 1)
    b = make_tier("nf3", num_experts - n_kept, hidden, inter, nmap, DEV, seed + 2, codebook)
    ws = Workspace(torch.device(DEV))  # private workspace per test
    ws.reserve(max_tokens, topk, hidden, inter, max(n_kept, num_experts - n_kept))
    ref = LayerExecutor({0: RefBackend(a), 1: RefBackend(b)}, hidden)
    tri = LayerExecutor({0: TritonTier(a, ws), 1: TritonTier(b, ws, nf3_layout=nf3_layout)}, hidden)
    return ref, tri, ws


@pytest.mark.parametrize("kept_fmt", ["nvfp4", "mxfp4_e8m0k32"])
@pytest.mark.parametrize("m,topk", [(1, 1), (1, 8), (3, 4), (17, 2), (33, 3), (70, 8)])
def test_hybrid_layer_matches_reference(kept_fmt, m, topk, monkeypatch):
    """The per-pair GEMV up to 24 tokens (the most any layer takes it: GEMV_TOKENS), the
    grouped path at 33 and 70. Under the interpreter the GEMV costs per routed pair: 33
    tokens of top-3 on it took 40 s a test, on the grouped path 9 s."""
    gemv_up_to(monkeypatch, 24)
    ref, tri, ws = build(kept_fmt, 5, 16, 128, 64, max(64, m), 8, seed=m)
    assert tri.fused and tri.graph_safe
    w, ids = routing(m, 16, topk, seed=m, device=DEV)
    x = (torch.randn(m, 128, generator=torch.Generator().manual_seed(m)) * 2).to(torch.bfloat16).to(DEV)
    poison(ws)
    out = tri.forward(x, w, ids)
    assert torch.isfinite(out).all()
    assert rel(out, ref.forward(x, w, ids)) < TOL


@pytest.mark.parametrize("inter,up_to", [(256, 24), (512, 16), (1024, 12), (2048, 8)])
def test_the_decode_gemv_gives_way_to_the_grouped_tiles_sooner_the_wider_the_layer(inter, up_to, monkeypatch):
    """triton_tiers.GEMV_TOKENS_BY_INTER (session 18's H200 crossovers, I=1024 and 2048 moved
    in session 29 after the GEMV's clamp and e2m1x2 defaults): a layer of per-rank
    intermediate size ``inter`` takes the per-pair GEMV up to ``up_to`` tokens and the
    grouped path from one more, is warmed up on both sides of that bound, and a benchmark's
    --gemv-tokens N (bench.set_gemv_tokens) moves the bound to N whatever the size. The
    paths' launches are recorded, not run (the kernels have their own tests)."""
    from nf3_hybrid import bench
    from nf3_hybrid.backends import executor, triton_tiers

    for name in ("GEMV_TOKENS", "GEMV_TOKENS_BY_INTER"):
        monkeypatch.setattr(triton_tiers, name, getattr(triton_tiers, name))
    monkeypatch.setattr(executor, "GEMV_TOKENS", executor.GEMV_TOKENS)
    ref, tri, ws = build("nvfp4", 2, 4, 64, inter, 64, 2, seed=5)
    took = []
    monkeypatch.setattr(executor, "run_decode", lambda *a: took.append(("gemv", a[3].shape[0])))
    monkeypatch.setattr(executor, "run_chunk", lambda tiers, maps, x, *a, **k: took.append(("grouped", x.shape[0])))
    for m in (up_to, up_to + 1):
        w, ids = routing(m, 4, 2, seed=m, device=DEV)
        tri.forward(torch.zeros(m, 64, dtype=torch.bfloat16, device=DEV), w, ids)
    assert took == [("gemv", up_to), ("grouped", up_to + 1)]
    assert tri.gemv_tokens() == up_to and not tri.can_mark(up_to) and tri.can_mark(up_to + 1)
    monkeypatch.setattr(executor, "interpret", lambda: False)  # what warm-up skips under the interpreter
    monkeypatch.setattr(executor, "_compiled", set())
    took.clear()
    tri.warmup(4, 2)
    assert ("gemv", 1) in took and ("grouped", up_to + 1) in took and all(n != up_to for _, n in took)
    # and where the GEMV's built-in options change with the token count (K a constant)
    assert all(("gemv", n) in took for n in triton_tiers.gemv_variant_tokens(inter))
    assert (("gemv", triton_tiers.GEMV_KCONST_FROM_TOKENS) in took) == (inter < triton_tiers.GEMV_KCONST_FROM_INTER)
    bench.set_gemv_tokens(20)
    assert tri.gemv_tokens() == 20


def test_only_the_large_class_on_wgmma_runs_its_tiers_one_after_the_other_from_the_measured_width(monkeypatch):
    """triton_tiers.tiers_concurrently (session 30, H100: at I=2048 the large class's tiers
    on two streams took 12-15 % longer than one after the other; every other class and
    width gained from the overlap): serial only for the large class on the wgmma kernels
    from SERIAL_TIERS_FROM_INTER, at every width above it; None turns the rule off (bench
    --tiers concurrent). The classes are the ones grouped_class gives (a renamed class
    would leave the rule naming nothing)."""
    from nf3_hybrid.backends import triton_tiers

    monkeypatch.setattr(triton_tiers, "SERIAL_TIERS_FROM_INTER", triton_tiers.SERIAL_TIERS_FROM_INTER)
    start = triton_tiers.SERIAL_TIERS_FROM_INTER
    assert start == 2048
    classes = {triton_tiers.grouped_class(m, True) for m in triton_tiers.class_sizes(True)}
    assert "large" in classes
    for cls in classes:
        for inter in (start // 2, start, 2 * start):
            assert triton_tiers.tiers_concurrently(cls, inter, False)
            serial = cls == "large" and inter >= start
            assert triton_tiers.tiers_concurrently(cls, inter, True) == (not serial)
    monkeypatch.setattr(triton_tiers, "SERIAL_TIERS_FROM_INTER", None)
    assert all(triton_tiers.tiers_concurrently(cls, 2 * start, True) for cls in classes)


@pytest.mark.parametrize("kept_fmt,m", [("nvfp4", 1), ("nvfp4", 64), ("mxfp4_e8m0k32", 5), ("mxfp4_e8m0k32", 40)])
def test_grouped_decode_tiles(kept_fmt, m, monkeypatch):
    """Decode-sized batches through the grouped kernels' small tiles (the per-pair path
    switched off; a tier sharing its output with another backend runs these): correct and
    reproducible. The split-K tiles these replaced failed exactly here on the H200 from
    40 tokens on, with run-to-run different results."""
    from nf3_hybrid.backends import executor

    monkeypatch.setattr(executor, "GEMV_TOKENS", 0)
    ref, tri, ws = build(kept_fmt, 6, 16, 128, 64, 64, 4, seed=m + 50)
    w, ids = routing(m, 16, 4, seed=m, device=DEV)
    x = (torch.randn(m, 128, generator=torch.Generator().manual_seed(m)) * 2).to(torch.bfloat16).to(DEV)
    for on_input in (False, True):
        poison(ws)
        got = tri.forward(x, w, ids, on_input)
        assert rel(got, ref.forward(x, w, ids, on_input)) < TOL
        if DEV == "cuda":  # the interpreter runs programs one after another
            assert torch.equal(tri.forward(x, w, ids, on_input), got)


@pytest.mark.parametrize("n_kept", [0, 16])
def test_one_tier_empty(n_kept):
    ref, tri, ws = build("nvfp4", n_kept, 16, 128, 64, 16, 4)
    w, ids = routing(7, 16, 4, seed=3, device=DEV)
    x = torch.randn(7, 128).to(torch.bfloat16).to(DEV)
    poison(ws)
    assert rel(tri.forward(x, w, ids), ref.forward(x, w, ids)) < TOL


def test_custom_codebook_and_weights_on_input():
    cb = (-1.0, -0.7, -0.4, -0.12, 0.12, 0.4, 0.7, 1.0)
    ref, tri, ws = build("nvfp4", 4, 16, 128, 64, 16, 4, codebook=cb)
    w, ids = routing(5, 16, 4, seed=5, device=DEV)
    x = torch.randn(5, 128).to(torch.bfloat16).to(DEV)
    for on_input in (False, True):
        poison(ws)
        assert rel(tri.forward(x, w, ids, on_input), ref.forward(x, w, ids, on_input)) < TOL


def test_tokens_beyond_one_chunk_and_capacity():
    ref, tri, ws = build("nvfp4", 4, 16, 128, 64, 40, 4)
    ws.chunk = 16  # force three passes over the scratch
    w, ids = routing(40, 16, 4, seed=9, device=DEV)
    x = torch.randn(40, 128).to(torch.bfloat16).to(DEV)
    poison(ws)
    assert rel(tri.forward(x, w, ids), ref.forward(x, w, ids)) < TOL
    w, ids = routing(41, 16, 4, seed=9, device=DEV)
    with pytest.raises(CapacityError, match="a batch of 41 tokens exceeds the planned capacity of 40"):
        tri.forward(torch.zeros(41, 128, dtype=torch.bfloat16, device=DEV), w, ids)


def test_decode_path_refuses_more_tokens_than_its_scratch(monkeypatch):
    """The GEMV's scratch is sized from the threshold when the workspace is planned; a
    threshold raised later must give a clear error, not writes past the scratch (what an
    experiment script of session 9 did on the H200: an illegal memory access)."""
    from nf3_hybrid.backends import triton_tiers

    monkeypatch.setattr(triton_tiers, "GEMV_TOKENS", 16)
    _, tri, ws = build("nvfp4", 4, 16, 128, 64, 80, 4)
    assert ws.planes.shape[1] == 16
    gemv_up_to(monkeypatch, 64)
    w, ids = routing(30, 16, 4, seed=4, device=DEV)
    with pytest.raises(CapacityError, match="decode path got 30 tokens; its scratch was planned for 16"):
        tri.forward(torch.zeros(30, 128, dtype=torch.bfloat16, device=DEV), w, ids)


@pytest.mark.parametrize("m", [5, 70])
def test_output_reproducible_and_experts_of_no_tier_skipped(m, monkeypatch):
    """Two experts belong to neither tier (expert parallelism: another rank holds them):
    their pairs contribute nothing, and their never-written (poisoned) pair rows are not
    read. Two runs of one batch give the same bits (rows summed in slot order), with the
    sort order of the routing in between scrambled by other batches."""
    gemv_up_to(monkeypatch, 64)
    kmap, nmap = split_experts(16, 5, 7)
    for g in (3, 11):
        kmap[g] = nmap[g] = -1
    kmap, nmap = ([-1 if v < 0 else sum(u >= 0 for u in mp[:i]) for i, v in enumerate(mp)] for mp in (kmap, nmap))
    a = make_tier("nvfp4", max(kmap) + 1, 128, 64, kmap, DEV, 8)
    b = make_tier("nf3", max(nmap) + 1, 128, 64, nmap, DEV, 9)
    ws = Workspace(torch.device(DEV))
    ws.reserve(80, 4, 128, 64, 16)
    ref = LayerExecutor({0: RefBackend(a), 1: RefBackend(b)}, 128)
    tri = LayerExecutor({0: TritonTier(a, ws), 1: TritonTier(b, ws)}, 128)
    w, ids = routing(m, 16, 4, seed=m + 1, device=DEV)
    ids[0, 0], ids[-1, -1] = 3, 11
    x = torch.randn(m, 128, generator=torch.Generator().manual_seed(m)).to(torch.bfloat16).to(DEV)
    poison(ws)
    first = tri.forward(x, w, ids)
    assert torch.isfinite(first).all()
    assert rel(first, ref.forward(x, w, ids)) < TOL
    w2, ids2 = routing(m, 16, 4, seed=m + 2, device=DEV)
    tri.forward(x.flip(0), w2, ids2)
    poison(ws)
    assert torch.equal(tri.forward(x, w, ids), first)


@pytest.mark.parametrize("m", [3, 70])
def test_bf16_pair_rows_give_the_reference_result_within_one_more_rounding(m, monkeypatch):
    """triton_tiers.PAIR_ROWS_DTYPE bf16 (the default since session 18): the workspace holds
    the per-pair rows in bf16, every down kernel stores them so (decode GEMV at 3 tokens,
    grouped path at 70), the top-k sum still adds in fp32 — the reference's result, and
    within about a bf16 rounding of the fp32 rows' output."""
    gemv_up_to(monkeypatch, 16)
    _check_bf16_pair_rows(monkeypatch, m, experts=16, n_kept=6, hidden=128, inter=64, max_tokens=80, topk=4,
                          seed=31, routing_seed=m + 5)


def _check_bf16_pair_rows(monkeypatch, m, experts, n_kept, hidden, inter, max_tokens, topk, seed, routing_seed):
    """One layer run with fp32 and with bf16 pair rows (a workspace planned for each): the
    bf16 rows' output is the reference's and within about one bf16 rounding of the fp32
    rows' output."""
    from nf3_hybrid.backends import triton_tiers

    got = {}
    for dtype in (torch.float32, torch.bfloat16):
        monkeypatch.setattr(triton_tiers, "PAIR_ROWS_DTYPE", dtype)
        ref, tri, ws = build("nvfp4", n_kept, experts, hidden, inter, max_tokens, topk, seed=seed)
        assert ws.pair_rows.dtype == dtype
        w, ids = routing(m, experts, topk, seed=routing_seed, device=DEV)
        x = (torch.randn(m, hidden, generator=torch.Generator().manual_seed(m)) * 2).to(torch.bfloat16).to(DEV)
        poison(ws)
        got[dtype] = tri.forward(x, w, ids)
    assert torch.isfinite(got[torch.bfloat16]).all()
    assert rel(got[torch.bfloat16], ref.forward(x, w, ids)) < TOL
    assert rel(got[torch.bfloat16], got[torch.float32]) < 2 ** -7, rel(got[torch.bfloat16], got[torch.float32])


@pytest.mark.parametrize("kept_fmt,m,cls", [("nvfp4", 3, "gemv"), ("mxfp4_e8m0k32", 70, "grouped")])
def test_sizes_not_a_multiple_of_the_tiles(kept_fmt, m, cls, monkeypatch):
    """Hidden and intermediate sizes that are multiples of 32 only (all the formats need;
    gpt-oss has hidden 2880) under the H200's tile shapes (K steps of 64-1024, N tiles of
    up to 128 rows): the kernels must cover N and K in tiles that divide them. They did
    not: a K step read past the rows (NaN), a 128-row tile of a 160-row output left 32
    rows unwritten."""
    from nf3_hybrid.backends import triton_tiers

    if cls == "gemv":
        # the H200's GEMV tiles are 2-8 rows wide: too many programs for the interpreter
        tiles = triton_tiers.kernel_config(1, False) if DEV == "cuda" else dict(BN13=64, BK13=1024, BN2=128,
                                                                                  BK2=512, warps=4)
    else:
        gemv_up_to(monkeypatch, 64)
        cls = triton_tiers.grouped_class(m)
        tiles = triton_tiers._GROUPED_TILES[cls]
    monkeypatch.setattr(triton_tiers, "CONFIG_OVERRIDE", {cls: dict(tiles)})
    ref, tri, ws = build(kept_fmt, 5, 16, 160, 96, 80, 4, seed=m)
    w, ids = routing(m, 16, 4, seed=m, device=DEV)
    x = (torch.randn(m, 160, generator=torch.Generator().manual_seed(m)) * 2).to(torch.bfloat16).to(DEV)
    poison(ws)
    out = tri.forward(x, w, ids)
    assert torch.isfinite(out).all()
    assert rel(out, ref.forward(x, w, ids)) < TOL


@pytest.mark.parametrize("block", [16, 80])
def test_routing_fills_each_experts_slots_in_order_in_blocks_of_any_size(block):
    """kernels/align.py for both tiers at once: each local expert's pairs (and no others)
    in a prefix of its run of whole blocks, the rest padding, every block mapped to its
    expert and the blocks past the end to −1. The wgmma tails (80 = 64 + 16 slots) rely on
    the prefix: a block's tail is empty exactly when its first tail slot is padding."""
    from nf3_hybrid.kernels import align
    from nf3_hybrid.backends.triton_tiers import _bins

    e, m, topk = 12, 150, 4
    ids = torch.randint(0, e, (m * topk,), generator=torch.Generator().manual_seed(block)).to(torch.int32).to(DEV)
    p = ids.numel()
    maps = torch.tensor([[i if i < 5 else -1 for i in range(e)], [i - 5 if i >= 5 else -1 for i in range(e)]],
                        dtype=torch.int32, device=DEV)
    n_local = torch.tensor([5, 7], dtype=torch.int32, device=DEV)
    cap, blocks = align.capacity(p, 7, block)
    nb = _bins(7)
    sorted_ids = torch.full((2, cap), -7, dtype=torch.int32, device=DEV)
    bexp = torch.full((2, blocks), 99, dtype=torch.int32, device=DEV)
    scratch = [torch.zeros((2, nb), dtype=torch.int32, device=DEV) for _ in range(3)]
    align.launch(ids, maps, n_local, sorted_ids, bexp, *scratch, block)
    srt, bexp, ids = sorted_ids.cpu(), bexp.cpu(), ids.cpu()
    for t in range(2):
        slot = 0
        for loc in range(int(n_local[t])):
            mine = [q for q in range(p) if int(maps[t, ids[q]]) == loc]
            n_blocks = -(-len(mine) // block)
            run = srt[t, slot: slot + n_blocks * block]
            assert sorted(run[: len(mine)].tolist()) == mine and (run[len(mine):] == p).all(), (t, loc)
            assert (bexp[t, slot // block: slot // block + n_blocks] == loc).all()
            slot += n_blocks * block
        assert (bexp[t, slot // block:] == -1).all() and (srt[t, slot:] == p).all()


def test_workspace_grows_once_and_holds_a_row_per_routed_pair():
    ws = Workspace(torch.device(DEV))
    assert ws.reserve(5000, 8, 128, 64, 12)
    assert not ws.reserve(100, 4, 128, 32, 3)  # covered already: nothing reallocated
    assert ws.chunk == 2048 and ws.pair_rows.shape == (2048 * 8, 128)
    assert ws.nbytes() >= ws.pair_rows.numel() * ws.pair_rows.element_size() + ws.inter_cache.numel() * 2
    assert ws.reserve(5000, 8, 256, 64, 12) and ws.pair_rows.shape == (2048 * 8, 256)


def test_single_tier_backend_adds_into_a_shared_output():
    """run_into (the path used when the other tier runs on another backend)."""
    kmap, nmap = split_experts(16, 6, 4)
    b = make_tier("nf3", 10, 128, 64, nmap, DEV, 4)
    ws = Workspace(torch.device(DEV))
    ws.reserve(8, 4, 128, 64, 10)
    w, ids = routing(8, 16, 4, seed=4, device=DEV)
    x = torch.randn(8, 128).to(torch.bfloat16).to(DEV)
    base = torch.randn(8, 128, device=DEV)
    got, want = base.clone(), base.clone()
    TritonTier(b, ws).run_into(got, x, w, ids)
    RefBackend(b).run_into(want, x, w, ids)
    assert rel(got - base, want - base) < TOL


_GLM = {}


@pytest.mark.gpu
@pytest.mark.parametrize("inter", [2048, 1024, 512])
def test_glm5_shapes_on_gpu(inter):
    """GLM-5.2 per-rank shapes (TP 1/2/4): 64 NVFP4 + 192 NF3 experts, top-8, hidden 6144."""
    if DEV != "cuda":
        pytest.skip("GPU shapes")
    ref, tri, ws = build("nvfp4", 64, 256, 6144, inter, 8192, 8, seed=inter)
    # both sides of each path switch; 4097 and 8192: several passes over the scratch
    for m in (1, 8, 23, 24, 25, 63, 64, 65, 257, 577, 1025, 2048, 4097, 8192):
        w, ids = routing(m, 256, 8, seed=m, device=DEV)
        x = (torch.randn(m, 6144, device=DEV) * 2).to(torch.bfloat16)
        poison(ws)
        assert rel(tri.forward(x, w, ids), ref.forward(x, w, ids)) < TOL, m


@pytest.mark.gpu
@pytest.mark.parametrize("m", [1, 8, 64, 112, 200, 300])
def test_cuda_graph_replay_gives_the_eager_bits(m):
    """What vLLM runs: the layer captured in a CUDA graph and replayed on new inputs — the
    decode path with its launches chained by programmatic dependent launch (up to 8 tokens)
    and the grouped path. Replays must give the same bits as eager calls on the same
    inputs (a missing wait on the kernel before would read stale activations)."""
    if DEV != "cuda":
        pytest.skip("CUDA graphs")
    ref, tri, ws = build("nvfp4", 64, 256, 6144, 512, 512, 8, seed=60 + m)
    assert ws.pdl == (torch.cuda.get_device_capability()[0] >= 9)
    x = torch.zeros(m, 6144, device=DEV, dtype=torch.bfloat16)
    w, ids = routing(m, 256, 8, seed=m, device=DEV)
    tri.forward(x, w, ids)  # compile outside the capture
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        out = tri.forward(x, w, ids)
    for seed in (1, 2):
        new_w, new_ids = routing(m, 256, 8, seed=m * 10 + seed, device=DEV)
        x.copy_((torch.randn(m, 6144, device=DEV, generator=torch.Generator(device=DEV).manual_seed(seed)) * 2)
                .to(torch.bfloat16))
        w.copy_(new_w)
        ids.copy_(new_ids)
        g.replay()
        torch.cuda.synchronize()
        eager = tri.forward(x, w, ids)
        assert torch.equal(out, eager), (m, seed)
        assert rel(eager, ref.forward(x, w, ids)) < TOL


@pytest.mark.parametrize("kept_fmt", ["nvfp4", "mxfp4_e8m0k32"])
def test_e2m1_decoded_by_shifts(kept_fmt, monkeypatch):
    """The "magic" tile option (e2m1 → fp16 bits by shifts instead of a table lookup)
    gives the reference's result in the grouped kernels' decode and narrow classes (the
    per-pair GEMV has no such option); scaled in fp16 (magic=2, NVFP4; MXFP4 falls back
    to 1) it gives the same bits as scaled in fp32 — both are exact."""
    from nf3_hybrid.backends import triton_tiers

    interp = triton_tiers.interpret()
    from nf3_hybrid.backends import executor

    monkeypatch.setattr(executor, "GEMV_TOKENS", 16)  # 20 tokens: the grouped decode tiles
    ref, tri, ws = build(kept_fmt, 9, 16, 128, 64, 80, 4, seed=77)
    got = {}
    for magic in (1, 2):
        cfgs = {triton_tiers.grouped_class(m): dict(triton_tiers.grouped_config(m, interp), magic=magic)
                for m in (20, 70)}
        monkeypatch.setattr(triton_tiers, "CONFIG_OVERRIDE", cfgs)
        for m in (20, 70):
            w, ids = routing(m, 16, 4, seed=m, device=DEV)
            x = (torch.randn(m, 128, generator=torch.Generator().manual_seed(m)) * 2).to(torch.bfloat16).to(DEV)
            poison(ws)
            got[magic, m] = tri.forward(x, w, ids)
            assert rel(got[magic, m], ref.forward(x, w, ids)) < TOL, (magic, m)
    for m in (20, 70):
        assert torch.equal(got[1, m], got[2, m]), m


@pytest.mark.parametrize("kept_fmt", ["nvfp4", "mxfp4_e8m0k32"])
def test_activations_on_the_left_of_the_products(kept_fmt, monkeypatch):
    """Tile options swap13 / swap2 (x·Wᵀ instead of W·xᵀ: the dequantized tile becomes the
    shared-memory operand of the warpgroup MMA) give the reference's result, alone and
    together, with the default orientation's value to within bf16 rounding."""
    from nf3_hybrid.backends import triton_tiers

    interp = triton_tiers.interpret()
    gemv_up_to(monkeypatch, 24)
    ref, tri, ws = build(kept_fmt, 6, 16, 128, 64, 1000, 4, seed=41)
    # the mid and large classes on the GPU; under the interpreter, whose time goes by the
    # programs, 40 tokens: 160 routed pairs over 16 experts, about a 16-token block each
    # (70 tokens, about two blocks each, took 45-97 s a test; 40 take ~21 s)
    for m in (40,) if interp else (300, 1000):
        w, ids = routing(m, 16, 4, seed=m, device=DEV)
        x = (torch.randn(m, 128, generator=torch.Generator().manual_seed(m)) * 2).to(torch.bfloat16).to(DEV)
        want = ref.forward(x, w, ids)
        base = triton_tiers.grouped_config(m, interp)
        cls = triton_tiers.grouped_class(m)
        got = {}
        for opts in ({}, {"swap13": 1}, {"swap2": 1}, {"swap13": 1, "swap2": 1, "BN2": 32 if interp else 64}):
            monkeypatch.setattr(triton_tiers, "CONFIG_OVERRIDE", {cls: dict(base, **opts)})
            poison(ws)
            got[tuple(opts)] = out = tri.forward(x, w, ids)
            assert rel(out, want) < TOL, (m, opts)
            assert rel(out, got[()]) < 5e-3, (m, opts)


@pytest.mark.parametrize("kept_fmt", ["nvfp4", "mxfp4_e8m0k32"])
def test_activations_converted_to_fp16_once_per_chunk(kept_fmt, monkeypatch):
    """Tile option x16: the grouped kernels of the fp16 tiers read a per-chunk fp16 copy of
    the activations instead of converting the bf16 ones in every program's K loop (the
    MXFP4 tier, which dots in bf16, keeps reading them). Same result as without; on the
    GPU the same bits (the kernels converted to fp16 anyway)."""
    from nf3_hybrid.backends import triton_tiers

    interp = triton_tiers.interpret()
    gemv_up_to(monkeypatch, 64)
    ref, tri, ws = build(kept_fmt, 5, 16, 128, 64, 80, 4, seed=31)
    w, ids = routing(70, 16, 4, seed=70, device=DEV)
    x = (torch.randn(70, 128, generator=torch.Generator().manual_seed(70)) * 2).to(torch.bfloat16).to(DEV)
    got = {}
    for x16 in (0, 1):
        monkeypatch.setattr(triton_tiers, "CONFIG_OVERRIDE",
                            {triton_tiers.grouped_class(70): dict(triton_tiers.grouped_config(70, interp), x16=x16)})
        poison(ws)
        got[x16] = tri.forward(x, w, ids)
        assert (ws.x16 is None) == (x16 == 0)  # made on first use only
    assert torch.equal(ws.x16[:70], x.half())
    assert rel(got[1], ref.forward(x, w, ids)) < TOL
    if DEV == "cuda":
        assert torch.equal(got[1], got[0])


def test_profiling_marks_only_where_all_four_are_recorded(monkeypatch):
    """HYBRID_PROFILE times a call only if the executor records all four marks: the
    fused path does in one pass; a batch above the chunk (vLLM's memory-profiling dummy
    batch on the H200, which crashed the first GPU profile run) is left unprofiled."""
    from tests.unit.test_profile import FakeEvent

    from nf3_hybrid.backends import executor

    monkeypatch.setattr(executor, "GEMV_TOKENS", 16)
    _, tri, ws = build("nvfp4", 4, 16, 128, 64, 40, 4)
    ws.chunk = 32
    assert tri.can_mark(30) and not tri.can_mark(33) and not tri.can_mark(4)
    w, ids = routing(30, 16, 4, seed=2, device=DEV)
    evs = [FakeEvent() for _ in range(4)]
    tri.forward(torch.randn(30, 128).to(torch.bfloat16).to(DEV), w, ids, marks=evs)
    assert all(e.t is not None for e in evs)


def _grouped_only(monkeypatch, cls, tokens, n_kept, seed, wgmma=False, nf3_layout=None):
    """A hybrid layer (GPU tiles, hidden 1024, I 512, 64 experts, top-8) whose every batch
    takes the grouped path, and each grouped class's default tiles; ``tokens`` must all
    fall in class ``cls``. Without ``wgmma`` its tiers are kept off the wgmma kernels (on
    the H200 they would take them, with their own tiles and class bounds, in place of the
    mma.sync or Triton tiles a test compares)."""
    from nf3_hybrid.backends import executor, triton_tiers

    monkeypatch.setattr(executor, "GEMV_TOKENS", 0)
    ref, tri, ws = build("nvfp4", n_kept, 64, 1024, 512, 2048, 8, seed=seed, nf3_layout=nf3_layout)
    if not wgmma:
        for t in tri.triton:
            t.wgmma = False
    classes = triton_tiers.class_tiles(False)
    assert all(triton_tiers.grouped_class(m, triton_tiers.all_wgmma(tri.triton)) == cls for m in tokens)
    return ref, tri, ws, classes


@pytest.mark.gpu
@pytest.mark.parametrize("cls,tokens", [("small", (5, 17, 64)), ("narrow", (65, 200, 576)), ("mid", (577, 1024)),
                                        ("large", (1025, 2048))])
def test_nf3_tiles_decoded_in_registers_on_gpu(monkeypatch, cls, tokens):
    """The grouped path with the NF3 tile decoded by inline PTX (tile option ``ptx``; the
    Triton interpreter has no inline assembly, so this runs on the GPU host only): against
    the reference, and against the same tiles decoded from the table in memory."""
    if DEV != "cuda":
        pytest.skip("inline PTX needs the GPU")
    from nf3_hybrid.backends import triton_tiers

    ref, tri, ws, classes = _grouped_only(monkeypatch, cls, tokens, n_kept=16, seed=9)
    errs = {}
    for m in tokens:
        w, ids = routing(m, 64, 8, seed=m, device=DEV)
        x = (torch.randn(m, 1024, device=DEV) * 2).to(torch.bfloat16)
        got = {}
        for ptx in (0, 1):
            monkeypatch.setattr(triton_tiers, "CONFIG_OVERRIDE",
                                {**classes, cls: dict(classes[cls], ptx=ptx, mma=0, mma_kept=0)})
            poison(ws)
            got[ptx] = tri.forward(x, w, ids)
        want = ref.forward(x, w, ids)
        errs[m] = (rel(got[0], want), rel(got[1], want), rel(got[1], got[0]))
    print(cls, errs)
    assert all(e[1] < TOL and e[2] < TOL for e in errs.values()), errs


@pytest.mark.gpu
@pytest.mark.parametrize("cls,tokens", [("small", (5, 64)), ("narrow", (65, 576)), ("mid", (577, 600)),
                                        ("large", (1025, 2048))])
def test_nvfp4_tiles_decoded_in_registers_on_gpu(monkeypatch, cls, tokens):
    """The grouped path's NVFP4 tile decoded by the byte-permute PTX block (tile option
    ``ptx4``; GPU only: the interpreter has no inline assembly) gives the bits of the
    shift decoding scaled in fp16 (``magic=2``): the same exact values and products in the
    same order — and the reference's result."""
    if DEV != "cuda":
        pytest.skip("inline PTX needs the GPU")
    from nf3_hybrid.backends import triton_tiers

    ref, tri, ws, classes = _grouped_only(monkeypatch, cls, tokens, n_kept=24, seed=19)
    for m in tokens:
        w, ids = routing(m, 64, 8, seed=m + 1, device=DEV)
        x = (torch.randn(m, 1024, device=DEV) * 2).to(torch.bfloat16)
        got = {}
        for opts in (dict(magic=2, ptx4=0), dict(magic=0, ptx4=1)):
            monkeypatch.setattr(triton_tiers, "CONFIG_OVERRIDE",
                                {**classes, cls: dict(classes[cls], mma=0, mma_kept=0, **opts)})
            poison(ws)
            got[opts["ptx4"]] = tri.forward(x, w, ids)
        assert torch.equal(got[0], got[1]), (cls, m, rel(got[1], got[0]))
        assert rel(got[1], ref.forward(x, w, ids)) < TOL, (cls, m)


@pytest.mark.gpu
@pytest.mark.parametrize("cls,tokens", [("small", (25, 33, 64)), ("narrow", (65, 575)), ("mid", (577, 1024)),
                                        ("large", (1025, 2048))])
@pytest.mark.parametrize("on_input", [False, True])
def test_mma_tiles_match_the_triton_tiles_and_the_reference(monkeypatch, cls, tokens, on_input):
    """The grouped GEMMs on the mma kernels (kernels/mma_tiles.py; GPU only: Gluon has no
    interpreter), both tiers on them: against the reference and against the Triton tiles,
    routing weights applied after the down GEMM or on the input."""
    if DEV != "cuda":
        pytest.skip("the mma kernels need the GPU")
    from nf3_hybrid.backends import triton_tiers

    ref, tri, ws, classes = _grouped_only(monkeypatch, cls, tokens, n_kept=24, seed=29)
    assert all(t.mma for t in tri.triton), "the mma kernels should run on this GPU"
    for m in tokens:
        w, ids = routing(m, 64, 8, seed=m + 3, device=DEV)
        x = (torch.randn(m, 1024, device=DEV) * 2).to(torch.bfloat16)
        got = {}
        for mma in (0, 1):
            monkeypatch.setattr(triton_tiers, "CONFIG_OVERRIDE",
                                {**classes, cls: dict(classes[cls], mma=mma, mma_kept=mma)})
            poison(ws)
            got[mma] = tri.forward(x, w, ids, weights_on_input=on_input)
        want = ref.forward(x, w, ids, weights_on_input=on_input)
        assert not torch.isnan(got[1]).any()
        assert rel(got[1], want) < TOL and rel(got[1], got[0]) < TOL, (cls, m, rel(got[1], want), rel(got[1], got[0]))


def _mma_settings_agree(monkeypatch, cls, m, on_input, seed, settings):
    """The hybrid layer on the grouped path (``_grouped_only``: class ``cls``, both tiers on
    the mma.sync kernels) once per tile-option setting (extra keys over the class's
    built-in tiles), the same layer and inputs each time: every setting gives the first
    one's bits, and the reference's result. The tile options this serves change registers,
    loads or which program computes a row, never the products or their order. Returns the
    workspace and the input, for checks of what the last setting left there."""
    if DEV != "cuda":
        pytest.skip("the mma kernels need the GPU")
    from nf3_hybrid.backends import triton_tiers

    ref, tri, ws, classes = _grouped_only(monkeypatch, cls, (m,), n_kept=24, seed=seed)
    w, ids = routing(m, 64, 8, seed=m + seed, device=DEV)
    x = (torch.randn(m, 1024, device=DEV) * 2).to(torch.bfloat16)
    got = []
    for extra in settings:
        monkeypatch.setattr(triton_tiers, "CONFIG_OVERRIDE",
                            {**classes, cls: dict(classes[cls], mma=1, mma_kept=1, **extra)})
        poison(ws)
        got.append(tri.forward(x, w, ids, weights_on_input=on_input))
    for extra, g in zip(settings[1:], got[1:]):
        assert torch.equal(g, got[0]), (cls, m, extra, rel(g, got[0]))
    assert rel(got[0], ref.forward(x, w, ids, weights_on_input=on_input)) < TOL
    return ws, x


@pytest.mark.gpu
@pytest.mark.parametrize("cls,m", [("narrow", 300), ("mid", 800), ("large", 1500)])
@pytest.mark.parametrize("on_input", [False, True])
def test_mma_split_k_steps_give_the_whole_step_bits(monkeypatch, cls, m, on_input):
    """Tile option ``mma_split`` (each 128-wide K step multiplied in two halves) issues the
    same products in the same order: the same bits as whole steps."""
    _mma_settings_agree(monkeypatch, cls, m, on_input, 31, [dict(mma_split=1), dict(mma_split=2)])


@pytest.mark.gpu
@pytest.mark.parametrize("cap", [80, 64])
@pytest.mark.parametrize("m", [5, 40])
@pytest.mark.parametrize("on_input", [False, True])
def test_mma_kernels_under_an_nf3_register_cap_give_the_uncapped_bits(monkeypatch, cap, m, on_input):
    """Tile option ``mma_nf3_maxnreg`` (the NF3 tier's mma.sync kernels compiled under a
    register cap, spilling what does not fit) changes the registers, not the products."""
    _mma_settings_agree(monkeypatch, "small", m, on_input, 43, [dict(mma_nf3_maxnreg=None), dict(mma_nf3_maxnreg=cap)])


@pytest.mark.gpu
@pytest.mark.parametrize("rows13,rows2,warps", [(32, 32, 2), (16, 16, 1), (16, 32, 1), (128, 128, 8)])
@pytest.mark.parametrize("m", [5, 40])
@pytest.mark.parametrize("on_input", [False, True])
def test_mma_row_tiles_on_fewer_warps_give_the_four_warp_bits(monkeypatch, rows13, rows2, warps, m, on_input):
    """Tile options ``mma_bn13`` / ``mma_bn2`` / ``mma_warps`` (fewer weight rows a
    program of the mma.sync kernels, on fewer warps) change which program computes a row,
    not its products or their order: the bits of the built-in 64 rows on four warps."""
    _mma_settings_agree(monkeypatch, "small", m, on_input, 41,
                        [dict(), dict(mma_bn13=rows13, mma_bn2=rows2, mma_warps=warps)])


@pytest.mark.gpu
@pytest.mark.parametrize("cls,m", [("small", 40), ("narrow", 300)])
@pytest.mark.parametrize("split", [1, 2])
@pytest.mark.parametrize("on_input", [False, True])
def test_mma_words_two_steps_ahead_give_the_one_step_bits(monkeypatch, cls, m, split, on_input):
    """Tile option ``mma_ahead`` 2 (the mma.sync kernels keep two K steps of words in
    flight) only loads earlier: the same bits as one step ahead."""
    _mma_settings_agree(monkeypatch, cls, m, on_input, 37,
                        [dict(mma_split=split, mma_ahead=1), dict(mma_split=split, mma_ahead=2)])


@pytest.mark.gpu
@pytest.mark.parametrize("cls,m", [("small", 5), ("small", 40), ("narrow", 300)])
@pytest.mark.parametrize("split", [1, 2])
@pytest.mark.parametrize("on_input", [False, True])
def test_mma_activations_a_step_ahead_give_the_same_bits(monkeypatch, cls, m, split, on_input):
    """Tile option ``mma_xahead`` (the next K step's activations loaded while this one is
    multiplied) only loads earlier: the same bits as loading them when they are used."""
    _mma_settings_agree(monkeypatch, cls, m, on_input, 47,
                        [dict(mma_split=split), dict(mma_split=split, mma_xahead=1)])


@pytest.mark.gpu
@pytest.mark.parametrize("cls,m", [("small", 5), ("small", 40), ("narrow", 300)])
@pytest.mark.parametrize("split", [1, 2])
@pytest.mark.parametrize("on_input", [False, True])
def test_mma_register_loaded_activations_give_the_same_bits(monkeypatch, cls, m, split, on_input):
    """Tile option ``mma_xreg`` (each lane loads its B fragment from the activations in
    fragment order, no shared memory; the intermediate in that order too) feeds the same
    values to the same MMAs: the same bits as the built-in path — and the activations it
    left in scratch are in fragment order (so the option did run)."""
    from nf3_hybrid.kernels import mma_tiles

    ws, x = _mma_settings_agree(monkeypatch, cls, m, on_input, 53,
                                [dict(mma_split=split), dict(mma_split=split, mma_xreg=1)])
    k = x.shape[1]
    assert torch.equal(ws.x_mma[:m, :k], x.to(torch.float16)[:, mma_tiles.fragment_order(k).to(x.device)])


@pytest.mark.gpu
@pytest.mark.parametrize("cls,m", [("small", 5), ("small", 40), ("narrow", 300)])
@pytest.mark.parametrize("extra", [dict(mma_split=1), dict(mma_split=2), dict(mma_xreg=1), dict(mma_splitk=2)])
@pytest.mark.parametrize("on_input", [False, True])
def test_mma_table_in_vector_registers_gives_the_same_bits(monkeypatch, cls, m, extra, on_input):
    """Tile option ``mma_tabvec`` (the decode table's words held in vector registers)
    only changes where ptxas keeps them: the same bits as the scalar table."""
    if cls == "narrow" and "mma_splitk" in extra:
        pytest.skip("mma_splitk serves decode batches only")
    _mma_settings_agree(monkeypatch, cls, m, on_input, 61, [dict(extra), dict(extra, mma_tabvec=1)])


@pytest.mark.gpu
@pytest.mark.parametrize("cls,m", [("small", 5), ("small", 40), ("narrow", 300)])
@pytest.mark.parametrize("split", [1, 2])
@pytest.mark.parametrize("on_input", [False, True])
def test_mma_next_step_decoded_ahead_gives_the_same_bits(monkeypatch, cls, m, split, on_input):
    """Tile option ``mma_dahead`` (the gate/up kernel decodes the next K step while this
    one is multiplied) only decodes earlier: the same values into the same MMAs, the same
    bits as decoding each step when it is multiplied."""
    _mma_settings_agree(monkeypatch, cls, m, on_input, 67,
                        [dict(mma_split=split), dict(mma_split=split, mma_dahead=1)])


@pytest.mark.gpu
@pytest.mark.parametrize("m", [5, 40, 64])
@pytest.mark.parametrize("parts,extra", [(2, {}), (4, {}), (2, dict(mma_xreg=1)), (4, dict(mma_split=1, mma_ahead=2))])
@pytest.mark.parametrize("on_input", [False, True])
def test_mma_split_k_gives_the_unsplit_layer_within_fp32_rounding(monkeypatch, m, parts, extra, on_input):
    """Tile option ``mma_splitk`` (the gate/up kernel's hidden dimension in 2 or 4 parts
    whose fp32 partial sums a second kernel adds and finishes): only the order of the fp32
    additions changes, so the layer agrees with the unsplit one to fp32 rounding (a
    few fp16 intermediates may round the other way) and with the reference; the same bits
    on every run (the parts are added in part order); and the partials scratch was used."""
    if DEV != "cuda":
        pytest.skip("the mma kernels need the GPU")
    from nf3_hybrid.backends import triton_tiers

    ref, tri, ws, classes = _grouped_only(monkeypatch, "small", (m,), n_kept=24, seed=59)
    w, ids = routing(m, 64, 8, seed=m + 59, device=DEV)
    x = (torch.randn(m, 1024, device=DEV) * 2).to(torch.bfloat16)
    got = []
    for cfg in (dict(extra), dict(extra, mma_splitk=parts), dict(extra, mma_splitk=parts)):
        monkeypatch.setattr(triton_tiers, "CONFIG_OVERRIDE",
                            {**classes, "small": dict(classes["small"], mma=1, mma_kept=1, **cfg)})
        poison(ws)
        if ws.partials is not None:
            ws.partials.fill_(float("nan"))
        got.append(tri.forward(x, w, ids, weights_on_input=on_input))
    assert ws.partials is not None and ws.partials.shape[1] >= parts * 2 * 512
    assert not torch.isnan(got[1]).any()
    assert torch.equal(got[1], got[2])
    assert rel(got[1], got[0]) < 2e-3, rel(got[1], got[0])
    assert rel(got[1], ref.forward(x, w, ids, weights_on_input=on_input)) < TOL


@pytest.mark.gpu
@pytest.mark.parametrize("cls,m", [("narrow", 300), ("mid", 700), ("large", 1500)])
@pytest.mark.parametrize("bm,warps,stages", [(16, 4, 2), (32, 4, 2), (64, 4, 2), (64, 4, 3), (128, 8, 2), (256, 8, 2)])
@pytest.mark.parametrize("on_input", [False, True])
def test_wgmma_tiles_match_the_mma_tiles_and_the_reference(monkeypatch, cls, m, bm, warps, stages, on_input):
    """Tile option ``wgmma`` (kernels/wgmma_gluon.py, SM 9.x only): both tiers' grouped GEMMs
    on warpgroup MMAs, BM tokens a block, against the reference and the mma.sync kernels
    (the same decoded weights; products summed in another order, so not the same bits)."""
    if DEV != "cuda" or torch.cuda.get_device_capability()[0] != 9:
        pytest.skip("warpgroup MMA: SM 9.x only")
    from nf3_hybrid.backends import triton_tiers

    ref, tri, ws, classes = _grouped_only(monkeypatch, cls, (m,), n_kept=24, seed=37, wgmma=True)
    ws.reserve(2048, 8, 1024, 512, 64, block_sizes=[bm])
    assert all(t.wgmma for t in tri.triton)
    w, ids = routing(m, 64, 8, seed=m + 7, device=DEV)
    x = (torch.randn(m, 1024, device=DEV) * 2).to(torch.bfloat16)
    got = {}
    for wg in (0, 1):
        tiles = dict(classes[cls], mma=1, mma_kept=1, BM=bm if wg else 32, wgmma=wg, wg_warps=warps, wg_stages=stages)
        tiles.pop("all_mma", None)
        tiles.pop("all_wgmma", None)
        monkeypatch.setattr(triton_tiers, "CONFIG_OVERRIDE", {**classes, cls: tiles})
        poison(ws)
        got[wg] = tri.forward(x, w, ids, weights_on_input=on_input)
    want = ref.forward(x, w, ids, weights_on_input=on_input)
    assert torch.isfinite(got[1]).all()
    assert rel(got[1], want) < TOL and rel(got[1], got[0]) < TOL, (rel(got[1], want), rel(got[1], got[0]))
    poison(ws)
    assert torch.equal(tri.forward(x, w, ids, weights_on_input=on_input), got[1])  # reproducible


def _wgmma_blocks(monkeypatch, cls, m, slots, seed, routing_seed, nf3_layout=None):
    """``_grouped_only``'s layer on the wgmma kernels, its workspace planned for blocks of
    ``slots`` routing slots, and m tokens' activations and routing."""
    ref, tri, ws, classes = _grouped_only(monkeypatch, cls, (m,), n_kept=24, seed=seed, wgmma=True,
                                          nf3_layout=nf3_layout)
    ws.reserve(2048, 8, 1024, 512, 64, block_sizes=[slots])
    w, ids = routing(m, 64, 8, seed=routing_seed, device=DEV)
    x = (torch.randn(m, 1024, device=DEV) * 2).to(torch.bfloat16)
    return ref, tri, ws, classes, x, w, ids


@pytest.mark.gpu
@pytest.mark.parametrize("cls,m,bm", [("narrow", 300, 16), ("mid", 700, 32), ("large", 1500, 64)])
@pytest.mark.parametrize("tail", [16, 32])
@pytest.mark.parametrize("on_input", [False, True])
def test_wgmma_blocks_with_a_tail_match_the_blocks_without_and_the_reference(monkeypatch, cls, m, bm, tail,
                                                                             on_input):
    """Tile option ``wg_tail``: blocks of BM + TAIL routing slots, the tail multiplied only
    when it holds a pair — both cases occur here (checked in the routing) — against the
    same tiles without a tail and the reference; outputs poisoned before each run."""
    if DEV != "cuda" or torch.cuda.get_device_capability()[0] != 9:
        pytest.skip("warpgroup MMA: SM 9.x only")
    from nf3_hybrid.backends import triton_tiers

    ref, tri, ws, classes, x, w, ids = _wgmma_blocks(monkeypatch, cls, m, bm + tail, seed=53, routing_seed=m + 17)
    got = {}
    for t in (0, tail):
        tiles = triton_tiers.layer_tiles(dict(classes[cls]), tri.triton)
        monkeypatch.setattr(triton_tiers, "CONFIG_OVERRIDE", {**classes, cls: dict(tiles, BM=bm, wg_tail=t)})
        poison(ws)
        got[t] = tri.forward(x, w, ids, weights_on_input=on_input)
    # the tail run's blocks (a row of each tier's): some tails hold pairs, some are empty
    from nf3_hybrid.kernels import align

    p = m * 8
    cap, blocks = align.capacity(p, ws.n_local, bm + tail)
    heads = ws.sorted_ids[:, :cap].view(2, blocks, bm + tail)[:, :, bm][ws.block_expert[:, :blocks] >= 0]
    assert (heads < p).any() and (heads == p).any(), heads
    assert torch.isfinite(got[tail]).all()
    want = ref.forward(x, w, ids, weights_on_input=on_input)
    assert rel(got[tail], want) < TOL and rel(got[tail], got[0]) < TOL, (rel(got[tail], want), rel(got[tail], got[0]))


@pytest.mark.gpu
@pytest.mark.parametrize("bm,tail,layout", [(128, 16, "tiled"), (128, 0, "tiled"), (64, 16, "tiled"),
                                            (128, 16, "nibble")])
@pytest.mark.parametrize("on_input", [False, True])
def test_wgmma_gate_and_up_rows_in_one_tile_match_two_tiles_and_the_reference(monkeypatch, bm, tail, layout,
                                                                              on_input):
    """Tile option ``wg_gu``: the gate/up kernel's tile holds gate rows and the up rows of
    the same columns (half the columns a program, one accumulator, split in the epilogue)
    — against the two-tile kernel of the same blocks and the reference, with and without a
    tail, NF3 tiled and in nibble layout; 1500 tokens of top-8 of 64 give an expert ~190
    pairs, so blocks of 144 slots come both full and with an empty tail. Outputs poisoned
    before each run."""
    if DEV != "cuda" or torch.cuda.get_device_capability()[0] != 9:
        pytest.skip("warpgroup MMA: SM 9.x only")
    from nf3_hybrid.backends import triton_tiers

    ref, tri, ws, classes, x, w, ids = _wgmma_blocks(monkeypatch, "large", 1500, bm + tail, seed=67,
                                                     routing_seed=1517, nf3_layout=layout)
    assert any(t.tiled for t in tri.triton) == (layout == "tiled")
    got = {}
    for gu in (0, 1):
        tiles = dict(triton_tiers.layer_tiles(dict(classes["large"]), tri.triton), BM=bm, wg_tail=tail, wg_gu=gu)
        monkeypatch.setattr(triton_tiers, "CONFIG_OVERRIDE", {**classes, "large": tiles})
        poison(ws)
        got[gu] = tri.forward(x, w, ids, weights_on_input=on_input)
    assert torch.isfinite(got[1]).all()
    want = ref.forward(x, w, ids, weights_on_input=on_input)
    assert rel(got[1], want) < TOL and rel(got[1], got[0]) < TOL, (rel(got[1], want), rel(got[1], got[0]))


@pytest.mark.gpu
@pytest.mark.parametrize("cls,m,bm,tail,cap", [("mid", 700, 32, 0, 128), ("wide", 1000, 32, 16, 128),
                                              ("large", 1500, 64, 16, 168)])
@pytest.mark.parametrize("on_input", [False, True])
def test_wgmma_tiles_under_a_register_cap_give_the_uncapped_bits(monkeypatch, cls, m, bm, tail, cap, on_input):
    """Tile option ``wg_maxnreg``: the same kernels compiled under a register cap (ptxas
    spills what does not fit to local memory) run the same arithmetic, so they must give
    the uncapped tiles' bits, and the reference's result; outputs poisoned before each run."""
    if DEV != "cuda" or torch.cuda.get_device_capability()[0] != 9:
        pytest.skip("warpgroup MMA: SM 9.x only")
    from nf3_hybrid.backends import triton_tiers

    ref, tri, ws, classes, x, w, ids = _wgmma_blocks(monkeypatch, cls, m, bm + tail, seed=61, routing_seed=m + 23)
    got = {}
    for c in (None, cap):
        tiles = dict(triton_tiers.layer_tiles(dict(classes[cls]), tri.triton), BM=bm, wg_tail=tail)
        if c:
            tiles["wg_maxnreg"] = c
        monkeypatch.setattr(triton_tiers, "CONFIG_OVERRIDE", {**classes, cls: tiles})
        poison(ws)
        got[c] = tri.forward(x, w, ids, weights_on_input=on_input)
    assert torch.isfinite(got[cap]).all()
    assert torch.equal(got[cap], got[None]), rel(got[cap], got[None])
    assert rel(got[cap], ref.forward(x, w, ids, weights_on_input=on_input)) < TOL


@pytest.mark.gpu
@pytest.mark.parametrize("m", [65, 448, 449, 768, 769, 1408, 1409, 2500])
def test_the_built_in_tiles_on_an_sm90_gpu_run_on_wgmma_and_match_the_reference(monkeypatch, m):
    """No override: on SM 9.x every tier takes the wgmma kernels with the classes'
    ``all_wgmma`` tiles and bounds (tails from WGMMA_MID_TOKENS; 2500 tokens: two chunks,
    each of its own class), against the reference."""
    if DEV != "cuda" or torch.cuda.get_device_capability()[0] != 9:
        pytest.skip("warpgroup MMA: SM 9.x only")
    from nf3_hybrid.backends import executor, triton_tiers
    from nf3_hybrid.kernels import mma_tiles

    monkeypatch.setattr(executor, "GEMV_TOKENS", 0)
    ref, tri, ws = build("nvfp4", 24, 64, 1024, 512, 2500, 8, seed=43)
    assert triton_tiers.all_wgmma(tri.triton)
    launched = []
    real = mma_tiles._kernel_tiles
    monkeypatch.setattr(mma_tiles, "_kernel_tiles", lambda cfg, size, gemm: launched.append(dict(cfg)) or
                        real(cfg, size, gemm))
    w, ids = routing(m, 64, 8, seed=m + 11, device=DEV)
    x = (torch.randn(m, 1024, device=DEV) * 2).to(torch.bfloat16)
    poison(ws)
    got = tri.forward(x, w, ids)
    # each chunk of the workspace its own class: 2500 tokens are 2048 (large) and 452 (mid);
    # per chunk two tiers, two GEMMs each
    chunks = [min(ws.chunk, m - c0) for c0 in range(0, m, ws.chunk)]
    tt = triton_tiers
    want = sorted((16, 0) if c <= tt.WGMMA_NARROW_TOKENS else (32, 0) if c <= tt.WGMMA_MID_TOKENS else
                  (32, 16) if c <= tt.WIDE_TOKENS else (64, 16) for c in chunks for _ in range(4))
    got_tiles = sorted((c["BM"], c.get("wg_tail", 0)) for c in launched)
    assert all(c.get("wgmma") for c in launched) and got_tiles == want, (chunks, launched)
    assert rel(got, ref.forward(x, w, ids)) < TOL


@pytest.mark.gpu
@pytest.mark.parametrize("m", [1, 16, 65, 700, 1409, 2500])
def test_bf16_pair_rows_on_the_built_in_gpu_tiles_match_the_reference(monkeypatch, m):
    """The per-pair rows in bf16 (triton_tiers.PAIR_ROWS_DTYPE) through the tiles the GPU
    takes by default — the decode GEMV at 1 and 16 tokens, on SM 9.x the wgmma down
    kernels of every grouped class (2500 tokens: two chunks) — against the reference, and
    within about one bf16 rounding of the fp32 rows' output."""
    if DEV != "cuda":
        pytest.skip("the GPU's tiles")
    _check_bf16_pair_rows(monkeypatch, m, experts=64, n_kept=24, hidden=1024, inter=512, max_tokens=2500, topk=8,
                          seed=47, routing_seed=m + 13)


@pytest.mark.gpu
@pytest.mark.parametrize("m", [200, 700, 2500])
@pytest.mark.parametrize("serial_from", [None, 512])
def test_tiers_on_two_streams_give_the_one_stream_bits(monkeypatch, m, serial_from):
    """The grouped path runs the kept tier on a side stream beside the NF3 tier
    (``CONCURRENT_TIERS``): the same bits as one after the other, for every grouped class
    and across chunks (2500 tokens: two passes). With the serial rule brought down to this
    layer's intermediate size (``SERIAL_TIERS_FROM_INTER``), the passes it names run on one
    stream and the rest still on two: the same bits again."""
    if DEV != "cuda":
        pytest.skip("streams need the GPU")
    from nf3_hybrid.backends import triton_tiers

    monkeypatch.setattr(triton_tiers, "SERIAL_TIERS_FROM_INTER", serial_from)
    decided = []
    rule = triton_tiers.tiers_concurrently

    def watched(cls, inter, wgmma):
        decided.append((cls, inter, wgmma, rule(cls, inter, wgmma)))
        return decided[-1][-1]

    monkeypatch.setattr(triton_tiers, "tiers_concurrently", watched)
    got = {}
    for on in (False, True):
        monkeypatch.setattr(triton_tiers, "CONCURRENT_TIERS", on)
        ref, tri, ws = build("nvfp4", 16, 64, 1024, 512, 2500, 8, seed=23)
        assert (ws.side is not None) == on
        w, ids = routing(m, 64, 8, seed=m, device=DEV)
        x = (torch.randn(m, 1024, generator=torch.Generator().manual_seed(m)) * 2).to(torch.bfloat16).to(DEV)
        poison(ws)
        decided.clear()
        got[on] = tri.forward(x, w, ids)
    assert torch.equal(got[False], got[True]), rel(got[True], got[False])
    assert rel(got[True], ref.forward(x, w, ids)) < TOL
    expected = []
    all_wgmma = triton_tiers.all_wgmma(tri.triton)
    for c0 in range(0, m, ws.chunk):  # one decision a pass
        size = min(m, c0 + ws.chunk) - c0
        cls = triton_tiers.grouped_class(size, all_wgmma)
        tiles = triton_tiers.layer_tiles(triton_tiers.grouped_config(size, False, all_wgmma), tri.triton)
        on_wgmma = bool(tiles.get("wgmma"))
        expected.append((cls, 512, on_wgmma, serial_from is None or not (on_wgmma and cls == "large")))
    assert decided == expected


@pytest.mark.gpu
@pytest.mark.parametrize("m", [1, 8, 20, 200, 700, 1000, 2048])
@pytest.mark.parametrize("wgmma", [True, False])
def test_the_tiled_nf3_layout_gives_the_nibble_bits_on_every_kernel(monkeypatch, m, wgmma):
    """The NF3 tier tiled (formats/nf3_tiled.py: the mma kernels' 8-byte loads of a lane's
    row pair) and in nibble layout, the built-in tiles of every class — the decode GEMV to
    24 tokens, then the grouped classes on the wgmma kernels, or with them off on the
    mma.sync ones: the same bits, and the reference's result."""
    if DEV != "cuda":
        pytest.skip("the mma kernels need the GPU")
    if wgmma and torch.cuda.get_device_capability()[0] != 9:
        pytest.skip("warpgroup MMA: SM 9.x only")
    got = {}
    for layout in ("nibble", "tiled"):
        ref, tri, ws = build("nvfp4", 24, 64, 1024, 512, 2048, 8, seed=47, nf3_layout=layout)
        assert [t.tiled for t in tri.triton] == [False, layout == "tiled"]
        assert all(t.mma for t in tri.triton)
        if not wgmma:
            for t in tri.triton:
                t.wgmma = False
        w, ids = routing(m, 64, 8, seed=m + 13, device=DEV)
        x = (torch.randn(m, 1024, generator=torch.Generator().manual_seed(m)) * 2).to(torch.bfloat16).to(DEV)
        poison(ws)
        got[layout] = tri.forward(x, w, ids)
    assert torch.isfinite(got["tiled"]).all()
    assert torch.equal(got["tiled"], got["nibble"]), rel(got["tiled"], got["nibble"])
    assert rel(got["tiled"], ref.forward(x, w, ids)) < TOL


def _decode_gemv_settings_agree(monkeypatch, m, layout, seed, settings):
    """The hybrid layer (GLM-5.2's hidden size, tails of both tiers) on the decode GEMV
    once per tile-option setting (extra keys over the built-in GEMV tiles), the same layer
    and inputs each time: every setting gives the first one's bits, and the reference's
    result."""
    from nf3_hybrid.backends import triton_tiers
    ref, tri, ws = build("nvfp4", 24, 64, 6144, 512, 64, 8, seed=seed, nf3_layout=layout)
    w, ids = routing(m, 64, 8, seed=m + seed, device=DEV)
    x = (torch.randn(m, 6144, generator=torch.Generator().manual_seed(m)) * 2).to(torch.bfloat16).to(DEV)
    got = _gemv_outputs(monkeypatch, tri, ws, triton_tiers.kernel_config(1, False, 512), settings, x, w, ids)
    for g in got[1:]:
        assert torch.equal(g, got[0]), rel(g, got[0])
    assert rel(got[0], ref.forward(x, w, ids)) < TOL
    return ws


@pytest.mark.gpu
@pytest.mark.parametrize("m", [1, 4, 16])
@pytest.mark.parametrize("layout", ["tiled", "nibble"])
def test_decode_gemv_l2_prefetch_gives_the_same_bits(monkeypatch, m, layout):
    """Tile option ``l2pf`` (SM90+: each GEMV program bulk-prefetches its weight rows and
    scales into L2) changes when bytes arrive, not which: the bits of the GEMV without it,
    and the reference's result, at GLM-5.2's hidden size with tails of both tiers."""
    if DEV != "cuda" or torch.cuda.get_device_capability()[0] < 9:
        pytest.skip("the bulk copy engine: SM90+")
    ws = _decode_gemv_settings_agree(monkeypatch, m, layout, 71, [dict(l2pf=0), dict(l2pf=1)])
    assert ws.l2_prefetch


def _gemv_option_layer(monkeypatch, kept_fmt, seed, nf3_layout=None):
    """(interp, hidden, ref, tri, ws, base) for the decode GEMV's tile-option tests: a hybrid
    layer at GLM-5.2's hidden size on the GPU, a small one under the interpreter (three
    gate/up K steps and two down), and the GEMV's built-in tiles with K at run time —
    wider programs under the interpreter, whose time is per program and per op rather than
    per element: two programs an expert's gate/up, two its down, the second with a masked
    tail of rows (64/128 were 45 s a test alone, 128/256 30 s)."""
    from nf3_hybrid.backends import triton_tiers

    interp = triton_tiers.interpret()
    hidden, inter = (384, 256) if interp else (6144, 512)
    gemv_up_to(monkeypatch, 16)
    ref, tri, ws = build(kept_fmt, 6, 24, hidden, inter, 64, 8, seed=seed, nf3_layout=nf3_layout)
    base = dict(triton_tiers.kernel_config(1, interp, inter), kconst13=0, kconst2=0)
    if interp:
        base.update(BN13=128, BN2=256)
    return interp, hidden, ref, tri, ws, base


def _gemv_outputs(monkeypatch, tri, ws, base, settings, x, w, ids):
    """The layer's output once per tile-option setting (extra keys over the GEMV tiles
    ``base``), the workspace poisoned before each run."""
    from nf3_hybrid.backends import triton_tiers

    outs = []
    for extra in settings:
        monkeypatch.setattr(triton_tiers, "CONFIG_OVERRIDE", {"gemv": dict(base, **extra)})
        poison(ws)
        outs.append(tri.forward(x, w, ids))
    return outs


@pytest.mark.parametrize("kept_fmt", ["nvfp4", "mxfp4_e8m0k32"])
def test_decode_gemv_with_k_a_constant_or_unmasked_loads_gives_the_same_bits(kept_fmt, monkeypatch):
    """Tile options ``kconst13`` / ``kconst2`` (a GEMV's K a compile-time constant) and
    ``clamp`` (the next K block's loads unmasked, the last block reloaded after the last
    step) change the code ptxas sees, not the arithmetic: the bits of the GEMVs without
    them, and the reference's result, for both tiers — on the GPU at GLM-5.2's hidden size
    and 1, 3 and 16 tokens, on the CPU (the interpreter) at 2 tokens with three K steps of
    gate/up and two of down, so that the clamped offset is taken."""
    from nf3_hybrid.kernels import expert_gemv

    interp, hidden, ref, tri, ws, base = _gemv_option_layer(monkeypatch, kept_fmt, 83)
    assert hidden // base["BK13"] == 3 or not interp
    settings = ({}, dict(kconst13=1, kconst2=1), dict(clamp=1)) if interp else \
        ({}, dict(kconst13=1), dict(kconst2=1), dict(kconst13=1, kconst2=1), dict(clamp=1),
         dict(kconst13=1, kconst2=1, clamp=1))
    for m in (2,) if interp else (1, 3, 16):
        w, ids = routing(m, 24, 8, seed=m + 83, device=DEV)
        maps = tri.maps[0]  # [tier, expert] → local index, −1 where not in that tier
        assert bool((maps[0][ids] >= 0).any()) and bool((maps[1][ids] >= 0).any())  # both tiers run
        x = (torch.randn(m, hidden, generator=torch.Generator().manual_seed(m)) * 2).to(torch.bfloat16).to(DEV)
        got = _gemv_outputs(monkeypatch, tri, ws, base, settings, x, w, ids)
        for g, extra in zip(got[1:], settings[1:]):
            assert torch.equal(g, got[0]), (m, extra, rel(g, got[0]))
        assert rel(got[0], ref.forward(x, w, ids)) < TOL, m
    with pytest.raises(ValueError, match="kconst2 must be 0 or 1, got 2"):
        expert_gemv.kconst_options(dict(kconst2=2))
    with pytest.raises(ValueError, match="clamp must be 0 or 1, got 'yes'"):
        expert_gemv.clamp_option(dict(clamp="yes"))


@pytest.mark.parametrize("kept_fmt", ["nvfp4", "mxfp4_e8m0k32"])
def test_decode_gemv_with_two_word_e2m1_blocks_matches_the_reference(kept_fmt, monkeypatch):
    """Tile option ``e2m1x2`` (the kept tier's words dotted two at a time, one scale a pair)
    rounds differently, so it is held to the reference's result and to the one-word
    blocks' within rounding: on the GPU the 16 products of a pair summed in fp16 (the PTX
    block), under the interpreter the pair's fp32 sums — where a scale byte given to the
    wrong pair of words (NVFP4 has two a unit) or an activation to the wrong word would be
    errors of the weights' size, not of rounding. With K a constant and unmasked loads as
    well, the built-in options it would run beside."""
    from nf3_hybrid.kernels import expert_gemv

    interp, hidden, ref, tri, ws, base = _gemv_option_layer(monkeypatch, kept_fmt, 89)
    settings = (dict(e2m1x2=1), dict(e2m1x2=1, kconst13=1, kconst2=1, clamp=1))
    # one-word blocks against pairs: fp32 order only under the interpreter, fp16 sums of 8
    # products a half instead of 4 on the GPU (then the bf16 output's rounding)
    near = 1e-3 if interp else 4e-3
    for m in (2,) if interp else (1, 3, 16):
        w, ids = routing(m, 24, 8, seed=m + 89, device=DEV)
        assert bool((tri.maps[0][0][ids] >= 0).any())  # the kept tier runs
        x = (torch.randn(m, hidden, generator=torch.Generator().manual_seed(m + 5)) * 2).to(torch.bfloat16).to(DEV)
        want = ref.forward(x, w, ids)
        one_word, *outs = _gemv_outputs(monkeypatch, tri, ws, base, ({},) + settings, x, w, ids)
        for extra, got in zip(settings, outs):
            assert rel(got, want) < TOL, (m, extra, rel(got, want))
            assert rel(got, one_word) < near, (m, extra, rel(got, one_word))
    with pytest.raises(ValueError, match="e2m1x2 must be 0 or 1, got 3"):
        expert_gemv.e2m1x2_option(dict(e2m1x2=3))


@pytest.mark.parametrize("layout", ["tiled", "nibble"])
def test_decode_gemv_with_four_word_nf3_sums_matches_the_reference(layout, monkeypatch):
    """Tile option ``nf3x4`` (the NF3 group block sums all four words' products in fp16,
    16 a half, instead of two words at a time) rounds differently, so on the GPU it is held
    to the reference's result and to the two-word block's within rounding (an activation
    met by the wrong weight would be an error of the weights' size), with the built-in
    options it would run beside (kconst, clamp, e2m1x2) and without them. Under the
    interpreter the NF3 dots are table lookups summed in fp32, so the option must change
    no bit there."""
    from nf3_hybrid.kernels import expert_gemv

    interp, hidden, ref, tri, ws, base = _gemv_option_layer(monkeypatch, "nvfp4", 97, nf3_layout=layout)
    settings = (dict(nf3x4=1), dict(nf3x4=1, kconst13=1, kconst2=1, clamp=1, e2m1x2=1))
    rounded_otherwise = []
    for m in (2,) if interp else (1, 3, 16):
        w, ids = routing(m, 24, 8, seed=m + 97, device=DEV)
        assert bool((tri.maps[0][1][ids] >= 0).any())  # the NF3 tier runs
        x = (torch.randn(m, hidden, generator=torch.Generator().manual_seed(m + 7)) * 2).to(torch.bfloat16).to(DEV)
        want = ref.forward(x, w, ids)
        outs = _gemv_outputs(monkeypatch, tri, ws, base, ({},) + settings, x, w, ids)
        two_word = outs[0]
        for extra, got in zip(settings, outs[1:]):
            assert rel(got, want) < TOL, (m, extra, rel(got, want))
            if interp and not extra.get("e2m1x2"):
                assert torch.equal(got, two_word), (m, extra)
            assert rel(got, two_word) < 4e-3, (m, extra, rel(got, two_word))
        rounded_otherwise.append(not torch.equal(outs[1], two_word))
    # on the GPU the option reached the kernel: the four-word sums round differently
    assert interp or any(rounded_otherwise)
    with pytest.raises(ValueError, match="nf3x4 must be 0 or 1, got -1"):
        expert_gemv.nf3x4_option(dict(nf3x4=-1))


@pytest.mark.gpu
@pytest.mark.parametrize("m", [1, 16])
def test_decode_gemv_register_caps_give_the_same_bits_and_reach_ptxas(monkeypatch, m):
    """Tile options ``maxnreg13`` / ``maxnreg2`` (expert_gemv.register_caps) change how many
    registers the two GEMVs compile to, not their results: the uncapped bits and the
    reference's result, and the compiled kernels at most the caps' registers."""
    if DEV != "cuda":
        pytest.skip("ptxas's register cap: compiled kernels only")
    from nf3_hybrid.kernels import expert_gemv
    _decode_gemv_settings_agree(monkeypatch, m, "tiled", 73, [{}, dict(maxnreg13=96, maxnreg2=112)])
    for kernel, cap in ((expert_gemv._gemv13_kernel, 96), (expert_gemv._gemv2_kernel, 112)):
        compiled = [k for cache in kernel.device_caches.values() for k in cache[0].values()
                    if getattr(k.metadata, "maxnreg", None) == cap]
        assert compiled, (kernel.fn.__name__, cap)
        for k in compiled:
            k._init_handles()
            assert 0 < k.n_regs <= cap, (kernel.fn.__name__, k.n_regs, cap)
