"""HYBRID_TIER isolation and HYBRID_DEBUG's per-tier report, on real vLLM layers (CPU)."""
import logging

import pytest
import torch

from nf3_hybrid import flags
from tests.vllm_cpu import harness as H

LAYER = 2


@pytest.fixture
def flag_env(monkeypatch):
    def set_(**env):
        for k, v in env.items():
            monkeypatch.setenv(k, v)
        flags.reset_for_tests()

    yield set_
    monkeypatch.undo()
    flags.reset_for_tests()


def _layer(ckpt):
    return H.loaded_moe(ckpt, LAYER)


@pytest.mark.parametrize("tier", ["a", "b"])
def test_tier_isolation(vllm_tp1, tiny_hybrid, flag_env, tier):
    flag_env(HYBRID_TIER=tier)
    runner = _layer(tiny_hybrid)
    plan = runner.routed_experts.quant_method.plan
    keep = set(plan.kept if tier == "a" else plan.nf3)
    experts = H.dequantized_experts(tiny_hybrid, LAYER)
    w, ids = H.random_routing(6, 32, 4, seed=2)
    x = torch.randn(6, 256).to(torch.bfloat16)
    masked_w = w * torch.tensor([[int(int(e) in keep) for e in row] for row in ids])
    want = H.reference_moe(experts, x, masked_w, ids)
    assert H.rel_err(H.apply_routed(runner, x, w, ids), want) < 1e-2


def _debug_lines(tiny_hybrid, sizes):
    """The debug lines logged while a fresh layer runs one call per size."""
    records = []
    handler = logging.Handler()
    handler.emit = lambda r: records.append(r.getMessage())
    log = logging.getLogger("vllm.nf3_hybrid.vllm_patch.moe_method")
    vlog = logging.getLogger("vllm")
    for lg in (log, vlog):
        lg.addHandler(handler)
    level = log.level
    log.setLevel(logging.INFO)  # vLLM sets INFO on "vllm" when it configures logging in an engine
    try:
        runner = _layer(tiny_hybrid)
        for m in sizes:
            w, ids = H.random_routing(m, 32, 4, seed=3)
            x = torch.randn(m, 256).to(torch.bfloat16)
            H.apply_routed(runner, x, w, ids)
    finally:
        log.setLevel(level)
        for lg in (log, vlog):
            lg.removeHandler(handler)
    return sorted({r for r in records if "nf3-hybrid debug" in r})


def test_debug_reports_each_tier_once(vllm_tp1, tiny_hybrid, flag_env):
    flag_env(HYBRID_DEBUG="1")
    lines = _debug_lines(tiny_hybrid, [5, 5])
    assert len(lines) == 1, lines
    line = lines[0]
    assert f"model.layers.{LAYER}.mlp.experts: M=5" in line
    assert "kept (nvfp4, ref)" in line and "nf3 (nf3, ref)" in line
    assert line.count("nan=0 inf=0") == 2 and line.count("rel.err vs ref=0") == 2


def test_debug_count_reports_the_first_calls(vllm_tp1, tiny_hybrid, flag_env):
    flag_env(HYBRID_DEBUG="2")
    lines = _debug_lines(tiny_hybrid, [5, 6, 7])
    # what scripts/vllm_e2e.py --debug reads out of an engine's log
    import importlib.util
    from pathlib import Path

    spec = importlib.util.spec_from_file_location("vllm_e2e", Path(__file__).parents[2] / "scripts" / "vllm_e2e.py")
    e2e = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(e2e)
    rows = e2e.debug_errors("\n".join(f"INFO 12-01 [moe_method.py:298] nf3-hybrid debug {ln.split('nf3-hybrid debug ')[1]}"
                                      for ln in lines))
    assert [(r[0], r[1]) for r in rows] == [(f"model.layers.{LAYER}.mlp.experts", 5),
                                            (f"model.layers.{LAYER}.mlp.experts", 6)], lines
    assert all(r[2] == {"kept (nvfp4, ref)": 0.0, "nf3 (nf3, ref)": 0.0} for r in rows), rows


def test_activation_capture_from_a_serving_layer(vllm_tp1, tiny_hybrid, flag_env, tmp_path):
    from nf3_hybrid.capture import load_layer
    from nf3_hybrid.vllm_patch import moe_method

    moe_method._capture = None
    flag_env(HYBRID_ACT_CAPTURE=str(tmp_path / "cap"), HYBRID_ACT_CAPTURE_TOKENS="100")
    try:
        runner = _layer(tiny_hybrid)
        xs, idss = [], []
        for m in (80, 10, 70):  # the 10-token (decode-sized) call is not captured
            w, ids = H.random_routing(m, 32, 4, seed=m)
            x = torch.randn(m, 256).to(torch.bfloat16)
            H.apply_routed(runner, x, w, ids)
            if m > 64:
                xs.append(x)
                idss.append(ids)
        moe_method._capture.flush()
        x, ids = load_layer(tmp_path / "cap", LAYER)
        assert x.shape == (100, 256)  # capped per layer
        assert torch.equal(x, torch.cat(xs)[:100].half()) and torch.equal(ids, torch.cat(idss)[:100].int())
    finally:
        moe_method._capture = None
