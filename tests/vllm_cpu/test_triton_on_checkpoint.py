"""The Triton tier kernels on the tiny checkpoint's real tensors, as vLLM's weight loader
leaves them in a real hybrid MoE layer (NVFP4 and MXFP4 kept tiers), against the float64
reference of the dequantized checkpoint — decode (per-pair GEMV) and grouped batch
sizes. On this GPU-less machine the kernels run under TRITON_INTERPRET=1."""
import pytest
import torch

from nf3_hybrid.backends import triton_tiers
from nf3_hybrid.backends.executor import LayerExecutor
from nf3_hybrid.backends.triton_tiers import TritonTier, Workspace
from nf3_hybrid.bitmap import KEPT, NF3
from tests.kernels.tiers import gemv_up_to
from tests.vllm_cpu import harness as H

LAYER = 3


@pytest.fixture(scope="module")
def tiny_mx(make_ckpt):
    return make_ckpt("tiny-hybrid-mxfp4", kept_format="mxfp4_e8m0k32")


@pytest.mark.parametrize("ckpt_name", ["tiny_hybrid", "tiny_mx"])
def test_triton_tiers_on_checkpoint_tensors(vllm_tp1, ckpt_name, request, monkeypatch):
    ckpt = request.getfixturevalue(ckpt_name)
    method = H.loaded_moe(ckpt, LAYER).routed_experts.quant_method
    kept, nf3 = method.tiers[KEPT], method.tiers[NF3]
    gemv_up_to(monkeypatch, 64)
    if triton_tiers.interpret():
        # programs four times the interpreter's built-in widths (its time is per program and
        # per op, not per element): 60 s a checkpoint alone with the built-in tiles, 30-43 s so
        gemv = dict(triton_tiers.kernel_config(1, True, kept.inter), BN13=64, BN2=128)
        grouped = dict(triton_tiers.grouped_config(70, True), BN13=64, BN2=128)
        monkeypatch.setattr(triton_tiers, "CONFIG_OVERRIDE", {"gemv": gemv, triton_tiers.grouped_class(70): grouped})
    ws = Workspace(torch.device("cpu"))
    ws.reserve(80, 4, kept.hidden, kept.inter, max(kept.num_experts, nf3.num_experts))
    tri = LayerExecutor({KEPT: TritonTier(kept, ws), NF3: TritonTier(nf3, ws)}, kept.hidden)
    experts = H.dequantized_experts(ckpt, LAYER)
    for m in (3, 70):  # the per-pair GEMV up to 64 tokens (set above), the grouped GEMMs above
        w, ids = H.random_routing(m, 32, 4, seed=m)
        x = torch.randn(m, kept.hidden, generator=torch.Generator().manual_seed(m)).to(torch.bfloat16)
        for t in (ws.planes, ws.pair_inter, ws.pair_rows, ws.inter_cache):
            t.fill_(float("nan"))
        got = tri.forward(x, w, ids)
        assert torch.isfinite(got).all(), m
        assert H.rel_err(got, H.reference_moe(experts, x, w, ids)) < 1.5e-2, (ckpt_name, m)
