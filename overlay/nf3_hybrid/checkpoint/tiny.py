"""A tiny random GLM-4.5-style MoE model with a locally trained tokenizer.

Everything downstream (the maker, the reference, the vLLM tests) needs a real checkpoint
that vLLM and HF transformers both load, without network access. Random i.i.d. weights
give flat next-token distributions whose greedy choices flip on bf16 near-ties, so the
weights here have structure: the LM head maps each token's embedding onto a fixed
successor token (a permutation), which makes predictions peaked, while attention, dense
and MoE layers add context-dependent perturbations of controlled size. Experts get
log-normal gains with router rows that follow them, so expert saliency is meaningful.
"""
from __future__ import annotations

import json
import math
import random
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

_WORDS = {
    "det": ["the", "a", "every", "some", "this", "that", "no", "one"],
    "adj": ["quiet", "red", "ancient", "small", "bright", "heavy", "quick", "cold", "green", "silver",
            "hidden", "open", "broken", "gentle", "wild", "empty"],
    "noun": ["river", "engine", "garden", "tower", "model", "kernel", "expert", "token", "market", "forest",
             "signal", "bridge", "window", "letter", "planet", "machine", "teacher", "child", "city", "song"],
    "verb": ["carries", "builds", "reads", "watches", "moves", "finds", "sends", "holds", "opens", "follows",
             "writes", "measures", "routes", "quantizes", "serves", "loads"],
    "adv": ["slowly", "again", "today", "quietly", "twice", "early", "now", "carefully"],
    "prep": ["near", "under", "over", "beside", "behind", "through", "into", "across"],
}


def corpus(n_sentences: int = 3000, seed: int = 0):
    rng = random.Random(seed)
    w = _WORDS
    for _ in range(n_sentences):
        parts = [rng.choice(w["det"]), rng.choice(w["adj"]), rng.choice(w["noun"]), rng.choice(w["verb"]),
                 rng.choice(w["det"]), rng.choice(w["noun"])]
        if rng.random() < 0.5:
            parts += [rng.choice(w["prep"]), rng.choice(w["det"]), rng.choice(w["noun"])]
        if rng.random() < 0.4:
            parts.append(rng.choice(w["adv"]))
        s = " ".join(parts)
        yield s[0].upper() + s[1:] + rng.choice([".", ".", "!", "?"]) + f" {rng.randint(0, 999)}"


EOS = "<|endoftext|>"
PAD = "<|pad|>"


def train_tokenizer(out_dir, vocab_size: int):
    """Byte-level BPE trained on the embedded corpus, saved for AutoTokenizer."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=[EOS, PAD],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(corpus(), trainer=trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token=EOS, bos_token=EOS, pad_token=PAD, unk_token=None)
    fast.model_max_length = 4096
    fast.save_pretrained(str(out_dir))
    return fast


@dataclass
class TinySpec:
    vocab_size: int = 1024  # tokenizer target; the model uses the trained size
    hidden_size: int = 256
    intermediate_size: int = 512
    moe_intermediate_size: int = 256
    num_hidden_layers: int = 4
    first_k_dense_replace: int = 1
    n_routed_experts: int = 32
    num_experts_per_tok: int = 4
    n_group: int = 4
    topk_group: int = 2
    num_attention_heads: int = 4
    num_key_value_heads: int = 2
    head_dim: int = 64
    routed_scaling_factor: float = 2.5
    mtp: bool = True  # write one MTP layer (index num_hidden_layers), as GLM checkpoints have
    seed: int = 0
    # structure knobs (see module docstring)
    # chosen so the float32 model's mean top-1 probability is ~0.9 (entropy ~1 nat) while
    # the MoE layers still move the logits enough for quantization error to show
    head_sharpness: float = 1.0
    attn_gain: float = 0.5
    mlp_gain: float = 0.5
    expert_gain: float = 0.6
    shared_gain: float = 0.25

    def check(self):
        for name in ("hidden_size", "intermediate_size", "moe_intermediate_size"):
            v = getattr(self, name)
            if v % 64:
                raise ValueError(f"{name}={v} must be a multiple of 64 (TP=2/4 sharding, 32-groups)")
        if self.n_routed_experts % self.n_group:
            raise ValueError("n_routed_experts must be divisible by n_group")


def _config(spec: TinySpec, vocab: int):
    from transformers import Glm4MoeConfig

    return Glm4MoeConfig(
        vocab_size=vocab,
        hidden_size=spec.hidden_size,
        intermediate_size=spec.intermediate_size,
        moe_intermediate_size=spec.moe_intermediate_size,
        num_hidden_layers=spec.num_hidden_layers,
        num_attention_heads=spec.num_attention_heads,
        num_key_value_heads=spec.num_key_value_heads,
        head_dim=spec.head_dim,
        n_routed_experts=spec.n_routed_experts,
        num_experts_per_tok=spec.num_experts_per_tok,
        n_group=spec.n_group,
        topk_group=spec.topk_group,
        n_shared_experts=1,
        first_k_dense_replace=spec.first_k_dense_replace,
        routed_scaling_factor=spec.routed_scaling_factor,
        norm_topk_prob=True,
        num_nextn_predict_layers=1 if spec.mtp else 0,
        max_position_embeddings=4096,
        tie_word_embeddings=False,
        eos_token_id=0,
        bos_token_id=0,
        pad_token_id=1,
    )


def _gauss(g: torch.Generator, *shape, std: float):
    return torch.randn(*shape, generator=g) * std


def _decoder_layer(g, spec: TinySpec, moe: bool, prefix: str) -> dict:
    H, I, Im = spec.hidden_size, spec.intermediate_size, spec.moe_intermediate_size
    nh, nkv, hd = spec.num_attention_heads, spec.num_key_value_heads, spec.head_dim
    t = {
        f"{prefix}.input_layernorm.weight": 1 + _gauss(g, H, std=0.05),
        f"{prefix}.post_attention_layernorm.weight": 1 + _gauss(g, H, std=0.05),
        f"{prefix}.self_attn.q_proj.weight": _gauss(g, nh * hd, H, std=1.5 / math.sqrt(H)),
        f"{prefix}.self_attn.k_proj.weight": _gauss(g, nkv * hd, H, std=1.5 / math.sqrt(H)),
        f"{prefix}.self_attn.v_proj.weight": _gauss(g, nkv * hd, H, std=1 / math.sqrt(H)),
        f"{prefix}.self_attn.o_proj.weight": _gauss(g, H, nh * hd, std=spec.attn_gain / math.sqrt(nh * hd)),
    }
    m = f"{prefix}.mlp"
    if not moe:
        t[f"{m}.gate_proj.weight"] = _gauss(g, I, H, std=1 / math.sqrt(H))
        t[f"{m}.up_proj.weight"] = _gauss(g, I, H, std=1 / math.sqrt(H))
        t[f"{m}.down_proj.weight"] = _gauss(g, H, I, std=spec.mlp_gain / math.sqrt(I))
        return t
    E = spec.n_routed_experts
    gains = torch.exp(_gauss(g, E, std=0.5))  # log-normal expert gains
    router = _gauss(g, E, H, std=1 / math.sqrt(H)) * gains.sqrt().unsqueeze(1)
    t[f"{m}.gate.weight"] = router
    t[f"{m}.gate.e_score_correction_bias"] = _gauss(g, E, std=0.02)
    for e in range(E):
        t[f"{m}.experts.{e}.gate_proj.weight"] = _gauss(g, Im, H, std=1 / math.sqrt(H))
        t[f"{m}.experts.{e}.up_proj.weight"] = _gauss(g, Im, H, std=1 / math.sqrt(H))
        t[f"{m}.experts.{e}.down_proj.weight"] = _gauss(g, H, Im, std=spec.expert_gain * float(gains[e]) / math.sqrt(Im))
    t[f"{m}.shared_experts.gate_proj.weight"] = _gauss(g, Im, H, std=1 / math.sqrt(H))
    t[f"{m}.shared_experts.up_proj.weight"] = _gauss(g, Im, H, std=1 / math.sqrt(H))
    t[f"{m}.shared_experts.down_proj.weight"] = _gauss(g, H, Im, std=spec.shared_gain / math.sqrt(Im))
    return t


def tiny_state_dict(spec: TinySpec, vocab: int) -> dict:
    """Every tensor of the checkpoint in float32, in the on-disk (per-expert) naming."""
    g = torch.Generator().manual_seed(spec.seed)
    H = spec.hidden_size
    embed = _gauss(g, vocab, H, std=1.0)
    successor = torch.randperm(vocab, generator=g)
    unit = embed / embed.norm(dim=1, keepdim=True)
    head = torch.empty(vocab, H)
    head[successor] = unit * spec.head_sharpness  # token t's direction votes for successor[t]
    head += _gauss(g, vocab, H, std=0.1 * spec.head_sharpness / math.sqrt(H))
    sd = {"model.embed_tokens.weight": embed, "model.norm.weight": torch.ones(H), "lm_head.weight": head}
    for i in range(spec.num_hidden_layers):
        sd.update(_decoder_layer(g, spec, i >= spec.first_k_dense_replace, f"model.layers.{i}"))
    if spec.mtp:
        n = spec.num_hidden_layers
        p = f"model.layers.{n}"
        sd.update(_decoder_layer(g, spec, True, p))
        sd[f"{p}.enorm.weight"] = torch.ones(H)
        sd[f"{p}.hnorm.weight"] = torch.ones(H)
        sd[f"{p}.eh_proj.weight"] = _gauss(g, H, 2 * H, std=1 / math.sqrt(2 * H))
        sd[f"{p}.shared_head.norm.weight"] = torch.ones(H)
    return sd


def make_tiny_model(out_dir, spec: TinySpec | None = None, force: bool = False) -> Path:
    """Writes config.json, model.safetensors (bf16) and tokenizer files to ``out_dir``."""
    from safetensors.torch import save_file

    spec = spec or TinySpec()
    spec.check()
    out = Path(out_dir)
    if out.exists() and any(out.iterdir()) and not force:
        raise FileExistsError(f"{out} exists and is not empty: pass --force to replace it")
    out.mkdir(parents=True, exist_ok=True)
    tok = train_tokenizer(out, spec.vocab_size)
    vocab = len(tok)
    cfg = _config(spec, vocab)
    sd = {k: v.to(torch.bfloat16).contiguous() for k, v in tiny_state_dict(spec, vocab).items()}
    save_file(sd, str(out / "model.safetensors"), metadata={"format": "pt"})
    cfg_dict = cfg.to_dict()
    cfg_dict["architectures"] = ["Glm4MoeForCausalLM"]
    cfg_dict["dtype"] = "bfloat16"
    cfg_dict.pop("torch_dtype", None)
    (out / "config.json").write_text(json.dumps(cfg_dict, indent=2) + "\n")
    (out / "generation_config.json").write_text(
        json.dumps({"eos_token_id": 0, "pad_token_id": 1, "bos_token_id": 0}, indent=2) + "\n"
    )
    (out / "tiny_spec.json").write_text(json.dumps(asdict(spec), indent=2) + "\n")
    return out


def sample_token_ids(model_dir, n_seqs: int = 4, seq_len: int = 64, seed: int = 1234):
    """A fixed evaluation set: the tokenizer's encoding of held-out corpus sentences."""
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(model_dir))
    need = n_seqs * seq_len
    ids: list = []
    for sentence in corpus(100000, seed=seed):
        ids += tok(" " + sentence)["input_ids"]
        if len(ids) >= need:
            break
    return [ids[i * seq_len:(i + 1) * seq_len] for i in range(n_seqs)]
