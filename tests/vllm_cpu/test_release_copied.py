"""A backend that prepares its own copy of a tier (b12x) gets that tier's checkpoint-layout
tensors released, on a real vLLM layer (CPU). The b12x backends need an SM120 GPU, so a
stand-in with the same contract takes their place: it copies its tier at construction
and serves from the copy through the reference backend."""
import pytest
import torch

from nf3_hybrid import flags
from nf3_hybrid.backends.base import NVFP4, TierBackend, TierWeights
from nf3_hybrid.backends.ref import RefBackend
from nf3_hybrid.backends.select import Choice
from tests.vllm_cpu import harness as H

LAYER = 2


class CopyingBackend(TierBackend):
    name = "b12x"
    copies_formats = (NVFP4,)

    def __init__(self, tier: TierWeights):
        super().__init__(tier)
        own = {k: getattr(tier, k).detach().clone() for k in ("w13", "w13_scale", "w2", "w2_scale")}
        self._ref = RefBackend(TierWeights(**{**tier.__dict__, **own}))

    def run_into(self, out, x, topk_weights, topk_ids, weights_on_input=False):
        self._ref.run_into(out, x, topk_weights, topk_ids, weights_on_input)


@pytest.fixture
def copying_kept_tier(monkeypatch):
    # vLLM's modelopt first: importing the patch module before it would pre-empt the hook
    import vllm.model_executor.layers.quantization.modelopt  # noqa: F401

    from nf3_hybrid.vllm_patch import moe_method

    monkeypatch.setattr(moe_method, "choose", lambda *a, **k: Choice("b12x", "ref", "test: copying kept tier"))
    real = moe_method.backend_class
    monkeypatch.setattr(moe_method, "backend_class", lambda name, fmt: CopyingBackend if name == "b12x" else real(name, fmt))
    yield
    flags.reset_for_tests()


def _layer(ckpt):
    return H.loaded_moe(ckpt, LAYER)


def test_copied_tier_released_and_layer_still_serves(vllm_tp1, tiny_hybrid, copying_kept_tier):
    flags.reset_for_tests()
    runner = _layer(tiny_hybrid)
    re = runner.routed_experts
    for name in ("w13_weight", "w13_weight_scale", "w2_weight", "w2_weight_scale"):
        assert getattr(re, name).numel() == 0, name  # the kept tier's packed weights and block scales
    assert re.w13_weight_scale_2.numel() > 0 and re.w2_weight_scale_2.numel() > 0  # small, kept
    assert re.w13_weight_packed.numel() > 0 and re.w13_nf3_scale.numel() > 0  # the NF3 tier is not copied
    experts = H.dequantized_experts(tiny_hybrid, LAYER)
    w, ids = H.random_routing(7, 32, 4, seed=4)
    x = torch.randn(7, 256).to(torch.bfloat16)
    assert H.rel_err(H.apply_routed(runner, x, w, ids), H.reference_moe(experts, x, w, ids)) < 1e-2


def test_debug_keeps_them(vllm_tp1, tiny_hybrid, copying_kept_tier, monkeypatch):
    monkeypatch.setenv("HYBRID_DEBUG", "1")
    flags.reset_for_tests()
    re = _layer(tiny_hybrid).routed_experts
    assert re.w13_weight.numel() > 0 and re.w2_weight_scale.numel() > 0


def test_b12x_nf3_refuses_tier_isolation_before_preparing(vllm_tp1, tiny_hybrid, monkeypatch):
    import vllm.model_executor.layers.quantization.modelopt  # noqa: F401

    from nf3_hybrid.bitmap import HybridConfigError
    from nf3_hybrid.vllm_patch import moe_method

    monkeypatch.setattr(moe_method, "choose", lambda *a, **k: Choice("b12x_nf3", "b12x_nf3", "test"))

    def never(*a, **k):
        raise AssertionError("no backend may be prepared")

    monkeypatch.setattr(moe_method, "backend_class", never)
    monkeypatch.setenv("HYBRID_TIER", "b")
    flags.reset_for_tests()
    try:
        with pytest.raises(HybridConfigError, match="HYBRID_TIER=b isolates one tier, but HYBRID_KEPT=b12x_nf3"):
            _layer(tiny_hybrid)
    finally:
        flags.reset_for_tests()
