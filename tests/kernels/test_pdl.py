"""The decode path's programmatic dependent launch, checked in the code Triton generates
for SM90 (compiled on the CPU by bench/compile_probe.py in a child process without the
interpreter; the H200 runs it in the GPU tests): each GEMV waits for the kernel before it
only after it has issued its first weight loads, and lets the next kernel launch; without
PDL neither instruction is there."""
import ast

import pytest

from .sm90 import compile_probe


@pytest.mark.parametrize("pdl", [1, 0])
def test_gemv_waits_after_its_first_weight_loads(pdl, tmp_path):
    compile_probe(tmp_path, "--cfg", f"BN13=2,BK13=1024,BN2=8,BK2=512,warps=1,pdl={pdl}")
    for kernel in ("_gemv13_kernel", "_gemv2_kernel"):
        lines = (tmp_path / f"{kernel}.ptx").read_text().splitlines()
        waits = [i for i, ln in enumerate(lines) if "griddepcontrol.wait" in ln]
        launches = [i for i, ln in enumerate(lines) if "griddepcontrol.launch_dependents" in ln]
        loads = [i for i, ln in enumerate(lines) if "ld.global" in ln]
        if not pdl:
            assert not waits and not launches, kernel
            continue
        # one wait per tier branch, each after that branch issued its first weight words
        # (vector loads: the prologue's pair, map and weight loads are scalar) and before
        # loads that follow (the activations); dependents let go after both
        assert len(waits) == 2 and len(launches) == 1, (kernel, waits, launches)
        start = 0
        for w in waits:
            assert any(start <= i < w and "ld.global.v" in lines[i] for i in loads), (kernel, w)
            assert any(i > w for i in loads), kernel
            start = w
        assert launches[0] > max(waits), kernel


@pytest.mark.parametrize("l2pf", [1, 0])
@pytest.mark.parametrize("tiled", [1, 0])
def test_gemv_l2_prefetch_is_issued_before_the_first_weight_loads(l2pf, tiled, tmp_path):
    """Tile option ``l2pf``: each tier branch asks the bulk copy engine for its rows (and
    with gate/up pairs their up rows), words and scales, before its first weight
    load — a prefetch Triton dropped or moved after the loads would buy nothing. One
    thread issues it (predicated on %tid.x)."""
    compile_probe(tmp_path, "--cfg", f"BN13=2,BK13=1024,BN2=8,BK2=512,warps=1,l2pf={l2pf},tiled={tiled}")
    for kernel, per_branch in (("_gemv13_kernel", 4), ("_gemv2_kernel", 2)):
        lines = (tmp_path / f"{kernel}.ptx").read_text().splitlines()
        pf = [i for i, ln in enumerate(lines) if "cp.async.bulk.prefetch.L2.global" in ln]
        if not l2pf:
            assert not pf, kernel
            continue
        assert len(pf) == 2 * per_branch, (kernel, len(pf))
        assert all("@" in lines[i] for i in pf), kernel  # predicated: one thread
        loads = [i for i, ln in enumerate(lines) if "ld.global" in ln]
        for branch in (pf[:per_branch], pf[per_branch:]):
            # the branch's weight loads follow its prefetches, none between them
            assert any(i > max(branch) for i in loads), kernel
            assert not [i for i in loads if min(branch) < i < max(branch)], kernel


def _report(out_dir):
    """compile_probe's report: {kernel: its dict}."""
    rows = (ln.split(" ", 1) for ln in (out_dir / "report.txt").read_text().splitlines() if ln.startswith("_gemv"))
    return {name: ast.literal_eval(d) for name, d in rows}


def _probe_report(tmp_path, name, cfg):
    """compile_probe's report for the decode GEMVs under ``--cfg cfg``, its files in
    tmp_path / name."""
    out = tmp_path / name
    out.mkdir()
    compile_probe(out, "--cfg", cfg)
    return _report(out)


def _loops(report):
    """A kernel's loops' instruction counts, in code order (the kept tier's, then NF3's)."""
    return [lp["instructions"] for lp in report["loops"] if lp["instructions"] > 1]


@pytest.mark.parametrize("inter,down", [(512, "BN2=32,BK2=128"), (2048, "BN2=8,BK2=512")])
def test_gemv_with_k_a_constant_compiles_to_shorter_loops_in_fewer_registers(inter, down, tmp_path):
    """Tile options ``kconst13`` / ``kconst2`` exist for what ptxas makes of a known K (the activation
    planes' strides and the loop bound as immediates): at GLM-5.2's shapes and the
    built-in tiles, each GEMV's NF3 loop (its last) is shorter and takes no more registers
    than with K at run time, without a spill. If a Triton stops folding the constant, the
    options buy nothing and this says so."""
    got = {kconst: _probe_report(tmp_path, str(kconst), f"BN13=2,BK13=1024,{down},warps=1,inter={inter},kconst={kconst}")
           for kconst in (0, 1)}
    for kernel in ("_gemv13_kernel", "_gemv2_kernel"):
        plain, const = got[0][kernel], got[1][kernel]
        assert _loops(const)[-1] < _loops(plain)[-1], (kernel, _loops(const), _loops(plain))
        assert const["regs"] <= plain["regs"] and const["stack"] == 0, (kernel, const["regs"], plain["regs"])


def test_gemv_with_clamped_next_block_loads_compiles_to_shorter_loops(tmp_path):
    """Tile option ``clamp`` exists for the predicates and zero-fills a masked load costs:
    with the next block's offset clamped instead, each GEMV's NF3 loop (tiled NF3) is
    shorter than with masks, with and without K a constant; with K a constant (the only way
    the built-in tiles take clamp) both tiers' loops are, and neither takes more registers
    or spills. Without K a constant the kept loop of the down GEMV may not shrink: under
    Triton 3.6 (the H200 host's) it is 464 -> 467 instructions (session 29's GPU run)."""
    got = {(clamp, kconst): _probe_report(tmp_path, f"{clamp}{kconst}",
                                          f"BN13=2,BK13=1024,BN2=32,BK2=128,warps=1,tiled=1,kconst={kconst},clamp={clamp}")
           for clamp in (0, 1) for kconst in (0, 1)}
    for kernel in ("_gemv13_kernel", "_gemv2_kernel"):
        for kconst in (0, 1):
            plain, clamped = got[0, kconst][kernel], got[1, kconst][kernel]
            assert len(_loops(clamped)) == len(_loops(plain)) == 2, (kernel, _loops(plain), _loops(clamped))
            shorter = [c < p for c, p in zip(_loops(clamped), _loops(plain))]
            assert shorter[-1] and (all(shorter) or not kconst), (kernel, kconst, _loops(plain), _loops(clamped))
            assert clamped["regs"] <= plain["regs"] and clamped["stack"] == 0, (kernel, kconst)


@pytest.mark.parametrize("kconst", [1, 0])
def test_gemv_with_two_word_e2m1_blocks_compiles_to_shorter_kept_loops(kconst, tmp_path):
    """Tile option ``e2m1x2`` exists for the conversions, adds and scale multiplies a pair
    of e2m1 words shares: each GEMV's kept-tier loop (its first) is shorter than with
    one-word blocks and does not spill, with the options the built-in tiles take it with
    (kconst and clamp: there in no more registers) and without them (where the gate/up GEMV
    may take a few more: 128 -> 132 under Triton 3.6, session 29's GPU run)."""
    extra = ",clamp=1" if kconst else ""
    got = {pair: _probe_report(tmp_path, str(pair),
                               f"BN13=2,BK13=1024,BN2=32,BK2=128,warps=1,tiled=1,kconst={kconst}{extra},e2m1x2={pair}")
           for pair in (0, 1)}
    for kernel in ("_gemv13_kernel", "_gemv2_kernel"):
        one, two = got[0][kernel], got[1][kernel]
        assert _loops(two)[0] < _loops(one)[0], (kernel, _loops(one), _loops(two))
        assert two["stack"] == 0 and (two["regs"] <= one["regs"] or not kconst), (kernel, one["regs"], two["regs"])


@pytest.mark.parametrize("down", ["BN2=32,BK2=128", "BN2=8,BK2=512,inter=2048"])
def test_gemv_with_four_word_nf3_sums_compiles_to_shorter_nf3_loops(down, tmp_path):
    """Tile option ``nf3x4`` exists for the register move, conversions and adds that the
    NF3 group block's second fp16 run costs: with the options the built-in tiles take from
    4 tokens (kconst, clamp, e2m1x2), at I=512's and I=2048's down tiles, each GEMV's NF3 loop
    (its last) is shorter, its kept loop unchanged, in no more registers and without a spill
    (Triton 3.6 and 3.8: 364 -> 349 gate/up, 366-367 -> 351-352 down)."""
    got = {x4: _probe_report(tmp_path, str(x4), f"BN13=2,BK13=1024,{down},warps=1,tiled=1,kconst=1,clamp=1,"
                                                f"e2m1x2=1,nf3x4={x4}")
           for x4 in (0, 1)}
    for kernel in ("_gemv13_kernel", "_gemv2_kernel"):
        two, four = got[0][kernel], got[1][kernel]
        assert _loops(four)[-1] < _loops(two)[-1] and _loops(four)[0] == _loops(two)[0], (kernel, _loops(two), _loops(four))
        assert four["regs"] <= two["regs"] and four["stack"] == 0, (kernel, two["regs"], four["regs"])
