"""The benchmark's tile sweep as far as a CPU allows: which candidates a filtered sweep
times (the device time of a GPU session goes to exactly these), and that every wgmma
candidate is a tile the wgmma launcher takes."""
import pytest

from nf3_hybrid import bench
from nf3_hybrid.backends import triton_tiers
from nf3_hybrid.kernels import mma_tiles


def test_a_filtered_sweep_times_the_built_in_tiles_and_the_option_s_candidates():
    for cls in ("narrow", "mid", "wide", "large"):
        builtin = triton_tiers.grouped_config(bench.SWEEP_TOKENS[cls][0], False, True)
        cands = bench.sweep_candidates(cls, builtin, "wgmma")
        assert cands[0] == builtin and not cands[0].get("wgmma")
        assert len(cands) > 1 and all(c.get("wgmma") for c in cands[1:])
        assert [c for c in bench.SWEEP[cls] if c.get("wgmma")] == cands[1:]
    assert bench.sweep_candidates("large", {}, None) == bench.SWEEP["large"]


def test_wgmma_candidates_are_tiles_the_launcher_takes_at_glm5_shapes():
    """Both tiers on them (mma and mma_kept), no all_mma (it would replace BM), and the
    block, row and tail tiles valid for GLM-5.2's gate/up (I = 512 at TP 4) and down (6144) GEMMs."""
    wg = [c for cs in bench.SWEEP.values() for c in cs if c.get("wgmma")]
    assert wg
    for c in wg:
        assert c["mma"] and c["mma_kept"] and "all_mma" not in c
        for rows in (512, 6144):
            bm, warps, bn, stages = mma_tiles.wgmma_tile(c, rows)
            assert bm == c["BM"] and bn == 16 * warps and stages >= 2
        # routing slots a block: its tokens and its tail's
        assert mma_tiles.block_slots(c) == c["BM"] + c.get("wg_tail", 0)


def test_each_grouped_class_is_timed_at_token_counts_inside_it():
    """A sweep candidate replaces only its own class's tiles: a token count of another class
    would time that class's built-in tiles for every candidate."""
    for cls, tokens in bench.SWEEP_TOKENS.items():
        if cls != "gemv":
            assert {triton_tiers.grouped_class(m, wgmma=True) for m in tokens} == {cls}, (cls, tokens)
            if cls != "wide":  # a class of the wgmma bounds only
                assert {triton_tiers.grouped_class(m) for m in tokens} == {cls}, (cls, tokens)
    assert set(bench.SWEEP_TOKENS) - {"gemv"} == set(triton_tiers.class_tiles(False))


def test_tiles_from_a_sweep_json_replace_exactly_the_classes_it_chose(tmp_path, monkeypatch):
    """``bench --tiles``: a later run (the one with Marlin beside ours) times the tiles a
    sweep chose; the classes it did not sweep keep their built-in tiles, gemv is left alone."""
    import json

    monkeypatch.setattr(triton_tiers, "CONFIG_OVERRIDE", None)
    builtin_mid = triton_tiers.grouped_config(800, False)
    large = next(c for c in bench.SWEEP["large"] if c.get("wgmma"))
    path = tmp_path / "sweep.json"
    path.write_text(json.dumps({"kernel_configs": {"chosen": {"large": large, "gemv": {"BN": 1}}}}))
    got = bench.use_tiles(json.loads(path.read_text()))
    assert got == {"large": large}
    assert triton_tiers.grouped_config(3000, False) == large
    assert triton_tiers.grouped_config(800, False) == builtin_mid
    assert triton_tiers.kernel_config(1, False) != {"BN": 1}
    with pytest.raises(ValueError, match="kernel_configs.chosen"):
        bench.use_tiles({"rows": []})
    with pytest.raises(ValueError, match="unknown batch classes"):
        bench.use_tiles({"chosen": {"huge": {}}})


def test_chunk_tokens_pair_rows_and_serial_tiers_set_what_the_workspace_plans_and_nonsense_is_refused(
        monkeypatch, capsys):
    """``bench --chunk-tokens N``: the run's workspaces are planned in passes of N tokens
    (what session 17 timed 4096-token passes with); ``--pair-rows fp32``: their pair rows
    in fp32 (bf16 by default); ``--tiers concurrent`` / ``serial``: the grouped path's tiers
    always on two streams (the serial rule off) or on one (no second stream), to time what
    their overlap is worth. A chunk below 1 is a clear error before any GPU work."""
    import torch

    from nf3_hybrid import cli

    # restored after the test
    monkeypatch.setattr(triton_tiers, "CHUNK_TOKENS", triton_tiers.CHUNK_TOKENS)
    monkeypatch.setattr(triton_tiers, "PAIR_ROWS_DTYPE", triton_tiers.PAIR_ROWS_DTYPE)
    monkeypatch.setattr(triton_tiers, "CONCURRENT_TIERS", triton_tiers.CONCURRENT_TIERS)
    monkeypatch.setattr(triton_tiers, "SERIAL_TIERS_FROM_INTER", triton_tiers.SERIAL_TIERS_FROM_INTER)
    planned = []

    def fake_run(shapes, tokens, out_dir, tag, with_stock=True):
        ws = triton_tiers.Workspace(torch.device("cpu"))
        ws.reserve(8192, 2, 64, 32, 4)
        planned.append((ws.chunk, ws.pair_rows.dtype, triton_tiers.CONCURRENT_TIERS,
                        triton_tiers.SERIAL_TIERS_FROM_INTER, tuple(tokens), with_stock))
        return {}

    monkeypatch.setattr(bench, "run", fake_run)
    assert cli.main(["bench", "--ours-only", "--chunk-tokens", "4096", "--tokens", "3072"]) == 0
    assert cli.main(["bench", "--ours-only", "--pair-rows", "fp32", "--tokens", "8"]) == 0
    serial_from = triton_tiers.SERIAL_TIERS_FROM_INTER
    assert cli.main(["bench", "--ours-only", "--tiers", "concurrent", "--tokens", "8"]) == 0
    assert cli.main(["bench", "--ours-only", "--tiers", "serial", "--tokens", "8"]) == 0
    assert planned == [(4096, torch.bfloat16, True, serial_from, (3072,), False),
                       (4096, torch.float32, True, serial_from, (8,), False),
                       (4096, torch.float32, True, None, (8,), False),
                       (4096, torch.float32, False, None, (8,), False)]
    assert cli.main(["bench", "--chunk-tokens", "0"]) == 2
    assert "--chunk-tokens 0" in capsys.readouterr().err and len(planned) == 4


def test_breakdown_profiles_the_token_counts_and_intermediate_size_it_is_given(monkeypatch, tmp_path):
    """``bench --breakdown --inter N --tokens ...`` profiles those sizes (session 18 read the
    decode path at 16 tokens from it); without them the default sizes; the result is
    written as kernel_breakdown_<tag>.json."""
    import json

    from nf3_hybrid import cli

    asked = []

    def fake_breakdown(inter=512, tokens=bench.BREAKDOWN_TOKENS, log=print):
        asked.append((inter, tuple(tokens)))
        return {"inter": inter, "per_call_us": {m: {} for m in tokens}}

    monkeypatch.setattr(bench, "breakdown", fake_breakdown)
    out = str(tmp_path)
    assert cli.main(["bench", "--ours-only", "--breakdown", "--inter", "2048", "--tokens", "4", "16",
                     "--out-dir", out, "--tag", "t"]) == 0
    assert cli.main(["bench", "--ours-only", "--breakdown", "--out-dir", out, "--tag", "d"]) == 0
    assert asked == [(2048, (4, 16)), (512, bench.BREAKDOWN_TOKENS)]
    assert json.loads((tmp_path / "kernel_breakdown_t.json").read_text())["inter"] == 2048


def test_decode_gemv_register_caps_are_checked_and_become_launch_options():
    """expert_gemv.register_caps: ptxas's ``maxnreg`` per GEMV, nothing when unset, and a
    clear error naming the option for a cap ptxas would not take; every sweep candidate
    that sets one is valid."""
    from nf3_hybrid.kernels import expert_gemv

    assert expert_gemv.register_caps({}) == ({}, {})
    assert expert_gemv.register_caps(dict(maxnreg13=96, maxnreg2=112)) == (dict(maxnreg=96), dict(maxnreg=112))
    for bad in (100, 56, 136, 95.5):
        with pytest.raises(ValueError, match="maxnreg2"):
            expert_gemv.register_caps(dict(maxnreg2=bad))
    capped = bench.sweep_candidates("gemv", {}, "maxnreg2")[1:]
    assert capped
    for c in capped:
        assert expert_gemv.register_caps(c) == (dict(maxnreg=c["maxnreg13"]), dict(maxnreg=c["maxnreg2"]))


def test_the_decode_gemv_takes_its_k_as_a_constant_where_that_measured_faster():
    """triton_tiers.GEMV_KCONST_FROM_INTER / _FROM_TOKENS (session 26, H200: at I=2048
    faster at every GEMV size, at I=512 slower at 1-2 tokens): the built-in GEMV options
    per token count and intermediate size, both GEMVs alike, read back by the launcher's
    own parser; clamp and e2m1x2 (session 29) exactly where K is a constant; the
    interpreter's tiles ask for none of them."""
    from nf3_hybrid.backends import triton_tiers
    from nf3_hybrid.kernels import expert_gemv

    for m, inter, on in ((1, 512, False), (3, 512, False), (4, 512, True), (16, 512, True),
                         (1, 1024, False), (8, 1024, True), (1, 2048, True), (6, 4096, True)):
        cfg = triton_tiers.kernel_config(m, False, inter)
        assert cfg == triton_tiers.gemv_config(m, inter)
        assert expert_gemv.kconst_options(cfg) == (on, on), (m, inter)
        assert expert_gemv.clamp_option(cfg) == expert_gemv.e2m1x2_option(cfg) == on, (m, inter)
    interp = triton_tiers.kernel_config(8, True, 2048)
    assert expert_gemv.kconst_options(interp) == (False, False)
    assert not expert_gemv.clamp_option(interp) and not expert_gemv.e2m1x2_option(interp)
