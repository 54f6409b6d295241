"""The checkpoint maker's output, read back with safetensors and checked against the
on-disk format spec (written out here, independently of the package's layout code)."""
import json
import math

import pytest
import torch
from safetensors import safe_open

from nf3_hybrid.checkpoint import maker as maker_mod
from nf3_hybrid.checkpoint import tiers
from nf3_hybrid.checkpoint.io import CheckpointError
from nf3_hybrid.checkpoint.maker import MakerOptions, make_hybrid_checkpoint

H, I, E, LAYERS, MOE_LAYERS, MTP = 256, 256, 32, 4, (1, 2, 3), 4


def load_all(d):
    idx = json.loads((d / "model.safetensors.index.json").read_text())
    out = {}
    for name, fname in idx["weight_map"].items():
        with safe_open(str(d / fname), "pt") as f:
            out[name] = f.get_tensor(name)
    return out


def spec_tensors(fmt, out_f, in_f):
    """The format section of ARCHITECTURE.md, as (shape, dtype) per tensor name."""
    u8, f8, f32 = torch.uint8, torch.float8_e4m3fn, torch.float32
    return {
        "nvfp4": {"weight": ((out_f, in_f // 2), u8), "weight_scale": ((out_f, in_f // 16), f8),
                  "weight_scale_2": ((), f32), "input_scale": ((), f32)},
        "mxfp4": {"weight": ((out_f, in_f // 2), u8), "weight_scale": ((out_f, in_f // 32), u8)},
        "nf3": {"weight_packed": ((out_f, in_f // 8 * 3), u8), "weight_scale": ((out_f, in_f // 32), f8)},
    }[fmt]


def check_experts(sd, layer, fmt_of_expert):
    for e in range(E):
        fmt = fmt_of_expert(e)
        for proj in ("gate_proj", "up_proj", "down_proj"):
            out_f, in_f = (H, I) if proj == "down_proj" else (I, H)
            want = spec_tensors(fmt, out_f, in_f)
            got = {k.rsplit(".", 1)[1]: v for k, v in sd.items()
                   if k.startswith(f"model.layers.{layer}.mlp.experts.{e}.{proj}.")}
            assert set(got) == set(want), (layer, e, proj, sorted(got))
            for t, (shape, dt) in want.items():
                assert tuple(got[t].shape) == shape and got[t].dtype == dt, (layer, e, proj, t)


def test_default_hybrid_layout(tiny_bf16, tiny_hybrid):
    cfg = json.loads((tiny_hybrid / "config.json").read_text())
    qc = cfg["quantization_config"]
    assert qc["quant_method"] == "modelopt" and qc["quant_algo"] == "NVFP4" and qc["group_size"] == 16
    bm = qc["hybrid_bit_map"]
    assert sorted(bm) == ["1", "2", "3"]  # the MTP layer (4) is not in the map
    for layer in MOE_LAYERS:
        assert len(bm[str(layer)]) == E and bm[str(layer)].count(4) == E // 4 and set(bm[str(layer)]) == {3, 4}
    sd = load_all(tiny_hybrid)
    for layer in MOE_LAYERS:
        bits = bm[str(layer)]
        check_experts(sd, layer, lambda e, b=bits: "nvfp4" if b[e] == 4 else "nf3")
        for e in range(E):
            if bits[e] == 4:  # gate and up share one global scale
                p = f"model.layers.{layer}.mlp.experts.{e}"
                assert float(sd[f"{p}.gate_proj.weight_scale_2"]) == float(sd[f"{p}.up_proj.weight_scale_2"])
    check_experts(sd, MTP, lambda e: "nvfp4")
    # non-expert tensors untouched (bf16, same values)
    with safe_open(str(tiny_bf16 / "model.safetensors"), "pt") as f:
        for name in ("model.layers.1.self_attn.q_proj.weight", "model.layers.1.mlp.gate.weight", "lm_head.weight",
                     "model.layers.1.mlp.gate.e_score_correction_bias", "model.layers.4.eh_proj.weight"):
            assert torch.equal(sd[name], f.get_tensor(name))
    assert (tiny_hybrid / "tokenizer.json").is_file()


def test_kept_experts_follow_weight_saliency(tiny_bf16, tiny_hybrid):
    """Kept = the 8 highest router-row-norm × gain experts, recomputed from the source."""
    bm = json.loads((tiny_hybrid / "config.json").read_text())["quantization_config"]["hybrid_bit_map"]
    with safe_open(str(tiny_bf16 / "model.safetensors"), "pt") as f:
        for layer in MOE_LAYERS:
            p = f"model.layers.{layer}.mlp"
            r = f.get_tensor(f"{p}.gate.weight").float().norm(dim=1)
            score = []
            for e in range(E):
                n = {q: f.get_tensor(f"{p}.experts.{e}.{q}.weight").float().norm() for q in ("gate_proj", "up_proj", "down_proj")}
                score.append(float(r[e] * n["down_proj"] * (n["gate_proj"] * n["up_proj"]).sqrt()))
            top = sorted(sorted(range(E), key=lambda e: -score[e])[:8])
            assert [e for e, b in enumerate(bm[str(layer)]) if b == 4] == top


def test_mxfp4_kept_format(make_ckpt):
    d = make_ckpt("mx", kept_format="mxfp4_e8m0k32", kept_per_layer=4)
    qc = json.loads((d / "config.json").read_text())["quantization_config"]
    assert qc["kept_format"] == "mxfp4_e8m0k32"
    sd = load_all(d)
    bits = qc["hybrid_bit_map"]["2"]
    assert bits.count(4) == 4
    check_experts(sd, 2, lambda e: "mxfp4" if bits[e] == 4 else "nf3")
    check_experts(sd, MTP, lambda e: "nvfp4")  # MTP stays uniform NVFP4


@pytest.mark.parametrize("mode", ["fp8", "mxfp8"])
def test_fp8_non_experts(make_ckpt, tiny_bf16, mode):
    d = make_ckpt(f"ne-{mode}", non_expert=mode)
    sd = load_all(d)
    with safe_open(str(tiny_bf16 / "model.safetensors"), "pt") as f:
        for name in ("model.layers.0.self_attn.q_proj.weight", "model.layers.0.mlp.down_proj.weight",
                     "model.layers.2.mlp.shared_experts.up_proj.weight", "model.layers.4.eh_proj.weight"):
            w = sd[name]
            assert w.dtype == torch.float8_e4m3fn
            base = name[: -len(".weight")]
            src = f.get_tensor(name).float()
            if mode == "fp8":
                s = sd[base + ".weight_scale_fp8"]
                assert s.dtype == torch.bfloat16 and s.shape == (w.shape[0],)
                deq = w.float() * s.float()[:, None]
            else:
                s = sd[base + ".weight_scale"]
                assert s.dtype == torch.uint8 and s.shape == (w.shape[0], w.shape[1] // 32)
                deq = w.float() * torch.ldexp(torch.ones(s.shape), s.int() - 127).repeat_interleave(32, 1)
            assert float((deq - src).norm() / src.norm()) < 0.04
        for name in ("model.embed_tokens.weight", "lm_head.weight", "model.layers.1.mlp.gate.weight",
                     "model.norm.weight"):
            assert torch.equal(sd[name], f.get_tensor(name))


def test_all_kept_is_plain_modelopt_nvfp4(make_ckpt):
    from vllm.model_executor.layers.quantization.modelopt import ModelOptNvFp4Config

    d = make_ckpt("all-kept", all_kept=True)
    qc = json.loads((d / "config.json").read_text())["quantization_config"]
    assert "hybrid_bit_map" not in qc and "kept_format" not in qc
    sd = load_all(d)
    for layer in MOE_LAYERS + (MTP,):
        check_experts(sd, layer, lambda e: "nvfp4")
    cfg = ModelOptNvFp4Config.from_config(qc)
    assert cfg.quant_method == "W4A16_NVFP4"  # weight-only: vLLM keeps activations bf16


def test_exclude_list_covers_exactly_the_non_expert_modules(tiny_hybrid):
    """vLLM's own matcher, on vLLM's fused module names for glm4_moe."""
    from vllm.model_executor.layers.quantization.modelopt import ModelOptNvFp4Config

    qc = json.loads((tiny_hybrid / "config.json").read_text())["quantization_config"]
    cfg = ModelOptNvFp4Config.from_config(qc)
    cfg.packed_modules_mapping = {"qkv_proj": ["q_proj", "k_proj", "v_proj"], "gate_up_proj": ["gate_proj", "up_proj"]}
    for prefix in ("model.layers.0.self_attn.qkv_proj", "model.layers.3.self_attn.o_proj", "model.layers.0.mlp.gate_up_proj",
                   "model.layers.0.mlp.down_proj", "model.layers.2.mlp.shared_experts.gate_up_proj",
                   "model.layers.2.mlp.shared_experts.down_proj", "model.layers.1.mlp.gate", "lm_head"):
        assert cfg.is_layer_excluded(prefix), prefix
    for prefix in ("model.layers.1.mlp.experts", "model.layers.3.mlp.experts", "model.layers.4.mlp.experts"):
        assert not cfg.is_layer_excluded(prefix), prefix


def test_hf_quant_config_layout(make_ckpt):
    from nf3_hybrid.bitmap import parse_hybrid_spec
    from vllm.model_executor.layers.quantization.modelopt import ModelOptNvFp4Config

    d = make_ckpt("nested", config_layout="hf_quant_config", kept_per_layer=2)
    assert "quantization_config" not in json.loads((d / "config.json").read_text())
    hq = json.loads((d / "hf_quant_config.json").read_text())
    assert hq["quantization"]["quant_algo"] == "NVFP4"
    spec = parse_hybrid_spec(hq)
    assert all(p.count(0) == 2 for p in spec.bit_map.values())
    ModelOptNvFp4Config.from_config(hq)  # vLLM's required nested fields are present


def test_small_shards_and_custom_codebook(make_ckpt):
    cb = [-1.0, -0.7, -0.4, -0.12, 0.12, 0.4, 0.7, 1.0]
    d = make_ckpt("sharded", max_shard_bytes=1 << 20, nf3_codebook=cb)
    idx = json.loads((d / "model.safetensors.index.json").read_text())
    files = sorted(set(idx["weight_map"].values()))
    n = len(files)
    assert n > 3 and files == [f"model-{i:05d}-of-{n:05d}.safetensors" for i in range(1, n + 1)]
    assert json.loads((d / "config.json").read_text())["quantization_config"]["nf3_codebook"] == cb
    assert not list(d.parent.glob(".*partial"))


def test_kept_all_or_none(make_ckpt):
    for k in (0, E):
        d = make_ckpt(f"kept{k}", kept_per_layer=k)
        bm = json.loads((d / "config.json").read_text())["quantization_config"]["hybrid_bit_map"]
        assert all(b.count(4) == k for b in bm.values())


def test_refuses_overwrite_and_failure_keeps_old_output(tiny_bf16, tmp_path, monkeypatch):
    out = tmp_path / "out"
    make_hybrid_checkpoint(tiny_bf16, out, MakerOptions(kept_per_layer=2, progress=False))
    before = sorted(p.name for p in out.iterdir())
    with pytest.raises(FileExistsError, match="--force"):
        make_hybrid_checkpoint(tiny_bf16, out, MakerOptions(progress=False))

    calls = {"n": 0}
    real = tiers.quantize_expert

    def flaky(*a, **k):
        calls["n"] += 1
        if calls["n"] > 40:
            raise RuntimeError("disk on fire")
        return real(*a, **k)

    monkeypatch.setattr(maker_mod.tiers, "quantize_expert", flaky)
    with pytest.raises(RuntimeError, match="disk on fire"):
        make_hybrid_checkpoint(tiny_bf16, out, MakerOptions(force=True, progress=False))
    assert sorted(p.name for p in out.iterdir()) == before
    assert not (tmp_path / ".out.partial").exists()
    bm = json.loads((out / "config.json").read_text())["quantization_config"]["hybrid_bit_map"]
    assert all(b.count(4) == 2 for b in bm.values())


def _copy_without(src, dst, drop=None, add=None, config_update=None):
    from safetensors.torch import save_file
    import shutil

    shutil.copytree(src, dst)
    with safe_open(str(src / "model.safetensors"), "pt") as f:
        sd = {k: f.get_tensor(k) for k in f.keys() if not (drop and drop(k))}
    sd.update(add or {})
    save_file(sd, str(dst / "model.safetensors"))
    if config_update:
        cfg = json.loads((dst / "config.json").read_text())
        cfg.update(config_update)
        (dst / "config.json").write_text(json.dumps(cfg))
    return dst


@pytest.mark.parametrize(
    "case,match",
    [
        ("missing_expert", r"layer 2: experts \[5\] are missing"),
        ("missing_proj", r"layer 1 expert 3: missing up_proj"),
        ("fused", r"stores all experts of a layer in one tensor"),
        ("quantized", r"already quantized"),
        ("count", r"layer 1: the checkpoint has 32 experts but config.json says 16"),
    ],
)
def test_bad_sources_give_clear_errors(tiny_bf16, tmp_path, case, match):
    src = tmp_path / "src"
    if case == "missing_expert":
        _copy_without(tiny_bf16, src, drop=lambda k: ".layers.2.mlp.experts.5." in k)
    elif case == "missing_proj":
        _copy_without(tiny_bf16, src, drop=lambda k: k == "model.layers.1.mlp.experts.3.up_proj.weight")
    elif case == "fused":
        _copy_without(tiny_bf16, src, add={"model.layers.1.mlp.experts.gate_up_proj": torch.zeros(2, 2)})
    elif case == "quantized":
        _copy_without(tiny_bf16, src, config_update={"quantization_config": {"quant_method": "fp8"}})
    else:
        _copy_without(tiny_bf16, src, config_update={"n_routed_experts": 16})
    with pytest.raises(CheckpointError, match=match):
        make_hybrid_checkpoint(src, tmp_path / "out", MakerOptions(progress=False))
    assert not (tmp_path / "out").exists()


def test_bad_options():
    with pytest.raises(ValueError, match="uniform NVFP4"):
        MakerOptions(all_kept=True, kept_format="mxfp4_e8m0k32").validate()
    with pytest.raises(ValueError, match="non-expert mode"):
        MakerOptions(non_expert="int8").validate()


def test_calibration_saliency_uses_routing_and_output_norm(tiny_bf16, make_ckpt, eval_tokens):
    """Kept = top experts by Σ routing weight × ‖expert(x)‖, recomputed here through HF's
    own router and experts modules (one expert at a time)."""
    from nf3_hybrid.checkpoint.reference import load_hf

    d = make_ckpt("calib", calib_tokens=eval_tokens, kept_per_layer=6)
    bm = json.loads((d / "config.json").read_text())["quantization_config"]["hybrid_bit_map"]
    model = load_hf(tiny_bf16)
    seen = {}

    def hook(layer):
        def fn(mod, args, kwargs):
            seen.setdefault(layer, []).append((args[0].detach(), args[1].detach(), args[2].detach()))
        return fn

    hs = [model.model.layers[l].mlp.experts.register_forward_pre_hook(hook(l), with_kwargs=True) for l in MOE_LAYERS]
    with torch.no_grad():
        for seq in eval_tokens:
            model(torch.tensor([seq]))
    for h in hs:
        h.remove()
    for layer in MOE_LAYERS:
        experts = model.model.layers[layer].mlp.experts
        score = [0.0] * E
        for x, idx, w in seen[layer]:
            x = x.reshape(-1, x.shape[-1])
            for e in range(E):
                tok, slot = torch.where(idx == e)
                if len(tok) == 0:
                    continue
                with torch.no_grad():
                    y = experts(x[tok], torch.zeros(len(tok), 1, dtype=torch.long) + e, torch.ones(len(tok), 1))
                score[e] += float((w[tok, slot] * y.norm(dim=-1)).sum())
        top = sorted(sorted(range(E), key=lambda e: -score[e])[:6])
        assert [e for e, b in enumerate(bm[str(layer)]) if b == 4] == top
        assert all(score[e] > 0 for e in top)
