"""fp8 rev-2 / MXFP8 rev-3 non-expert weights dequantized while vLLM iterates them."""
import json
from types import SimpleNamespace

import pytest
import torch
from safetensors import safe_open

from nf3_hybrid.formats import fp8
from nf3_hybrid.vllm_patch.weight_iter import NonExpertWeightError, dequantize_non_experts


def same(a, b):
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    return torch.equal(a.view(torch.uint8), b.view(torch.uint8)) if a.element_size() == 1 else torch.equal(a, b)


def stream(ckpt):
    idx = json.loads((ckpt / "model.safetensors.index.json").read_text())["weight_map"]
    for name in sorted(idx):
        with safe_open(str(ckpt / idx[name]), "pt") as f:
            yield name, f.get_tensor(name)


@pytest.mark.parametrize("name,opts", [
    ("ne-fp8", {"non_expert": "fp8"}),
    ("ne-mxfp8-mx", {"non_expert": "mxfp8", "kept_format": "mxfp4_e8m0k32", "kept_per_layer": 4}),
])
@pytest.mark.parametrize("order", ["sorted", "reversed"])
def test_dequantized_stream(make_ckpt, tiny_bf16, name, opts, order):
    ckpt = make_ckpt(name, **opts)
    raw = list(stream(ckpt))
    src = raw if order == "sorted" else raw[::-1]
    stats = {}
    out = dict(dequantize_non_experts(iter(src), torch.bfloat16, stats))
    raw_d = dict(raw)
    kind = "rev2" if opts["non_expert"] == "fp8" else "mxfp8"
    with safe_open(str(tiny_bf16 / "model.safetensors"), "pt") as f:
        bf16_names = set(f.keys())
        for n in bf16_names:
            if ".mlp.experts." in n:
                continue
            assert n in out, n
            t = out[n]
            if raw_d[n].dtype == torch.float8_e4m3fn:
                base = n[: -len(".weight")]
                want = (fp8.dequantize_rev2(raw_d[n], raw_d[base + ".weight_scale_fp8"]) if kind == "rev2"
                        else fp8.dequantize_mxfp8(raw_d[n], raw_d[base + ".weight_scale"]))
                assert t.dtype == torch.bfloat16 and torch.equal(t, want)
                assert float((t.float() - f.get_tensor(n).float()).norm() / f.get_tensor(n).float().norm()) < 0.04
            else:
                assert same(t, raw_d[n])
    # expert tensors (including MXFP4's uint8 weight_scale) pass through untouched
    experts = {n: t for n, t in raw if ".mlp.experts." in n}
    assert all(same(out[n], t) for n, t in experts.items())
    assert not any(n.endswith("weight_scale_fp8") for n in out)
    assert set(out) == set(experts) | (bf16_names - {n for n in bf16_names if ".mlp.experts." in n})
    assert stats == {kind: sum(1 for n, t in raw if t.dtype == torch.float8_e4m3fn and ".mlp.experts." not in n)}


def test_unpaired_tensors():
    w = torch.zeros(4, 32).to(torch.float8_e4m3fn)
    with pytest.raises(NonExpertWeightError, match=r"1 float8 non-expert weights have no weight_scale_fp8.*a.q_proj.weight"):
        list(dequantize_non_experts(iter([("a.q_proj.weight", w)])))
    with pytest.raises(NonExpertWeightError, match=r"b.o_proj.weight_scale_fp8 has no float8 b.o_proj.weight"):
        list(dequantize_non_experts(iter([("b.o_proj.weight_scale_fp8", torch.ones(4, dtype=torch.bfloat16))])))
    s = torch.zeros(4, 1, dtype=torch.uint8)  # a uint8 weight_scale of someone else's format
    assert [n for n, _ in dequantize_non_experts(iter([("c.weight_scale", s)]))] == ["c.weight_scale"]


def test_wrapper_engages_only_for_hybrid_models(vllm_tp1, tiny_hybrid, make_ckpt, monkeypatch):
    from vllm.model_executor.model_loader.default_loader import DefaultModelLoader

    from tests.vllm_cpu import harness as H

    ckpt = make_ckpt("ne-fp8", non_expert="fp8")
    raw = list(stream(ckpt))
    monkeypatch.setattr(DefaultModelLoader, "_get_weights_iterator", lambda self, source: iter(raw))
    loader = object.__new__(DefaultModelLoader)
    mc = SimpleNamespace(model=str(ckpt), revision=None, dtype=torch.bfloat16)
    hybrid = torch.nn.Module()
    hybrid.experts = H.build_moe(ckpt, 1)
    plain = torch.nn.Linear(2, 2)
    got = dict(loader.get_all_weights(mc, hybrid))
    assert got["model.layers.0.self_attn.q_proj.weight"].dtype == torch.bfloat16
    assert "model.layers.0.self_attn.q_proj.weight_scale_fp8" not in got
    untouched = dict(loader.get_all_weights(mc, plain))
    assert untouched["model.layers.0.self_attn.q_proj.weight"].dtype == torch.float8_e4m3fn
