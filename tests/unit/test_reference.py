"""The float32 reference: dequantized hybrid checkpoint in HF transformers."""
import json

import numpy as np
import pytest
import torch
from safetensors import safe_open

from nf3_hybrid.checkpoint.io import CheckpointReader
from nf3_hybrid.checkpoint.layout import LayoutError, read_layout
from nf3_hybrid.checkpoint.reference import (
    agreement,
    iter_dequantized,
    load_hf,
    logprobs,
    quality_report,
    weight_errors,
    write_dequantized,
)
from tests import refimpl


@pytest.fixture(scope="module")
def dequantized(tiny_hybrid, tmp_path_factory):
    return write_dequantized(tiny_hybrid, tmp_path_factory.mktemp("deq") / "d")


def test_dequantized_experts_match_float64_reference(tiny_hybrid, dequantized):
    cfg = json.loads((tiny_hybrid / "config.json").read_text())
    bits = cfg["quantization_config"]["hybrid_bit_map"]["2"]
    kept, nf3e = bits.index(4), bits.index(3)
    with safe_open(str(tiny_hybrid / _shard(tiny_hybrid)), "pt") as f, \
            safe_open(str(dequantized / "model.safetensors"), "pt") as d:
        p = f"model.layers.2.mlp.experts.{kept}.down_proj"
        ref = refimpl.nvfp4_dequant(f.get_tensor(p + ".weight").numpy(),
                                    f.get_tensor(p + ".weight_scale").view(torch.uint8).numpy(),
                                    float(f.get_tensor(p + ".weight_scale_2")))
        np.testing.assert_allclose(d.get_tensor(p + ".weight").double().numpy(), ref, rtol=1e-6)
        p = f"model.layers.2.mlp.experts.{nf3e}.gate_proj"
        ref = refimpl.nf3_dequant(f.get_tensor(p + ".weight_packed").numpy()[:8],
                                  f.get_tensor(p + ".weight_scale").view(torch.uint8).numpy()[:8])
        np.testing.assert_allclose(d.get_tensor(p + ".weight").double().numpy()[:8], ref, rtol=1e-6)
    assert "quantization_config" not in json.loads((dequantized / "config.json").read_text())


def _shard(d):
    idx = json.loads((d / "model.safetensors.index.json").read_text())
    return idx["weight_map"]["model.layers.2.mlp.experts.0.down_proj.weight_scale"]


def test_weight_error_rows(tiny_bf16, tiny_hybrid):
    rows = weight_errors(tiny_bf16, tiny_hybrid)
    by = {(r.layer, r.tier): r for r in rows}
    for layer in (1, 2, 3):
        assert by[(layer, "kept")].experts == 8 and by[(layer, "nf3")].experts == 24
        assert 0.05 < by[(layer, "kept")].rel_error < 0.10 < 0.12 < by[(layer, "nf3")].rel_error < 0.175
    assert by[(4, "kept")].experts == 32 and (4, "nf3") not in by


def test_hybrid_reference_tracks_source_and_bits_order_quality(tiny_bf16, make_ckpt, eval_tokens):
    """More bits → closer to the bf16 source: all-NVFP4 < hybrid < all-NF3 in KLD."""
    src = logprobs(load_hf(tiny_bf16), eval_tokens)
    kld = {}
    for name, opts in (("all-kept", {"all_kept": True}), ("tiny-hybrid", {}), ("kept0", {"kept_per_layer": 0})):
        d = write_dequantized(make_ckpt(name, **opts), make_ckpt(name).parent / f"{name}-deq", force=True)
        a = agreement(src, logprobs(load_hf(d), eval_tokens))
        kld[name] = a.kld
        assert a.top1 >= 0.95, (name, a)
    assert kld["all-kept"] < kld["tiny-hybrid"] < kld["kept0"] < 0.1
    print("KLD vs bf16 source:", kld)


def test_quality_report(tiny_bf16, tiny_hybrid, eval_tokens, tmp_path):
    rep = quality_report(tiny_bf16, tiny_hybrid, eval_tokens, work_dir=tmp_path)
    assert rep.positions == sum(len(s) for s in eval_tokens)
    assert 0 < rep.hybrid_vs_source.kld < 0.05 and rep.hybrid_vs_source.top1 >= 0.95
    json.dumps(rep.as_dict())


def test_agreement_metric_on_known_distributions():
    p = torch.log_softmax(torch.tensor([[[2.0, 1.0, 0.0]]]), -1)
    q = torch.log_softmax(torch.tensor([[[0.0, 1.0, 2.0]]]), -1)
    a = agreement(p, q)
    expected = float((p.exp() * (p - q)).sum())
    assert a.kld == pytest.approx(expected) and a.top1 == 0.0 and a.positions == 1
    assert agreement(p, p).kld == pytest.approx(0.0, abs=1e-12)


def test_fp8_variants_dequantize(make_ckpt, tiny_bf16):
    for mode in ("fp8", "mxfp8"):
        with CheckpointReader(make_ckpt(f"ne-{mode}", non_expert=mode)) as r:
            sd = dict(iter_dequantized(r))
        with safe_open(str(tiny_bf16 / "model.safetensors"), "pt") as f:
            w = f.get_tensor("model.layers.3.self_attn.o_proj.weight").float()
        got = sd["model.layers.3.self_attn.o_proj.weight"]
        assert got.dtype == torch.float32 and float((got - w).norm() / w.norm()) < 0.04
        assert not any(k.endswith(("weight_scale_fp8",)) for k in sd)


def test_layout_rejects_a_checkpoint_that_disagrees_with_its_bit_map(tiny_hybrid, tmp_path):
    import shutil

    d = tmp_path / "bad"
    shutil.copytree(tiny_hybrid, d)
    cfg = json.loads((d / "config.json").read_text())
    bits = cfg["quantization_config"]["hybrid_bit_map"]["1"]
    e = bits.index(3)
    bits[e] = 4  # claim an NF3 expert is kept
    (d / "config.json").write_text(json.dumps(cfg))
    with CheckpointReader(d) as r, pytest.raises(LayoutError, match=rf"layer 1 expert {e}: gate_proj.weight is missing"):
        read_layout(r)
