"""The mma kernels (kernels/mma_tiles.py, mma_gluon.py) as far as a CPU allows: the
activation order against the mma.sync fragment layout, the kernels compiled for SM90
(the register-only operand assembly is proved by the compiler), and when a tier uses
them. Their numbers are checked on the GPU (test_expert_kernels.py)."""
import logging
import re

import pytest
import torch

from nf3_hybrid.backends import select, triton_tiers
from nf3_hybrid.kernels import mma_tiles

from .sm90 import compile_probe
from .tiers import make_tier


def test_activation_order_gives_each_lane_its_own_group():
    """mma.sync m16n8k16's A fragment: lane 4g + t holds, in each 16-wide K tile τ, the
    columns 16τ + 8j + 2t + b (j, b ∈ {0, 1}). In a 128-wide window the kernel puts value
    i of word w of the lane's group at tile 2w + (i >> 2), j = (i >> 1) & 1, b = i & 1;
    the activation there must be the group's code 8w + i, group t of the window."""
    k = 512
    order = mma_tiles.activation_order(k)
    assert sorted(order.tolist()) == list(range(k))
    for window in range(k // 128):
        for t in range(4):
            for w in range(4):
                for i in range(8):
                    tau, j, b = 2 * w + (i >> 2), (i >> 1) & 1, i & 1
                    p = 128 * window + 16 * tau + 8 * j + 2 * t + b
                    assert order[p] == 128 * window + 32 * t + 8 * w + i
    assert torch.equal(mma_tiles.p_position(order), torch.arange(k))


def test_fragment_order_puts_each_lanes_runs_side_by_side():
    """Tile option ``mma_xreg``: ``fragment_order`` holds each NF3 group's 32 activations
    (lane t's fragment values) as four runs of 8, run i of the window's four groups side by
    side, and is its own inverse (the kernel's _q_position writes the intermediate with it)."""
    k = 384
    order = mma_tiles.fragment_order(k)
    assert sorted(order.tolist()) == list(range(k))
    assert torch.equal(order[order], torch.arange(k))
    for q in range(k):
        w, i, t, v = q // 128, (q % 128) // 32, (q % 32) // 8, q % 8
        assert order[q] == 128 * w + 32 * t + 8 * i + v
    with pytest.raises(ValueError, match="multiple of 128"):
        mma_tiles.fragment_order(200)


@pytest.mark.parametrize("split,bm", [(1, 16), (1, 32), (2, 16), (2, 64)])
def test_register_loaded_activations_reach_each_p_position_from_its_fragment_position(split, bm):
    """Tile option ``mma_xreg``: ``fragment_order_layout`` re-indexes a B operand layout
    from activation order p to the coordinates the kernel loads from — fragment position
    128·nw + 32·i + 8·t + v of a whole step, 64·h + 32·i + 8·t + v of half h
    (``_b_ptrs``). Every bit of p (the layout's bases are linear in them) must land on
    a position holding the activation that ``activation_order`` puts at p, and the token
    bits must stay. The compile tests below prove that ``_xreg_operand``'s reshape and
    permute undo exactly this map (assert_trivial)."""
    if mma_tiles.gluon_missing():
        pytest.skip(f"no Gluon in this Triton: {mma_tiles.gluon_missing()}")
    from triton.experimental.gluon import language as gl

    from nf3_hybrid.kernels import mma_gluon

    bk = 256 if split == 1 else 64
    kbits = [[1 << i, 0] for i in range(bk.bit_length() - 1)]
    nbits = [[0, 1 << i] for i in range(bm.bit_length() - 1)]
    # a layout whose registers are exactly the index bits (lanes and warps get the same map)
    bl = gl.DistributedLinearLayout(reg_bases=kbits + nbits, lane_bases=[], warp_bases=[[0, 0]], block_bases=[],
                                    shape=[bk, bm])
    xo = mma_gluon.fragment_order_layout(bl, split)
    assert list(xo.shape) == ([bk // 128, 4, 4, 8, bm] if split == 1 else [2, 4, 8, bm])
    assert xo.warp_bases == [[0] * len(xo.shape)]  # a broadcast stays one
    p_order, q_order = mma_tiles.activation_order(256), mma_tiles.fragment_order(256)

    def position(c, h=0):
        return 128 * c[0] + 32 * c[1] + 8 * c[2] + c[3] if split == 1 else 64 * h + 32 * c[0] + 8 * c[1] + c[2]

    for h in range(2 if split == 2 else 1):
        for p in range(bk):
            c = [0] * len(xo.shape)
            for i, b in enumerate(xo.reg_bases[:len(kbits)]):
                if p >> i & 1:
                    c = [u ^ v for u, v in zip(c, b)]
            assert c[-1] == 0 and q_order[position(c, h)] == p_order[64 * h + p], (split, h, p, c)
    for i, b in enumerate(xo.reg_bases[len(kbits):]):
        assert b[-1] == 1 << i and not any(b[:-1])


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32, torch.float16])
def test_the_activations_are_converted_and_permuted_by_one_kernel_into_the_copy_and_gather_bits(dtype):
    """kernels/mma_order.py: one pass gives what the fp16 copy and ``index_select`` by
    ``activation_order`` gave (bit for bit), into a larger scratch whose other elements it
    leaves alone; a row stride of the chunk's input, a K of three windows, a strided input;
    a K that is not whole windows, or an output whose rows are not contiguous, is refused."""
    from nf3_hybrid.kernels import mma_order

    dev = "cuda" if torch.cuda.is_available() else "cpu"
    x = (torch.randn(5, 400, generator=torch.Generator().manual_seed(7)) * 30).to(dtype).to(dev)[:, :384]
    out = torch.full((8, 512), 7.0, dtype=torch.float16, device=dev)
    mma_order.launch(x, out)
    want = torch.index_select(x.to(torch.float16), 1, mma_tiles.activation_order(384).to(dev))
    assert torch.equal(out[:5, :384], want)
    assert (out[5:] == 7).all() and (out[:, 384:] == 7).all()
    mma_order.launch(x, out, fragments=True)  # tile option mma_xreg
    assert torch.equal(out[:5, :384], torch.index_select(x.to(torch.float16), 1, mma_tiles.fragment_order(384).to(dev)))
    assert (out[5:] == 7).all() and (out[:, 384:] == 7).all()
    mma_order.launch(x, out)
    with pytest.raises(ValueError, match="K=200"):
        mma_order.launch(x[:, :200], out)
    xt = x.t().contiguous().t()  # K-major
    mma_order.launch(xt, out)
    assert torch.equal(out[:5, :384], want)
    with pytest.raises(ValueError, match="contiguous"):
        mma_order.launch(x, out.t())


def test_a_tier_reads_the_mma_order_activations_exactly_when_the_tiles_put_it_on_the_mma_kernels(monkeypatch):
    """``TritonTier.uses_mma``: the NF3 tier with tile option ``mma``, the kept tier with
    ``mma`` and ``mma_kept``, neither on a GPU without the kernels; run_chunk converts the
    activations once for them and makes the plain fp16 copy (``x16``) only for a tier on
    the Triton tiles."""
    # the routing kernel runs for real: on the GPU its tensors must be there (the
    # interpreter reads CPU tensors, a compiled launch refuses them)
    dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    nf3 = make_tier("nf3", 2, 256, 128, [0, 1, -1], device=dev)
    kept = make_tier("nvfp4", 1, 256, 128, [-1, -1, 0], device=dev)
    ws = triton_tiers.Workspace(dev)
    ws.reserve(64, 2, 256, 128, 2)
    a, b = triton_tiers.TritonTier(kept, ws), triton_tiers.TritonTier(nf3, ws)
    for t in (a, b):
        t.mma = True
        assert not t.uses_mma(dict(BM=16)) and not t.uses_mma(dict(BM=16, mma_kept=1))
    assert b.uses_mma(dict(mma=1)) and not a.uses_mma(dict(mma=1)) and a.uses_mma(dict(mma=1, mma_kept=1))
    a.mma = False
    assert not a.uses_mma(dict(mma=1, mma_kept=1))
    calls = []
    monkeypatch.setattr(ws, "fp16_activations", lambda x: calls.append("x16") or x)
    monkeypatch.setattr(ws, "mma_activations",
                        lambda x, fragments=False: calls.append("x_mma" + " fragments" * fragments) or x)
    monkeypatch.setattr(triton_tiers.TritonTier, "gemms", lambda self, *args, **kw: calls.append(
        (self.tier.fmt, kw["x16"] is not None, kw["x_mma"] is not None)))
    monkeypatch.setattr(triton_tiers.pair_sum, "launch", lambda *args, **kw: None)
    x, w = torch.zeros(4, 256, device=dev), torch.full((4, 2), 0.5, device=dev)
    ids = torch.tensor([[0, 2]] * 4, device=dev)
    maps = triton_tiers.stacked_maps([a, b])
    for cfg, want in ((dict(mma=1, x16=1), ["x16", "x_mma"]), (dict(mma=1, mma_kept=1, x16=1), ["x_mma"]),
                      (dict(x16=1), ["x16"]), (dict(mma=1), ["x_mma"]), (dict(mma=1, mma_xreg=1), ["x_mma fragments"])):
        a.mma = "mma_kept" in cfg
        calls.clear()
        monkeypatch.setattr(triton_tiers, "layer_tiles", lambda c, tiers, cfg=cfg: dict(cfg, BM=16))
        triton_tiers.run_chunk([a, b], maps, x, w, ids, False, result=torch.zeros(4, 256, device=dev))
        assert [c for c in calls if isinstance(c, str)] == want, (cfg, calls)


def test_shapes_outside_whole_windows_are_refused():
    with pytest.raises(ValueError, match="multiple of 128"):
        mma_tiles.activation_order(96)
    assert mma_tiles.shape_fits(6144, 512) and not mma_tiles.shape_fits(2880, 512)


@pytest.mark.parametrize("split,ahead,rows,xahead,xreg,splitk,tabvec", [
    (1, 1, 64, 0, 0, 1, 0), (2, 1, 64, 0, 0, 1, 0), (2, 2, 64, 0, 0, 1, 0), (2, 1, 32, 0, 0, 1, 0),
    (2, 1, 16, 0, 0, 1, 0), (2, 1, 128, 0, 0, 1, 0), (2, 1, 64, 1, 0, 1, 0), (2, 1, 64, 0, 1, 1, 0),
    (1, 2, 32, 0, 1, 1, 0), (2, 1, 64, 0, 0, 2, 0), (2, 2, 64, 0, 1, 4, 0), (2, 1, 64, 0, 0, 1, 1),
    (1, 1, 32, 1, 0, 2, 1)])
@pytest.mark.parametrize("fmt,tiled", [(0, 0), (1, 0), (0, 1)])
def test_kernels_compile_for_sm90_with_register_only_operands(fmt, tiled, split, ahead, rows, xahead, xreg, splitk,
                                                              tabvec, tmp_path):
    """Both GEMMs, NF3 (nibble or tiled layout) and NVFP4, as the launcher instantiates
    them (``ahead``: tile option ``mma_ahead``; ``rows`` a program on rows / 16 warps:
    ``mma_bn13`` / ``mma_bn2`` / ``mma_warps``; ``xahead``: ``mma_xahead``; ``xreg``:
    ``mma_xreg``; ``splitk``: ``mma_splitk``, with its reduce kernel, which stores the
    intermediate as the gate/up kernel does; ``tabvec``: ``mma_tabvec``, after which no
    table lookup copies a word from a uniform register first):
    ``convert_layout(..., assert_trivial=True)`` fails to compile if the
    decoded values would have to move between lanes to reach the A operand, or (``xreg``)
    the loaded activations to reach the B operand — which then needs no shared memory,
    no barrier and no ldmatrix, and comes in 16-byte loads: a lane's 16 (half step) or 32
    consecutive activations of each token."""
    if mma_tiles.gluon_missing():
        pytest.skip(f"no Gluon in this Triton: {mma_tiles.gluon_missing()}")
    compile_probe(tmp_path, "--mma", "--cfg",
                  f"BM=16,fmt={fmt},split={split},tiled={tiled},ahead={ahead},BN={rows},warps={rows // 16},"
                  f"xahead={xahead},xreg={xreg},splitk={splitk},tabvec={tabvec}")
    if splitk > 1:
        ptx = (tmp_path / "splitk13_kernel.ptx").read_text()
        assert "ex2.approx" in ptx and "st.global.b16" in ptx  # the SiLU, the fp16 intermediate
    if tabvec:  # the same kernels with the scalar table, for its copies
        compile_probe(tmp_path / "scalar", "--mma", "--cfg",
                      f"BM=16,fmt={fmt},split={split},tiled={tiled},ahead={ahead},BN={rows},warps={rows // 16},"
                      f"xahead={xahead},xreg={xreg},splitk={splitk},tabvec=0")
    for kernel in ("mma13_kernel", "mma2_kernel"):
        ptx = (tmp_path / f"{kernel}.ptx").read_text()
        assert "mma.sync.aligned.m16n8k16" in ptx and "cvt.rn.f16x2.e4m3x2" in ptx, kernel
        assert_vector_loads(ptx, fmt, tiled, kernel)
        if tabvec:
            copies = [len(re.findall(r"IMAD\.U32 R\d+, RZ, RZ, UR\d+", (d / f"{kernel}.sass").read_text()))
                      for d in (tmp_path, tmp_path / "scalar")]
            assert copies[0] + 8 <= copies[1], (kernel, copies)  # the loop's table copies are gone
        if xreg:
            assert "ldmatrix" not in ptx and "bar.sync" not in ptx, kernel
            # BM 16: two tokens a lane, its 32 activations of each a step in 8-value runs
            # (NF3's only 16-byte loads; NVFP4's words come in them too)
            loads = ptx.count("ld.global.v4.b32")
            assert loads == 8 if fmt == 0 else loads > 8, (kernel, loads)


def assert_vector_loads(ptx, fmt, tiled, kernel, tiles=2):
    """How the weights are loaded (mma_gluon._load_group says why). NVFP4 (fmt 1): each
    lane's two scale bytes by one 2-byte load and its four code words by one 16-byte load;
    the NF3 kernels' only 16-byte loads are the mma.sync kernels' activations, so the wgmma
    kernels' (activations by cp.async) tell the words' loads apart. NF3 in nibble layout:
    scales byte by byte, no 2-byte load; tiled (formats/nf3_tiled.py): a lane's two scales
    by one 2-byte load, no byte loads, and each of its words for both rows by one 8-byte
    load — the gate/up kernels load no other 8-byte value, and load 3 words × ``tiles``
    weight tiles (gate and up, or one under ``wg_gu``) × (the first step, the loop)."""
    if fmt == 1:
        assert "ld.global.b16" in ptx, kernel
        if kernel.startswith("wg"):
            assert "ld.global.v4.b32" in ptx, kernel
        return
    assert ("ld.global.b16" in ptx) == bool(tiled) and ("ld.global.b8" in ptx) == (not tiled), (kernel, tiled)
    if kernel.startswith("wg"):
        assert "ld.global.v4.b32" not in ptx, kernel
    if "13" in kernel:
        assert (ptx.count("ld.global.v2.b32") >= 6 * tiles) == bool(tiled), (kernel, tiled)


@pytest.mark.parametrize("fmt,bm,warps,tiled", [(0, 32, 4, 0), (0, 64, 4, 0), (1, 64, 4, 0), (0, 128, 8, 0),
                                               (1, 128, 8, 0), (0, 64, 4, 1), (0, 128, 8, 1)])
def test_wgmma_kernels_compile_for_sm90_with_register_only_operands(fmt, bm, warps, tiled, tmp_path):
    """The wgmma variant (kernels/wgmma_gluon.py): the decoded weights reach wgmma's
    register A operand without moving between lanes (the same ``assert_trivial`` proof),
    the activations come by cp.async into shared memory, one instruction covers the block's
    BM tokens, and nothing spills."""
    if mma_tiles.wgmma_missing():
        pytest.skip(f"no wgmma kernels in this Triton: {mma_tiles.wgmma_missing()}")
    compile_probe(tmp_path, "--mma", "--cfg", f"wgmma=1,BM={bm},fmt={fmt},wg_warps={warps},tiled={tiled}")
    for kernel in ("wg13_kernel", "wg2_kernel"):
        ptx = (tmp_path / f"{kernel}.ptx").read_text()
        assert f"wgmma.mma_async.sync.aligned.m64n{bm}k16.f32.f16.f16" in ptx, kernel
        assert "cp.async.cg.shared.global" in ptx and "cvt.rn.f16x2.e4m3x2" in ptx, kernel
        assert "mma.sync" not in ptx and "ld.local" not in ptx, kernel
        assert_vector_loads(ptx, fmt, tiled, kernel)


@pytest.mark.parametrize("fmt,bm,tail", [(0, 32, 16), (1, 64, 16)])
def test_wgmma_kernels_with_a_tail_compile_with_both_mma_widths(fmt, bm, tail, tmp_path):
    """Tile option ``wg_tail``: each K step's decoded weights multiplied by the block's BM
    tokens and, in a branch, by its TAIL more — one wgmma of each width — the tail's
    activations copied by cp.async too, nothing spilled."""
    if mma_tiles.wgmma_missing():
        pytest.skip(f"no wgmma kernels in this Triton: {mma_tiles.wgmma_missing()}")
    compile_probe(tmp_path, "--mma", "--cfg", f"wgmma=1,BM={bm},fmt={fmt},wg_tail={tail}")
    for kernel in ("wg13_kernel", "wg2_kernel"):
        ptx = (tmp_path / f"{kernel}.ptx").read_text()
        for n in (bm, tail):
            assert f"wgmma.mma_async.sync.aligned.m64n{n}k16.f32.f16.f16" in ptx, (kernel, n)
        assert "cp.async.cg.shared.global" in ptx and "ld.local" not in ptx, kernel


@pytest.mark.parametrize("fmt,tiled", [(0, 1), (0, 0), (1, 0)])
def test_gate_and_up_rows_in_one_wgmma_tile_compile_at_128_tokens_with_one_mma_a_slice(fmt, tiled, tmp_path):
    """Tile option ``wg_gu``: the gate/up kernel decodes one 64-row tile a K step (gate and
    up rows of 32 columns) and multiplies it once for the block and once for its tail —
    8 + 8 wgmma of k16 where two tiles take 32 — at 128 tokens a block without spilling,
    its weights loaded as the two-tile kernel loads them."""
    if mma_tiles.wgmma_missing():
        pytest.skip(f"no wgmma kernels in this Triton: {mma_tiles.wgmma_missing()}")
    compile_probe(tmp_path, "--mma", "--cfg", f"wgmma=1,BM=128,fmt={fmt},wg_tail=16,wg_gu=1,tiled={tiled}")
    ptx = (tmp_path / "wg13_kernel.ptx").read_text()
    for n in (128, 16):
        assert ptx.count(f"wgmma.mma_async.sync.aligned.m64n{n}k16.f32.f16.f16") == mma_tiles.BK // 16, n
    assert "ld.local" not in ptx
    assert_vector_loads(ptx, fmt, tiled, "wg13_kernel", tiles=1)


def test_gate_and_up_in_one_tile_is_a_wgmma_option_with_half_the_columns_a_program():
    """``wg_gu``: the gate/up grid gets BN/2 columns a program (the down GEMM's tiles are
    unchanged); without the wgmma kernels it is refused with the option named."""
    with pytest.raises(ValueError, match="wg_gu"):
        mma_tiles.wgmma_gu(dict(BM=64, wg_gu=1))
    assert not mma_tiles.wgmma_gu(dict(BM=64, wgmma=1))
    if mma_tiles.wgmma_missing():
        pytest.skip(f"no wgmma kernels in this Triton: {mma_tiles.wgmma_missing()}")
    cfg = dict(BM=128, wgmma=1, wg_gu=1)
    _, rows13, _, tiles13 = mma_tiles._kernel_tiles(cfg, 512, "13")
    _, rows2, _, tiles2 = mma_tiles._kernel_tiles(cfg, 6144, "2")
    assert (rows13, tiles13["BN"], tiles13["GU"]) == (32, 64, True)
    assert rows2 == tiles2["BN"] == 64 and "GU" not in tiles2
    assert mma_tiles._kernel_tiles(dict(BM=128, wgmma=1), 512, "13")[1] == 64


def test_a_register_cap_compiles_under_it_and_is_refused_where_ptxas_cannot_take_it(tmp_path):
    """Tile option ``wg_maxnreg``: the kernels compiled for SM90 within the cap (ptxas
    spills the rest), the launch passes it as ``maxnreg``; values ptxas cannot take, or the
    cap without the wgmma kernels, are refused with the option named."""
    assert mma_tiles.launch_options(dict(BM=64, wgmma=1)) == {}
    assert mma_tiles.launch_options(dict(BM=64, wgmma=1, wg_maxnreg=168)) == {"maxnreg": 168}
    for cfg, match in ((dict(wgmma=1, wg_maxnreg=100), "wg_maxnreg=100"), (dict(wgmma=1, wg_maxnreg=170), "multiple"),
                       (dict(wg_maxnreg=168), "wgmma")):
        with pytest.raises(ValueError, match=match):
            mma_tiles.launch_options(cfg)
    if mma_tiles.wgmma_missing():
        pytest.skip(f"no wgmma kernels in this Triton: {mma_tiles.wgmma_missing()}")
    compile_probe(tmp_path, "--mma", "--cfg", "wgmma=1,BM=64,fmt=0,wg_tail=16,wg_maxnreg=168")
    ptx = (tmp_path / "wg13_kernel.ptx").read_text()
    assert ".maxnreg 168" in ptx


def test_an_nf3_register_cap_on_the_mma_sync_kernels_compiles_under_it_and_spares_nvfp4(tmp_path):
    """Tile option ``mma_nf3_maxnreg``: an NF3 tier's mma.sync kernels are launched with
    ``maxnreg``, an NVFP4 tier's without (it would spill); values ptxas cannot take, or the
    cap on the wgmma kernels, are refused with the option named."""
    cfg = dict(BM=16, mma_nf3_maxnreg=80)
    assert mma_tiles.launch_options(cfg, 0) == {"maxnreg": 80}
    assert mma_tiles.launch_options(cfg, 1) == {} and mma_tiles.launch_options(dict(BM=16), 0) == {}
    for bad, match in ((dict(mma_nf3_maxnreg=84), "mma_nf3_maxnreg=84: a multiple of 8"),
                       (dict(mma_nf3_maxnreg=56), "64-255"),
                       (dict(wgmma=1, mma_nf3_maxnreg=80), "an mma.sync tile option")):
        with pytest.raises(ValueError, match=match):
            mma_tiles.launch_options(bad, 0)
    if mma_tiles.gluon_missing():
        pytest.skip(f"no Gluon in this Triton: {mma_tiles.gluon_missing()}")
    for fmt in (0, 1):
        out = tmp_path / str(fmt)
        out.mkdir()
        compile_probe(out, "--mma", "--cfg", f"BM=16,fmt={fmt},split=2,tiled={1 - fmt},mma_nf3_maxnreg=80")
        ptx = (out / "mma13_kernel.ptx").read_text()
        assert (".maxnreg 80" in ptx) == (fmt == 0), fmt


def test_a_tail_is_a_wgmma_option_of_the_widths_the_instruction_takes():
    """``wg_tail``'s slots add to the block's in the routing (block_slots); other widths, or
    a tail without the wgmma kernels, are refused with the option named."""
    assert mma_tiles.block_slots(dict(BM=64)) == 64
    assert mma_tiles.block_slots(dict(BM=64, wgmma=1, wg_tail=16)) == 80
    assert mma_tiles.block_slots(dict(BM=16, wgmma=1, wg_tail=0)) == 16
    for cfg, match in ((dict(BM=64, wgmma=1, wg_tail=24), "wg_tail=24"), (dict(BM=64, wg_tail=16), "wgmma")):
        with pytest.raises(ValueError, match=match):
            mma_tiles.block_slots(cfg)
    tiles = mma_tiles._kernel_tiles(dict(BM=64, wgmma=1, wg_tail=16), 512, "13")[3] \
        if not mma_tiles.wgmma_missing() else None
    if tiles is not None:
        assert tiles["TAIL"] == 16 and tiles["BM"] == 64


def test_wgmma_tiles_outside_what_the_instruction_takes_are_refused():
    assert mma_tiles.wgmma_tile(dict(BM=128, wg_warps=8), 1024) == (128, 8, 128, mma_tiles.WG_STAGES)
    for cfg, size, match in ((dict(BM=8), 512, "BM=8"), (dict(BM=48), 512, "BM=48"), (dict(BM=512), 512, "BM=512"),
                             (dict(BM=64, wg_warps=6), 960, "wg_warps=6"), (dict(BM=64, wg_warps=8), 64, "dividing 64"),
                             (dict(BM=64, wg_stages=1), 512, "wg_stages=1")):
        with pytest.raises(ValueError, match=match):
            mma_tiles.wgmma_tile(cfg, size)


def test_a_k_split_other_than_one_or_two_is_refused():
    """``mma_split`` halves each 128-wide step; a third value would silently mean one of them."""
    assert mma_tiles._split({}) == 1 and mma_tiles._split({"mma_split": 2}) == 2
    with pytest.raises(ValueError, match="mma_split=4"):
        mma_tiles._split({"mma_split": 4})


def test_words_in_flight_are_one_or_two_k_steps_on_the_mma_sync_kernels_only():
    """``mma_ahead``: a value the kernels do not take, or a wgmma tile (which loads one step
    ahead by its own pipeline), is a clear error naming the option."""
    assert mma_tiles.ahead({}) == 1 and mma_tiles.ahead({"mma_ahead": 2}) == 2
    assert mma_tiles._kernel_tiles({"BM": 16, "mma_ahead": 2}, 512, "13")[3]["AHEAD"] == 2
    with pytest.raises(ValueError, match="mma_ahead=3"):
        mma_tiles.ahead({"mma_ahead": 3})
    with pytest.raises(ValueError, match="mma_ahead=2: an mma.sync tile option"):
        mma_tiles._kernel_tiles({"BM": 16, "wgmma": 1, "mma_ahead": 2}, 512, "13")


def test_activations_a_step_ahead_only_on_the_mma_sync_kernels():
    """``mma_xahead``: off unless asked for; a value other than 0 / 1, or a wgmma tile
    (which stages its activations by its own pipeline), is a clear error naming the option."""
    assert mma_tiles._kernel_tiles({"BM": 16}, 512, "2")[3]["XAHEAD"] is False
    assert mma_tiles._kernel_tiles({"BM": 16, "mma_xahead": 1}, 512, "13")[3]["XAHEAD"] is True
    with pytest.raises(ValueError, match="mma_xahead=2: 0 or 1"):
        mma_tiles.xahead({"mma_xahead": 2})
    with pytest.raises(ValueError, match="mma_xahead=1: an mma.sync tile option"):
        mma_tiles._kernel_tiles({"BM": 16, "wgmma": 1, "mma_xahead": 1}, 512, "13")


def test_register_loaded_activations_only_on_the_mma_sync_kernels_and_alone():
    """``mma_xreg``: off unless asked for; a value other than 0 / 1, a wgmma tile (whose
    activations go through shared memory) or ``mma_xahead`` with it is a clear error naming
    the option — from run_chunk too, before any kernel runs."""
    assert mma_tiles._kernel_tiles({"BM": 16}, 512, "2")[3]["XREG"] is False
    assert mma_tiles._kernel_tiles({"BM": 16, "mma_xreg": 1}, 512, "13")[3]["XREG"] is True
    with pytest.raises(ValueError, match="mma_xreg=2: 0 or 1"):
        mma_tiles.xreg({"mma_xreg": 2})
    with pytest.raises(ValueError, match="mma_xreg=1: an mma.sync tile option"):
        mma_tiles._kernel_tiles({"BM": 16, "wgmma": 1, "mma_xreg": 1}, 512, "13")
    with pytest.raises(ValueError, match="mma_xreg=1 with mma_xahead=1"):
        mma_tiles._kernel_tiles({"BM": 16, "mma_xreg": 1, "mma_xahead": 1}, 512, "2")


def test_table_in_vector_registers_only_on_the_mma_sync_kernels():
    """``mma_tabvec``: off unless asked for, on both mma.sync GEMMs; a value other than
    0 / 1 or a wgmma tile is a clear error naming the option."""
    assert mma_tiles._kernel_tiles({"BM": 16}, 512, "13")[3]["TABVEC"] is False
    assert all(mma_tiles._kernel_tiles({"BM": 16, "mma_tabvec": 1}, 512, g)[3]["TABVEC"] is True for g in ("13", "2"))
    with pytest.raises(ValueError, match="mma_tabvec=2: 0 or 1"):
        mma_tiles.tabvec({"mma_tabvec": 2})
    with pytest.raises(ValueError, match="mma_tabvec=1: an mma.sync tile option"):
        mma_tiles._kernel_tiles({"BM": 16, "wgmma": 1, "mma_tabvec": 1}, 512, "2")


def test_decode_ahead_only_on_the_mma_sync_gate_up_kernel():
    """``mma_dahead``: off unless asked for, the gate/up kernel's only (the down kernel
    takes no such constexpr); a value other than 0 / 1, a wgmma tile or ``mma_ahead`` 2
    beside it is a clear error naming the option."""
    assert mma_tiles._kernel_tiles({"BM": 16}, 512, "13")[3]["DAHEAD"] is False
    assert mma_tiles._kernel_tiles({"BM": 16, "mma_dahead": 1}, 512, "13")[3]["DAHEAD"] is True
    assert "DAHEAD" not in mma_tiles._kernel_tiles({"BM": 16, "mma_dahead": 1}, 512, "2")[3]
    with pytest.raises(ValueError, match="mma_dahead=2: 0 or 1"):
        mma_tiles.dahead({"mma_dahead": 2})
    with pytest.raises(ValueError, match="mma_dahead=1: an mma.sync tile option"):
        mma_tiles._kernel_tiles({"BM": 16, "wgmma": 1, "mma_dahead": 1}, 512, "2")
    with pytest.raises(ValueError, match="mma_dahead=1 with mma_ahead=2"):
        mma_tiles._kernel_tiles({"BM": 16, "mma_dahead": 1, "mma_ahead": 2}, 512, "13")


@pytest.mark.parametrize("fmt,tiled,split", [(0, 0, 2), (0, 1, 2), (0, 1, 1), (1, 0, 2)])
def test_gate_up_kernel_with_the_next_step_decoded_ahead_compiles_for_sm90(fmt, tiled, split, tmp_path):
    """``mma_dahead``: the carried operands still reach the A layout without moving between
    lanes (``assert_trivial``), and the kernel has one more step's word loads (the first
    two steps before the loop, then two steps ahead in it, against one and one). Tiled
    NF3's 8-byte loads are its words only (assert_vector_loads): there exactly 3 / 2 of them."""
    if mma_tiles.gluon_missing():
        pytest.skip(f"no Gluon in this Triton: {mma_tiles.gluon_missing()}")
    loads = {}
    for dahead in (0, 1):
        out = compile_probe(tmp_path / str(dahead), "--mma", "--cfg",
                            f"BM=16,fmt={fmt},split={split},tiled={tiled},dahead={dahead}")
        ptx = (out / "mma13_kernel.ptx").read_text()
        assert "mma.sync.aligned.m16n8k16" in ptx
        loads[dahead] = ptx.count("ld.global.v2.b32" if tiled else "ld.global.v4.b32" if fmt else "ld.global.b32")
    assert loads[1] > loads[0], loads
    if tiled:
        assert loads[1] * 2 == loads[0] * 3, loads


def test_split_k_only_on_the_mma_sync_gate_up_kernel_in_whole_steps():
    """``mma_splitk``: off unless asked for, only the gate/up kernel's; 2 or 4 parts, each
    whole 128-wide K steps, and partials scratch to hold them — anything else is a clear
    error naming the option, raised before any launch."""
    assert mma_tiles._kernel_tiles({"BM": 16}, 512, "13")[3]["SPLITK"] == 1
    assert mma_tiles._kernel_tiles({"BM": 16, "mma_splitk": 4}, 512, "13")[3]["SPLITK"] == 4
    assert "SPLITK" not in mma_tiles._kernel_tiles({"BM": 16, "mma_splitk": 4}, 512, "2")[3]
    with pytest.raises(ValueError, match=r"mma_splitk=3: one of \(1, 2, 4\)"):
        mma_tiles.splitk({"mma_splitk": 3})
    with pytest.raises(ValueError, match="mma_splitk=2: an mma.sync tile option"):
        mma_tiles._kernel_tiles({"BM": 16, "wgmma": 1, "mma_splitk": 2}, 512, "13")
    cfg = {"BM": 16, "mma": 1, "mma_splitk": 4}
    ids, bexp = torch.zeros(32, dtype=torch.int32), torch.zeros(2, dtype=torch.int32)
    w13, s13 = torch.zeros((1, 256, 384 * 3 // 8), dtype=torch.uint8), torch.zeros((1, 256, 12), dtype=torch.uint8)
    inter = torch.zeros((32, 128), dtype=torch.float16)
    args = (ids, bexp, torch.zeros(8), inter, 8, 2, 128, 0, False, cfg, (0, 0, 0, 0))
    with pytest.raises(ValueError, match="mma_splitk=4: hidden 384 is not 4 whole 128-wide K steps"):
        mma_tiles.launch_w13(torch.zeros((4, 384), dtype=torch.float16), w13, s13, None, *args)
    with pytest.raises(ValueError, match=r"mma_splitk=2: partials scratch \(16, 512\) is smaller than \[32, 512\]"):
        mma_tiles.launch_w13(torch.zeros((4, 256), dtype=torch.float16), w13, s13, None, *args[:-2],
                             dict(cfg, mma_splitk=2), *args[-1:], partials=torch.zeros((16, 512)))


def test_split_k_partials_are_planned_for_decode_batches_only():
    """``Workspace.splitk_partials``: fp32 [slots, parts·2I] per concurrent tier, sized for
    batches of at most DECODE_TOKENS tokens (their worst-case routing slots), grown for
    more parts; a batch needing more slots is a clear capacity error."""
    ws = triton_tiers.Workspace("cpu")
    ws.reserve(2048, 8, 256, 128, 48)
    part = ws.splitk_partials(2, 0, 100)
    assert part.shape == (100, 2 * 2 * 128) and part.dtype == torch.float32
    want = triton_tiers.align.capacity(triton_tiers.DECODE_TOKENS * 8, 48, ws.max_block)[0]
    assert ws.partial_slots == want
    regions = 2 if ws.side is not None else 1
    assert ws.partials.shape == (regions * want, 512)
    assert ws.splitk_partials(4, 0, want).shape == (want, 4 * 2 * 128)
    with pytest.raises(triton_tiers.CapacityError, match="mma_splitk serves batches of at most"):
        ws.splitk_partials(2, 0, want + 1)


def test_large_batches_take_32_token_blocks_only_when_every_tier_runs_on_mma(monkeypatch):
    """The large class's ``all_mma`` tiles: 32-token blocks and the NVFP4 tier on the mma
    kernels when both tiers can run there; a layer with a tier on the Triton tiles (MXFP4,
    no Gluon) keeps 64-token blocks, as do tiles that turn the mma kernels off — and the
    workspace plans routing slots for the 32-token blocks of a whole chunk."""
    from types import SimpleNamespace

    from nf3_hybrid.kernels import align

    on, off = SimpleNamespace(mma=True, wgmma=False), SimpleNamespace(mma=False, wgmma=False)
    m = triton_tiers.MID_TOKENS + 1
    assert triton_tiers.grouped_class(m) == "large"
    both = triton_tiers.layer_tiles(triton_tiers.grouped_config(m, False), [on, on])
    assert both["BM"] == 32 and both["mma_kept"] == 1 and "all_mma" not in both
    mixed = triton_tiers.layer_tiles(triton_tiers.grouped_config(m, False), [on, off])
    assert mixed["BM"] == 64 and not mixed.get("mma_kept") and "all_mma" not in mixed
    assert not both.get("wgmma") and not mixed.get("wgmma") and "all_wgmma" not in both
    no_mma = triton_tiers.layer_tiles(dict(triton_tiers.grouped_config(m, False), mma=0), [on, on])
    assert no_mma["BM"] == 64
    mid = triton_tiers.grouped_config(triton_tiers.MID_TOKENS, False)
    mid.pop("all_wgmma")
    assert triton_tiers.layer_tiles(dict(mid), [on, off]) == mid  # classes without all_mma unchanged
    monkeypatch.setattr(triton_tiers, "interpret", lambda: False)  # the GPU's tiles
    ws = triton_tiers.Workspace(torch.device("cpu"))
    ws.reserve(4096, 8, 256, 128, 16)
    assert ws.sorted_ids.shape[1] >= align.capacity(ws.chunk * 8, 16, 32)[0]


def test_every_tier_on_wgmma_takes_the_wgmma_tiles_and_their_class_bounds():
    """``all_wgmma`` (SM 9.x): the grouped classes' tiles when every tier of the layer takes
    the wgmma kernels — 16 / 32 / 64 tokens a block in the narrow / mid / large classes, the
    NVFP4 tier on them too, and the narrow class ending at WGMMA_NARROW_TOKENS; one tier
    that cannot (MXFP4 on the Triton tiles, a GPU without warpgroup MMA) keeps the mma.sync
    tiles and bounds for the whole layer. The decode class has no wgmma tiles."""
    from types import SimpleNamespace

    wg, mma = SimpleNamespace(mma=True, wgmma=True), SimpleNamespace(mma=True, wgmma=False)
    tt = triton_tiers
    assert tt.all_wgmma([wg, wg]) and not tt.all_wgmma([wg, mma]) and not tt.all_wgmma([])
    n, mid, wide = tt.WGMMA_NARROW_TOKENS, tt.WGMMA_MID_TOKENS, tt.WIDE_TOKENS
    assert tt.DECODE_TOKENS < n < tt.NARROW_TOKENS < mid < tt.MID_TOKENS < wide
    assert tt.grouped_class(n, True) == "narrow" and tt.grouped_class(n + 1, True) == "mid"
    assert tt.grouped_class(mid + 1, True) == "wide" and tt.grouped_class(wide + 1, True) == "large"
    assert tt.grouped_class(n + 1) == "narrow" and tt.grouped_class(tt.NARROW_TOKENS + 1) == "mid"
    assert tt.grouped_class(wide) == "large"  # no wide class off wgmma
    for m, bm, tail in ((tt.DECODE_TOKENS + 1, 16, 0), (n, 16, 0), (n + 1, 32, 0), (mid, 32, 0), (mid + 1, 32, 16),
                        (wide, 32, 16), (wide + 1, 64, 16), (8192, 64, 16)):
        got = tt.layer_tiles(tt.grouped_config(m, False, tt.all_wgmma([wg, wg])), [wg, wg])
        assert got["wgmma"] == 1 and got["mma_kept"] == 1 and got["BM"] == bm, (m, got)
        assert mma_tiles.block_slots(got) == bm + tail, (m, got)
        assert not got.get("wg_gu"), (m, got)  # measured slower in every class (session 17)
        assert "all_wgmma" not in got and "all_mma" not in got
        mixed = tt.layer_tiles(tt.grouped_config(m, False, tt.all_wgmma([wg, mma])), [wg, mma])
        assert not mixed.get("wgmma") and "all_wgmma" not in mixed
        mma_bm = 16 if m <= tt.NARROW_TOKENS else 32
        assert mixed["BM"] == mma_bm, (m, mixed)
    small = tt.layer_tiles(tt.grouped_config(tt.DECODE_TOKENS, False, True), [wg, wg])
    assert not small.get("wgmma")
    # the shapes the wgmma launcher takes, at GLM-5.2's gate/up (I = 512) and down rows
    for m in (n, mid, wide, 8192):
        cfg = tt.layer_tiles(tt.grouped_config(m, False, True), [wg, wg])
        for rows in (512, 6144):
            assert mma_tiles.wgmma_tile(cfg, rows)[0] == cfg["BM"]


def test_the_workspace_plans_slots_for_the_wgmma_blocks(monkeypatch):
    """The wgmma tiles' blocks with their tails (the large class's 64 + 16 slots, the wide
    class's 32 + 16) are in the workspace's plan (routing slots grow with the block size)
    before any CUDA graph is captured."""
    from nf3_hybrid.kernels import align

    monkeypatch.setattr(triton_tiers, "interpret", lambda: False)  # the GPU's tiles
    ws = triton_tiers.Workspace(torch.device("cpu"))
    ws.reserve(4096, 8, 256, 128, 16)
    assert ws.max_block >= 80
    for slots in (16, 48, 80):
        cap, blocks = align.capacity(ws.chunk * 8, 16, slots)
        assert ws.sorted_ids.shape[1] >= cap and ws.block_expert.shape[1] >= blocks


def _fake_cuda(monkeypatch, capability):
    monkeypatch.setattr(triton_tiers, "device_info", lambda dev: select.DeviceInfo("cuda", capability, "fake"))
    monkeypatch.setattr(triton_tiers, "interpret", lambda: False)


def test_which_tiers_use_the_mma_kernels(monkeypatch):
    nf3 = make_tier("nf3", 2, 256, 128, [0, 1])
    nvfp4 = make_tier("nvfp4", 2, 256, 128, [0, 1])
    mxfp4 = make_tier("mxfp4_e8m0k32", 2, 256, 128, [0, 1])
    odd = make_tier("nf3", 2, 256, 96, [0, 1])
    assert not triton_tiers._mma_usable(nf3)  # this CPU
    monkeypatch.setattr(mma_tiles, "gluon_missing", lambda: "")
    _fake_cuda(monkeypatch, (9, 0))
    assert triton_tiers._mma_usable(nf3) and triton_tiers._mma_usable(nvfp4)
    assert not triton_tiers._mma_usable(mxfp4) and not triton_tiers._mma_usable(odd)
    _fake_cuda(monkeypatch, (8, 0))  # no e4m3 conversion before SM89
    assert not triton_tiers._mma_usable(nf3)


def test_which_tiers_take_the_wgmma_variant(monkeypatch):
    """Warpgroup MMA exists on SM 9.x only: not on Ada (8.9), Blackwell (10.0) or the SM120
    workstation parts, where the mma.sync kernels stay."""
    nf3 = make_tier("nf3", 2, 256, 128, [0, 1])
    monkeypatch.setattr(mma_tiles, "gluon_missing", lambda: "")
    monkeypatch.setattr(mma_tiles, "wgmma_missing", lambda: "")
    monkeypatch.setattr(triton_tiers.Workspace, "_by_device", {})
    for cap, want in (((9, 0), True), ((8, 9), False), ((10, 0), False), ((12, 0), False)):
        _fake_cuda(monkeypatch, cap)
        assert triton_tiers._mma_usable(nf3) == (cap >= (8, 9))
        assert triton_tiers._wgmma_usable(nf3) == want, cap


def test_wgmma_asked_where_it_cannot_run_takes_the_mma_kernels_and_says_so_once(monkeypatch, caplog):
    """A tile override with ``wgmma`` on a GPU without warpgroup MMA: the tier's GEMMs run on
    the mma.sync kernels with the same token blocks (without the wgmma register cap), one
    warning names why."""
    nf3 = make_tier("nf3", 2, 256, 128, [0, 1])
    monkeypatch.setattr(mma_tiles, "gluon_missing", lambda: "")
    monkeypatch.setattr(triton_tiers, "_MMA_FALLBACK_LOGGED", set())
    ws = triton_tiers.Workspace(torch.device("cpu"))  # its scratch on this CPU
    ws.reserve(64, 2, 256, 128, 2)
    _fake_cuda(monkeypatch, (12, 0))
    tier = triton_tiers.TritonTier(nf3, ws)
    assert tier.mma and not tier.wgmma
    launched = []
    monkeypatch.setattr(mma_tiles, "launch_w13", lambda *a, **k: launched.append(("w13", dict(a[-2]))))
    monkeypatch.setattr(mma_tiles, "launch_w2", lambda *a, **k: launched.append(("w2", dict(a[-3]))))
    cfg = dict(BM=64, mma=1, mma_kept=1, wgmma=1, wg_maxnreg=168)
    x = torch.zeros(4, 256)
    with caplog.at_level(logging.WARNING, logger=triton_tiers.__name__):
        for _ in range(2):
            tier.gemms(x, None, ws.sorted_ids[0, :64], None, None, 8, 2, False, cfg, True, x_mma=x)
    assert [name for name, _ in launched] == ["w13", "w2"] * 2
    assert all("wgmma" not in c and c["BM"] == 64 for _, c in launched)
    assert all("wg_maxnreg" not in c for _, c in launched)  # a cap for the wgmma kernels only
    lines = [r.getMessage() for r in caplog.records if "wgmma" in r.getMessage()]
    assert len(lines) == 1 and "SM 9.x" in lines[0] and "(12, 0)" in lines[0]


def test_a_tail_asked_where_wgmma_cannot_run_is_a_clear_error(monkeypatch):
    """The routing would lay the blocks out with their tails, which only the wgmma kernels
    read: the mma.sync kernels and the Triton tiles would leave the tails' pairs out, so a
    layer whose tiers cannot all run wgmma refuses the option, naming it, before any launch."""
    nf3 = make_tier("nf3", 2, 256, 128, [0, 1, -1, -1])
    mxfp4 = make_tier("mxfp4_e8m0k32", 2, 256, 128, [-1, -1, 0, 1])
    monkeypatch.setattr(mma_tiles, "gluon_missing", lambda: "")
    monkeypatch.setattr(mma_tiles, "wgmma_missing", lambda: "")
    ws = triton_tiers.Workspace(torch.device("cpu"))
    ws.reserve(64, 2, 256, 128, 2)
    m = triton_tiers.DECODE_TOKENS + 1
    cls = triton_tiers.grouped_class(m)
    tiles = dict(BM=16, mma=1, mma_kept=1, wgmma=1, wg_tail=16)
    monkeypatch.setattr(triton_tiers, "CONFIG_OVERRIDE", {cls: tiles})
    monkeypatch.setattr(triton_tiers.align, "launch", lambda *a: pytest.fail("routed"))
    x, w, ids = torch.zeros(m, 256), torch.full((m, 2), 0.5), torch.zeros(m, 2, dtype=torch.int32)
    for cap, layer in (((12, 0), [nf3]), ((9, 0), [nf3, mxfp4])):  # no wgmma; one tier on the Triton tiles
        _fake_cuda(monkeypatch, cap)
        tiers = [triton_tiers.TritonTier(t, ws) for t in layer]
        assert not triton_tiers.all_wgmma(tiers)
        with pytest.raises(ValueError, match="wg_tail"):
            triton_tiers.run_chunk(tiers, triton_tiers.stacked_maps(tiers), x, w, ids, False,
                                   result=torch.zeros(m, 256))


def test_a_triton_without_gluon_falls_back_and_says_so_once(monkeypatch, caplog):
    nf3 = make_tier("nf3", 2, 256, 128, [0, 1])
    _fake_cuda(monkeypatch, (9, 0))
    monkeypatch.setattr(mma_tiles, "gluon_missing", lambda: "ImportError: no gluon (test)")
    monkeypatch.setattr(triton_tiers, "_MMA_FALLBACK_LOGGED", set())
    with caplog.at_level(logging.WARNING, logger=triton_tiers.__name__):
        assert not triton_tiers._mma_usable(nf3)
        assert not triton_tiers._mma_usable(nf3)
    lines = [r.getMessage() for r in caplog.records if "mma kernels" in r.getMessage()]
    assert len(lines) == 1 and "no gluon (test)" in lines[0]
