"""Hybrid MoE layers built by vLLM 0.33's own factory, loaded through the real weight
loaders, applied, and compared with a float64 reference of the dequantized checkpoint."""
import json
import tempfile

import pytest
import torch

from tests.vllm_cpu import harness as H

TOL = 1e-2  # bf16 output rounding (2^-8 relative) with margin


@pytest.fixture(scope="module")
def ref_experts(tiny_hybrid):
    return {layer: H.dequantized_experts(tiny_hybrid, layer) for layer in (1, 2, 3, 4)}


@pytest.mark.parametrize("convention", ["keyword", "positional"])
@pytest.mark.parametrize("layer", [2, 4])  # 4 is the MTP layer: absent from the bit map, all kept
def test_tp1_load_and_apply_matches_reference(vllm_tp1, tiny_hybrid, ref_experts, layer, convention):
    runner = H.build_moe(tiny_hybrid, layer)
    method = runner.routed_experts.quant_method
    assert type(method).__name__ == "HybridNvFp4FusedMoE"
    bits = json.loads((tiny_hybrid / "config.json").read_text())["quantization_config"]["hybrid_bit_map"].get(str(layer))
    n_kept = bits.count(4) if bits else 32
    re = runner.routed_experts
    assert re.w13_weight.shape == (n_kept, 512, 128) and re.w13_weight_scale.shape == (n_kept, 512, 16)
    assert re.w13_weight_packed.shape == (32 - n_kept, 512, 96) and re.w13_nf3_scale.shape == (32 - n_kept, 512, 8)
    assert re.w2_weight_packed.shape == (32 - n_kept, 256, 96) and re.w2_weight_scale_2.shape == (n_kept,)
    loaded = (H.load_keyword if convention == "keyword" else H.load_positional)(runner, H.expert_tensors(tiny_hybrid, layer), layer)
    assert len(loaded) == n_kept * 12 + (32 - n_kept) * 6
    H.finish_loading(runner)
    for m in (1, 7, 33):
        w, ids = H.random_routing(m, 32, 4, seed=m)
        x = torch.randn(m, 256, generator=torch.Generator().manual_seed(m)).to(torch.bfloat16)
        out = H.apply_routed(runner, x, w, ids)
        assert out.dtype == torch.bfloat16 and out.shape == (m, 256)
        ref = H.reference_moe(ref_experts[layer], x, w, ids)
        assert H.rel_err(out, ref) < TOL, (m, H.rel_err(out, ref))


def test_tokens_routed_to_one_tier_only(vllm_tp1, tiny_hybrid, ref_experts):
    runner = H.build_moe(tiny_hybrid, 3)
    H.load_keyword(runner, H.expert_tensors(tiny_hybrid, 3), 3)
    H.finish_loading(runner)
    plan = runner.routed_experts.quant_method.plan
    kept, nf3 = torch.tensor(plan.kept[:4]), torch.tensor(plan.nf3[:4])
    x = torch.randn(2, 256, generator=torch.Generator().manual_seed(3)).to(torch.bfloat16)
    ids = torch.stack([kept, nf3]).to(torch.int32)
    w = torch.full((2, 4), 0.25)
    out = H.apply_routed(runner, x, w, ids)
    assert H.rel_err(out, H.reference_moe(ref_experts[3], x, w, ids)) < TOL


@pytest.mark.parametrize("name,opts", [
    ("mx", {"kept_format": "mxfp4_e8m0k32", "kept_per_layer": 4}),
    ("kept0", {"kept_per_layer": 0}),
    ("kept32", {"kept_per_layer": 32}),
    ("sharded", {"max_shard_bytes": 1 << 20, "nf3_codebook": [-1.0, -0.7, -0.4, -0.12, 0.12, 0.4, 0.7, 1.0]}),
])
def test_variants(vllm_tp1, make_ckpt, name, opts):
    ckpt = make_ckpt(name, **opts)
    experts = H.dequantized_experts(ckpt, 1)
    runner = H.build_moe(ckpt, 1)
    H.load_positional(runner, H.expert_tensors(ckpt, 1), 1)
    H.finish_loading(runner)
    w, ids = H.random_routing(9, 32, 4, seed=11)
    x = torch.randn(9, 256, generator=torch.Generator().manual_seed(1)).to(torch.bfloat16)
    assert H.rel_err(H.apply_routed(runner, x, w, ids), H.reference_moe(experts, x, w, ids)) < TOL


@pytest.mark.parametrize("tp,convention", [(2, "keyword"), (4, "positional")])
def test_tensor_parallel_ranks(tiny_hybrid, ref_experts, tp, convention, tmp_path):
    """Every rank of a real gloo TP world (spawned processes, hook armed by the .pth):
    each rank's unreduced output is its slice of the reference; the all-reduce is all of it."""
    import torch.multiprocessing as mp

    init = tempfile.mktemp(prefix="nf3-gloo-")
    mp.spawn(H.tp_worker, args=(tp, init, str(tiny_hybrid), 2, convention, 5, str(tmp_path)), nprocs=tp, join=True)
    for rank in range(tp):
        r = torch.load(tmp_path / f"rank{rank}.pt")
        assert r["hook"]["patched"]
        assert r["shapes"]["routed_experts.w13_weight_packed"] == (24, 2 * 256 // tp, 96)
        assert r["shapes"]["routed_experts.w2_weight_packed"] == (24, 256, 256 // tp // 8 * 3)
        assert r["shapes"]["routed_experts.w2_weight_scale"] == (8, 256, 256 // tp // 16)
        part_ref = H.reference_moe(ref_experts[2], r["x"], r["w"], r["ids"], rank, tp)
        assert H.rel_err(r["part"], part_ref) < TOL
        full_ref = H.reference_moe(ref_experts[2], r["x"], r["w"], r["ids"])
        assert H.rel_err(r["full"], full_ref) < TOL


def test_non_hybrid_config_gets_the_stock_method(vllm_tp1, make_ckpt, monkeypatch):
    from vllm.model_executor.layers.fused_moe.experts.nvfp4_emulation_moe import (
        Nvfp4QuantizationEmulationTritonExperts,
    )
    from vllm.model_executor.layers.quantization.modelopt import ModelOptNvFp4FusedMoE

    from vllm.model_executor.layers.quantization.modelopt import ModelOptNvFp4Config

    # every vLLM NVFP4 backend refuses a CPU; let its emulation backend (W4A4 only, so the
    # config drops the weight-only marker) accept it — in tests only
    monkeypatch.setattr(Nvfp4QuantizationEmulationTritonExperts, "_supports_current_device", staticmethod(lambda: True))
    ckpt = make_ckpt("all-kept", all_kept=True)
    raw = json.loads((ckpt / "config.json").read_text())["quantization_config"]
    raw.pop("config_groups")
    qc = ModelOptNvFp4Config.from_config(raw)
    assert getattr(qc, "nf3_hybrid_spec", "missing") is None
    runner = H.build_moe(ckpt, 1, qc)
    method = runner.routed_experts.quant_method
    assert type(method) is ModelOptNvFp4FusedMoE
    assert runner.routed_experts.w13_weight.shape == (32, 512, 128)
    assert not hasattr(runner.routed_experts, "w13_weight_packed")
