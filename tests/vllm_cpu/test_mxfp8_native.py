"""HYBRID_MXFP8_NATIVE: MXFP8 rev-3 non-expert linears served as MXFP8 by vLLM's own
ModelOpt MXFP8 linear method (real vLLM 0.33 layers on the CPU).

vLLM lists no MXFP8 linear kernel for the CPU platform; these tests give it its own
software kernel (EmulationMxfp8LinearKernel, weights kept in MXFP8) — a relaxation for
tests only, like the MoE device check. On CUDA vLLM picks its kernel itself (Marlin
MXFP8 on SM80+): not run on a GPU yet.
"""
import json

import pytest
import torch
from safetensors import safe_open

from nf3_hybrid import flags
from nf3_hybrid.bitmap import MXFP8_MODULES_KEY, parse_hybrid_spec
from nf3_hybrid.formats import fp8
from nf3_hybrid.vllm_patch.weight_iter import dequantize_non_experts
from tests.vllm_cpu import harness as H

QKV = "model.layers.1.self_attn.qkv_proj"


@pytest.fixture
def ckpt(make_ckpt):
    return make_ckpt("ne-mxfp8-native", non_expert="mxfp8")


@pytest.fixture
def native(monkeypatch):
    def set_(on: bool):
        monkeypatch.setenv("HYBRID_MXFP8_NATIVE", "1" if on else "0")
        flags.reset_for_tests()

    yield set_
    monkeypatch.undo()
    flags.reset_for_tests()


@pytest.fixture
def cpu_mxfp8_kernel(monkeypatch):
    """vLLM's software MXFP8 kernel for the CPU platform, weights kept 8-bit (tests only)."""
    from vllm.model_executor.kernels import linear as kernels
    from vllm.model_executor.kernels.linear.mxfp8.emulation import EmulationMxfp8LinearKernel
    from vllm.platforms import current_platform

    monkeypatch.setitem(kernels._POSSIBLE_MXFP8_KERNELS, current_platform._enum, [EmulationMxfp8LinearKernel])
    monkeypatch.setenv("VLLM_MXFP8_EMULATION_DEQUANT_AT_LOAD", "0")


def _tensors(ckpt):
    idx = json.loads((ckpt / "model.safetensors.index.json").read_text())["weight_map"]
    out = {}
    for name, shard in idx.items():
        with safe_open(str(ckpt / shard), "pt") as f:
            out[name] = f.get_tensor(name)
    return out


def _qkv(ckpt):
    """Layer 1's fused q/k/v projection, built by vLLM with the checkpoint's quant config
    (which vLLM's model class gives its fused-module mapping, as here)."""
    from vllm.model_executor.layers.linear import QKVParallelLinear
    from vllm.model_executor.models.glm4_moe import Glm4MoeForCausalLM

    cfg = json.loads((ckpt / "config.json").read_text())
    qc = H.quant_config(ckpt)
    qc.packed_modules_mapping = dict(Glm4MoeForCausalLM.packed_modules_mapping)
    return QKVParallelLinear(cfg["hidden_size"], cfg["head_dim"], cfg["num_attention_heads"],
                             cfg["num_key_value_heads"], bias=False, params_dtype=torch.bfloat16,
                             quant_config=qc, prefix=QKV)


def test_maker_lists_exactly_the_mxfp8_modules(ckpt):
    tensors = _tensors(ckpt)
    stored = sorted(n[: -len(".weight")] for n, t in tensors.items()
                    if n.endswith(".weight") and t.dtype == torch.float8_e4m3fn and ".mlp.experts." not in n)
    qc = json.loads((ckpt / "config.json").read_text())["quantization_config"]
    assert qc[MXFP8_MODULES_KEY] == stored and stored
    assert parse_hybrid_spec(qc).mxfp8_modules == tuple(stored)
    assert all(n + fp8.REV3_SCALE_SUFFIX in tensors for n in stored)


def test_iterator_passes_native_modules_through(ckpt):
    tensors = _tensors(ckpt)
    spec = parse_hybrid_spec(json.loads((ckpt / "config.json").read_text())["quantization_config"])
    keep = frozenset(spec.mxfp8_modules)
    stats = {}
    out = dict(dequantize_non_experts(iter(sorted(tensors.items())), torch.bfloat16, stats, keep))
    assert stats == {}  # nothing dequantized
    for m in keep:
        assert out[m + ".weight"].dtype == torch.float8_e4m3fn
        assert torch.equal(out[m + ".weight"].view(torch.uint8), tensors[m + ".weight"].view(torch.uint8))
        assert torch.equal(out[m + fp8.REV3_SCALE_SUFFIX], tensors[m + fp8.REV3_SCALE_SUFFIX])
    # without the flag's module set the same stream is dequantized as before
    stats = {}
    out = dict(dequantize_non_experts(iter(sorted(tensors.items())), torch.bfloat16, stats))
    assert stats == {"mxfp8": len(keep)} and out[QKV.replace("qkv_proj", "q_proj") + ".weight"].dtype == torch.bfloat16


def test_flag_off_keeps_unquantized_method(vllm_tp1, ckpt, native):
    from vllm.model_executor.layers.linear import UnquantizedLinearMethod

    native(False)
    assert isinstance(_qkv(ckpt).quant_method, UnquantizedLinearMethod)


def test_native_mxfp8_linear_loads_and_matches_reference(vllm_tp1, ckpt, native, cpu_mxfp8_kernel):
    native(True)
    layer = _qkv(ckpt)
    assert type(layer.quant_method).__name__ == "ModelOptLinearMethod"
    tensors = _tensors(ckpt)
    params = dict(layer.named_parameters())
    want_w = []
    for shard in ("q", "k", "v"):
        base = QKV.replace("qkv_proj", f"{shard}_proj")
        w, s = tensors[base + ".weight"], tensors[base + fp8.REV3_SCALE_SUFFIX]
        params["weight"].weight_loader(params["weight"], w, shard)
        params["weight_scale"].weight_loader(params["weight_scale"], s, shard)
        want_w.append(fp8.dequantize_mxfp8(w, s, torch.float32))
    layer.quant_method.process_weights_after_loading(layer)
    # the weights stay 8-bit: 1 byte per weight + 1 e8m0 byte per 32, against bf16's 2
    served = layer.weight.numel() * layer.weight.element_size() + layer.weight_scale.numel()
    bf16 = 2 * layer.weight.numel()
    assert layer.weight.element_size() == 1 and abs(served / bf16 - (1 + 1 / 32) / 2) < 1e-3
    x = torch.randn(5, layer.input_size).to(torch.bfloat16)
    got = layer.quant_method.apply(layer, x).float()
    want = x.float() @ torch.cat(want_w).T
    assert float((got - want).norm() / want.norm()) < 1e-2


def test_flag_on_a_checkpoint_without_mxfp8_layers_says_so(tiny_hybrid, native, caplog, monkeypatch):
    """A hybrid checkpoint with bf16 non-experts: the flag changes nothing, and says so once."""
    import logging

    from nf3_hybrid.vllm_patch import config as patch_config

    native(True)
    monkeypatch.setattr(patch_config, "_warned", [])
    with caplog.at_level(logging.WARNING):
        H.quant_config(tiny_hybrid)
        H.quant_config(tiny_hybrid)
    msgs = [r.getMessage() for r in caplog.records if "HYBRID_MXFP8_NATIVE" in r.getMessage()]
    assert len(msgs) == 1 and "lists no MXFP8 non-expert linears" in msgs[0]


def test_module_names_follow_the_models_weight_mapper(vllm_tp1, ckpt, native, cpu_mxfp8_kernel):
    """A model whose hf→vLLM mapper renames modules: the MXFP8 modules are matched
    under their vLLM names (vLLM maps the exclude list the same way)."""
    from vllm.model_executor.layers.linear import QKVParallelLinear
    from vllm.model_executor.models.glm4_moe import Glm4MoeForCausalLM
    from vllm.model_executor.models.utils import WeightsMapper

    native(True)
    cfg = json.loads((ckpt / "config.json").read_text())
    qc = H.quant_config(ckpt)
    qc.packed_modules_mapping = dict(Glm4MoeForCausalLM.packed_modules_mapping)
    qc.apply_vllm_mapper(WeightsMapper(orig_to_new_prefix={"model.": "language_model.model."}))
    renamed = "language_model." + QKV
    layer = QKVParallelLinear(cfg["hidden_size"], cfg["head_dim"], cfg["num_attention_heads"],
                              cfg["num_key_value_heads"], bias=False, params_dtype=torch.bfloat16,
                              quant_config=qc, prefix=renamed)
    assert type(layer.quant_method).__name__ == "ModelOptLinearMethod"
