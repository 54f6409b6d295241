"""Every bad input to a hybrid MoE layer is a clear error naming layer / expert / tensor."""
import json

import pytest
import torch

from nf3_hybrid.bitmap import HybridConfigError
from nf3_hybrid.vllm_patch.expert_loader import ExpertLoadError
from tests.vllm_cpu import harness as H

LAYER = 2


def _qc_with(ckpt, edit):
    from vllm.model_executor.layers.quantization.modelopt import ModelOptNvFp4Config

    raw = json.loads((ckpt / "config.json").read_text())["quantization_config"]
    edit(raw["hybrid_bit_map"])
    return ModelOptNvFp4Config.from_config(raw)


def _bits(ckpt):
    return json.loads((ckpt / "config.json").read_text())["quantization_config"]["hybrid_bit_map"][str(LAYER)]


@pytest.mark.parametrize("n", [31, 33])
def test_bit_map_length_differs_from_expert_count(vllm_tp1, tiny_hybrid, n):
    qc = _qc_with(tiny_hybrid, lambda bm: [bm.__setitem__(k, (v * 2)[:n]) for k, v in list(bm.items())])
    with pytest.raises(HybridConfigError, match=f"layer {LAYER}: has {n} entries but the model's MoE layer has 32"):
        H.build_moe(tiny_hybrid, LAYER, qc)


def test_bit_map_that_disagrees_with_the_tensors(vllm_tp1, tiny_hybrid):
    e = _bits(tiny_hybrid).index(3)

    def flip(bm):
        bm[str(LAYER)][e] = 4

    runner = H.build_moe(tiny_hybrid, LAYER, _qc_with(tiny_hybrid, flip))
    with pytest.raises(ExpertLoadError, match=rf"model.layers.{LAYER}.mlp.experts \(layer {LAYER}\) expert {e}: "
                                              r"the checkpoint has down_proj.weight_packed, but the bit map puts "
                                              r"this expert in the kept tier"):
        H.load_keyword(runner, H.expert_tensors(tiny_hybrid, LAYER), LAYER)


def _load_edited(ckpt, edit, convention="keyword"):
    runner = H.build_moe(ckpt, LAYER)
    weights = edit(list(H.expert_tensors(ckpt, LAYER)))
    (H.load_keyword if convention == "keyword" else H.load_positional)(runner, weights, LAYER)
    H.finish_loading(runner)


def test_missing_expert_tensor(vllm_tp1, tiny_hybrid):
    e = _bits(tiny_hybrid).index(3)
    drop = f"model.layers.{LAYER}.mlp.experts.{e}.up_proj.weight_scale"
    with pytest.raises(ExpertLoadError, match=rf"1 expert tensors never arrived from the checkpoint: expert {e} up_proj.weight_scale"):
        _load_edited(tiny_hybrid, lambda ws: [(n, t) for n, t in ws if n != drop])


def test_missing_whole_expert(vllm_tp1, tiny_hybrid):
    e = _bits(tiny_hybrid).index(4)
    pre = f"model.layers.{LAYER}.mlp.experts.{e}."
    with pytest.raises(ExpertLoadError, match=rf"9 expert tensors never arrived.*expert {e} gate_proj.weight;"):
        _load_edited(tiny_hybrid, lambda ws: [(n, t) for n, t in ws if not n.startswith(pre)], "positional")


def test_duplicated_expert_tensor(vllm_tp1, tiny_hybrid):
    def dup(ws):
        return ws + [w for w in ws if w[0].endswith("experts.5.down_proj.weight_scale")]

    with pytest.raises(ExpertLoadError, match=r"expert 5: down_proj.weight_scale arrived twice"):
        _load_edited(tiny_hybrid, dup)


def test_wrong_shape(vllm_tp1, tiny_hybrid):
    e = _bits(tiny_hybrid).index(3)
    name = f"model.layers.{LAYER}.mlp.experts.{e}.gate_proj.weight_packed"

    def cut(ws):
        return [(n, t[:, :-3] if n == name else t) for n, t in ws]

    with pytest.raises(ExpertLoadError, match=rf"expert {e}: gate_proj.weight_packed has shape \[256, 93\], expected \[256, 96\]"):
        _load_edited(tiny_hybrid, cut)


def test_wrong_dtype(vllm_tp1, tiny_hybrid):
    e = _bits(tiny_hybrid).index(3)
    name = f"model.layers.{LAYER}.mlp.experts.{e}.down_proj.weight_scale"

    def retype(ws):
        return [(n, t.view(torch.uint8) if n == name else t) for n, t in ws]

    with pytest.raises(ExpertLoadError, match=rf"expert {e}: down_proj.weight_scale is torch.uint8, the nf3 tier needs torch.float8_e4m3fn"):
        _load_edited(tiny_hybrid, retype, "positional")


def test_per_rank_intermediate_not_in_whole_groups(vllm_tp1, tiny_hybrid):
    """I / TP must be a multiple of 32 for NF3 (and MXFP4) groups: checked per layer."""
    runner = H.build_moe(tiny_hybrid, LAYER)
    method = runner.routed_experts.quant_method
    holder = torch.nn.Module()
    holder.layer_name = f"model.layers.{LAYER}.mlp.experts"
    with pytest.raises(HybridConfigError, match=rf"model.layers.{LAYER}.mlp.experts \(layer {LAYER}\): the nf3 tier needs "
                                                r"hidden size and per-rank intermediate size divisible by 32; got "
                                                r"hidden 256, intermediate 48 per rank"):
        method.create_weights(holder, 32, 256, 48, torch.bfloat16)


def test_invalid_flag_is_a_startup_error(vllm_tp1, tiny_hybrid, monkeypatch):
    from nf3_hybrid import flags
    from nf3_hybrid.flags import FlagError

    monkeypatch.setenv("HYBRID_KEPT", "tritn")
    flags.reset_for_tests()
    try:
        with pytest.raises(FlagError, match="HYBRID_KEPT='tritn': expected one of auto, triton, b12x, b12x_nf3, ref"):
            _load_edited(tiny_hybrid, lambda ws: ws)
    finally:
        monkeypatch.undo()
        flags.reset_for_tests()


def test_fast_backend_on_cpu_is_refused(vllm_tp1, tiny_hybrid, monkeypatch):
    from nf3_hybrid import flags
    from nf3_hybrid.backends.select import BackendError

    monkeypatch.setenv("HYBRID_KEPT", "triton")
    flags.reset_for_tests()
    try:
        with pytest.raises(BackendError, match="HYBRID_KEPT=triton needs a CUDA GPU; this process runs on cpu"):
            _load_edited(tiny_hybrid, lambda ws: ws)
    finally:
        monkeypatch.undo()
        flags.reset_for_tests()
