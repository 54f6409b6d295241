"""The benchmark's stock contenders get their random weights one expert at a time (the
whole-layer float32 draw did not fit I=2048 on an 80 GB card beside the other
contenders). vLLM's oracle picks no MoE backend on a GPU-less machine, so the layers here
carry the parameters vLLM 0.33's ModelOptNvFp4FusedMoE / unquantized MoE register (names,
dtypes, shapes) rather than being built by its factory."""
import pytest
import torch

from nf3_hybrid.vllm_patch import stock_moe

E, HID, INTER = 4, 64, 32


def _layer(kind):
    m = torch.nn.Module()

    def reg(name, *shape, dtype):
        m.register_parameter(name, torch.nn.Parameter(torch.zeros(*shape, dtype=dtype), requires_grad=False))

    if kind == "nvfp4":
        reg("w13_weight", E, 2 * INTER, HID // 2, dtype=torch.uint8)
        reg("w2_weight", E, HID, INTER // 2, dtype=torch.uint8)
        reg("w13_weight_scale", E, 2 * INTER, HID // 16, dtype=torch.float8_e4m3fn)
        reg("w2_weight_scale", E, HID, INTER // 16, dtype=torch.float8_e4m3fn)
        reg("w13_weight_scale_2", E, 2, dtype=torch.float32)
        reg("w2_weight_scale_2", E, dtype=torch.float32)
        reg("w13_input_scale", E, 2, dtype=torch.float32)
        reg("w2_input_scale", E, dtype=torch.float32)
    else:
        reg("w13_weight", E, 2 * INTER, HID, dtype=torch.bfloat16)
        reg("w2_weight", E, HID, INTER, dtype=torch.bfloat16)
    return m


def _draws(monkeypatch):
    """numel of every random tensor drawn while filling."""
    sizes = []
    for fn in ("randn", "randint"):
        def spy(*a, _real=getattr(torch, fn), **k):
            out = _real(*a, **k)
            sizes.append(out.numel())
            return out

        monkeypatch.setattr(torch, fn, spy)
    return sizes


def test_nvfp4_layer_filled_per_expert(monkeypatch):
    re = _layer("nvfp4")
    sizes = _draws(monkeypatch)
    stock_moe.fill_random(re, torch.Generator().manual_seed(3))
    params = dict(re.named_parameters())
    assert sizes and max(sizes) <= max(p[0].numel() for p in params.values() if p.dim() > 1)
    for name, p in params.items():
        if p.dtype == torch.uint8:  # packed e2m1 pairs: every expert drawn, (nearly) all byte values
            assert all(p[e].unique().numel() > 200 for e in range(E)), name
        elif p.dtype == torch.float8_e4m3fn:  # block scales around 1
            bits = p.view(torch.uint8)
            assert int(bits.min()) >= 0x30 and int(bits.max()) <= 0x3F, name
            assert all(bits[e].unique().numel() > 8 for e in range(E)), name
        elif "weight_scale_2" in name:
            assert torch.all(p == 1e-3), name
        else:
            assert name.endswith("input_scale") and torch.all(p == 1.0), name


def test_bf16_layer_weights_and_reproducible(monkeypatch):
    re, again = _layer("bf16"), _layer("bf16")
    sizes = _draws(monkeypatch)
    stock_moe.fill_random(re, torch.Generator().manual_seed(5))
    assert max(sizes) == 2 * INTER * HID  # one expert's w13, not the layer
    stock_moe.fill_random(again, torch.Generator().manual_seed(5))
    for (name, p), (_, q) in zip(re.named_parameters(), again.named_parameters()):
        assert torch.equal(p, q), name
        for e in range(E):
            assert float(p[e].float().std()) == pytest.approx(0.02, rel=0.1), (name, e)
        assert not torch.equal(p[0], p[1]), name  # each expert its own draw
