"""The maker on other architectures' naming: Qwen3-MoE and DeepSeek-V3 (GLM-5 naming),
random tiny models written by HF transformers itself."""
import json

import pytest
import torch

from nf3_hybrid.checkpoint.io import CheckpointReader
from nf3_hybrid.checkpoint.layout import read_layout
from nf3_hybrid.checkpoint.maker import MakerOptions, make_hybrid_checkpoint
from nf3_hybrid.checkpoint.reference import agreement, load_hf, logprobs, write_dequantized


def _qwen3(path):
    from transformers import Qwen3MoeConfig, Qwen3MoeForCausalLM

    cfg = Qwen3MoeConfig(vocab_size=256, hidden_size=128, intermediate_size=256, moe_intermediate_size=64,
                         num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, head_dim=32,
                         num_experts=8, num_experts_per_tok=2, decoder_sparse_step=1, max_position_embeddings=256)
    return cfg, Qwen3MoeForCausalLM


def _deepseek(path):
    from transformers import DeepseekV3Config, DeepseekV3ForCausalLM

    cfg = DeepseekV3Config(vocab_size=256, hidden_size=128, intermediate_size=256, moe_intermediate_size=64,
                           num_hidden_layers=3, first_k_dense_replace=1, num_attention_heads=4, num_key_value_heads=4,
                           n_routed_experts=8, num_experts_per_tok=2, n_group=2, topk_group=1, n_shared_experts=1,
                           q_lora_rank=64, kv_lora_rank=32, qk_nope_head_dim=32, qk_rope_head_dim=32, v_head_dim=32,
                           max_position_embeddings=256)
    return cfg, DeepseekV3ForCausalLM


@pytest.mark.parametrize("arch,moe_layers", [("qwen3", [0, 1]), ("deepseek", [1, 2])])
def test_maker_on_other_architectures(tmp_path, arch, moe_layers):
    torch.manual_seed(0)
    cfg, cls = (_qwen3 if arch == "qwen3" else _deepseek)(tmp_path)
    model = cls(cfg).to(torch.bfloat16)
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0, 0.05)
    src = tmp_path / "src"
    model.save_pretrained(src)
    out = tmp_path / "hyb"
    make_hybrid_checkpoint(src, out, MakerOptions(kept_per_layer=2, non_expert="fp8", progress=False))
    qc = json.loads((out / "config.json").read_text())["quantization_config"]
    assert sorted(int(k) for k in qc["hybrid_bit_map"]) == moe_layers
    assert all(b.count(4) == 2 and len(b) == 8 for b in qc["hybrid_bit_map"].values())
    with CheckpointReader(out) as r:
        layout = read_layout(r)  # every expert tensor checked against the bit map and the spec
        assert sorted(layout.layers) == moe_layers and layout.non_expert_fp8
    deq = write_dequantized(out, tmp_path / "deq")
    ids = [list(range(3, 40))]
    a = agreement(logprobs(load_hf(src), ids), logprobs(load_hf(deq), ids))
    assert a.kld < 0.05, a
