"""The hybrid keys survive vLLM's ModelOptNvFp4Config.from_config, pickling and spawn."""
import json
import pickle

import pytest

from nf3_hybrid.bitmap import HybridConfigError


def _qc(ckpt):
    from tests.vllm_cpu.harness import quant_config

    return quant_config(ckpt)


@pytest.mark.parametrize("name,opts,layout", [
    ("tiny-hybrid", {}, "config"),
    ("nested", {"config_layout": "hf_quant_config", "kept_per_layer": 2}, "hf_quant_config"),
    ("mx", {"kept_format": "mxfp4_e8m0k32", "kept_per_layer": 4}, "config"),
])
def test_from_config_keeps_the_hybrid_spec(make_ckpt, name, opts, layout):
    ckpt = make_ckpt(name, **opts)
    qc = _qc(ckpt)
    spec = qc.nf3_hybrid_spec
    assert sorted(spec.bit_map) == [1, 2, 3]
    assert spec.bit_map[1].count(0) == opts.get("kept_per_layer", 8)
    assert spec.kept_format == opts.get("kept_format", "nvfp4")
    assert qc.quant_method == "W4A16_NVFP4" and qc.group_size == 16
    clone = pickle.loads(pickle.dumps(qc))
    assert clone.nf3_hybrid_spec == spec


def test_vllm_detects_both_layouts_as_modelopt_fp4(make_ckpt):
    from vllm.config import ModelConfig

    for name, opts in (("tiny-hybrid", {}), ("nested", {"config_layout": "hf_quant_config", "kept_per_layer": 2})):
        assert ModelConfig(model=str(make_ckpt(name, **opts))).quantization == "modelopt_fp4"


def _spawned_spec(blob, q):
    import nf3_hybrid.hook as h
    import vllm.model_executor.layers.quantization.modelopt as m

    qc = pickle.loads(blob)
    spec = qc.nf3_hybrid_spec
    q.put(({str(k): list(p.bits) for k, p in spec.bit_map.items()}, h.status(),
           m.ModelOptNvFp4Config.FusedMoEMethodCls.__name__))


def test_spawned_worker_is_patched_and_gets_the_spec(tiny_hybrid):
    """A spawned child (how vLLM starts TP workers) is armed by the .pth and patched on
    importing modelopt, and the pickled config it receives keeps the bit map. One child
    for both: each spawn is a vLLM import (~19 CPU s)."""
    import multiprocessing as mp

    qc = _qc(tiny_hybrid)
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    p = ctx.Process(target=_spawned_spec, args=(pickle.dumps(qc), q))
    p.start()
    got, status, cls = q.get(timeout=300)
    p.join(60)
    assert status["armed"] and status["patched"] and cls == "HybridNvFp4FusedMoE"
    want = json.loads((tiny_hybrid / "config.json").read_text())["quantization_config"]["hybrid_bit_map"]
    assert got == want


@pytest.mark.parametrize("bad,match", [
    ({"2": [4, 3, 5]}, "layer 2 expert 2: bits must be 4"),
    ({"1": [4] * 32, "2": [3] * 16}, "disagree on the expert count"),
])
def test_malformed_bit_map_fails_in_from_config(tiny_hybrid, bad, match):
    from vllm.model_executor.layers.quantization.modelopt import ModelOptNvFp4Config

    raw = json.loads((tiny_hybrid / "config.json").read_text())["quantization_config"]
    raw["hybrid_bit_map"] = bad
    with pytest.raises(HybridConfigError, match=match):
        ModelOptNvFp4Config.from_config(raw)


def test_intermediate_size_that_cannot_split_across_tp(tiny_hybrid):
    from vllm.config import DeviceConfig, ModelConfig, VllmConfig, set_current_vllm_config
    from vllm.model_executor.layers.quantization.modelopt import ModelOptNvFp4Config

    raw = json.loads((tiny_hybrid / "config.json").read_text())["quantization_config"]
    cfg = VllmConfig(model_config=ModelConfig(model=str(tiny_hybrid)), device_config=DeviceConfig(device="cpu"))
    for tp, ok in ((3, False), (16, False), (8, True)):
        cfg.parallel_config.tensor_parallel_size = tp
        with set_current_vllm_config(cfg):
            if ok:
                ModelOptNvFp4Config.from_config(raw)
            else:
                with pytest.raises(HybridConfigError, match=f"moe_intermediate_size 256 cannot be split across tensor_parallel_size={tp}"):
                    ModelOptNvFp4Config.from_config(raw)


def test_hybrid_only_flags_on_a_plain_checkpoint_are_reported_once(make_ckpt, monkeypatch):
    import logging

    from nf3_hybrid import flags
    from nf3_hybrid.vllm_patch import config as cfg_mod
    from vllm.model_executor.layers.quantization.modelopt import ModelOptNvFp4Config

    raw = json.loads((make_ckpt("all-kept", all_kept=True) / "config.json").read_text())["quantization_config"]
    monkeypatch.setenv("HYBRID_TIER", "b")
    monkeypatch.setattr(cfg_mod, "_warned", [])
    flags.reset_for_tests()
    got = []
    h = logging.Handler()
    h.emit = lambda r: got.append(r.getMessage())
    log = logging.getLogger("vllm.nf3_hybrid.vllm_patch.config")
    log.addHandler(h)
    try:
        for _ in range(2):
            assert ModelOptNvFp4Config.from_config(raw).nf3_hybrid_spec is None
    finally:
        log.removeHandler(h)
        monkeypatch.undo()
        flags.reset_for_tests()
    assert len(got) == 1 and "HYBRID_TIER set, but this checkpoint has no hybrid_bit_map" in got[0]
