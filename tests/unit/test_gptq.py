"""GPTQ and activation capture."""
import json

import pytest
import torch

from nf3_hybrid import gptq
from nf3_hybrid.capture import ActivationCapture, capture_hf, captured_layers, load_layer
from nf3_hybrid.formats import nf3, nvfp4


def _correlated(n, d, seed):
    g = torch.Generator().manual_seed(seed)
    mix = torch.randn(d, d, generator=torch.Generator().manual_seed(99)) * 0.3 + torch.eye(d)
    return (torch.randn(n, d, generator=g) @ mix) * torch.linspace(0.2, 3, d)


def _out_err(x, w, q):
    return float((x @ (q - w).t()).norm() / (x @ w.t()).norm())


@pytest.mark.parametrize("fmt", ["nf3", "nvfp4"])
def test_gptq_lowers_output_error_on_a_known_hessian(fmt):
    """Inputs with correlated, unequal-variance features (Hessian known by construction):
    GPTQ's held-out output error is lower than round-to-nearest's, at a larger weight
    error — it trades weight fidelity for output fidelity, as it should."""
    w = torch.randn(96, 256, generator=torch.Generator().manual_seed(1)) * 0.05
    train, held = _correlated(4096, 256, 2), _correlated(4096, 256, 3)
    h = gptq.hessian(train)
    if fmt == "nf3":
        qg = nf3.dequantize(*gptq.gptq_nf3(w, h))
        qr = nf3.dequantize(*nf3.quantize(w))
    else:
        qg = nvfp4.dequantize(*gptq.gptq_nvfp4(w, h))
        qr = nvfp4.dequantize(*nvfp4.quantize(w))
    eg, er = _out_err(held, w, qg), _out_err(held, w, qr)
    print(f"{fmt}: held-out output error RTN {er:.4f}, GPTQ {eg:.4f}")
    assert eg < 0.92 * er
    assert float((qg - w).norm()) > float((qr - w).norm())


def test_gptq_with_identity_hessian_is_round_to_nearest():
    """With uncorrelated unit inputs there is nothing to compensate: same codes as RTN."""
    w = torch.randn(32, 64, generator=torch.Generator().manual_seed(4)) * 0.05
    p, s = gptq.gptq_nf3(w, torch.eye(64), damp=0.0 + 1e-9)
    pr, sr = nf3.quantize(w)
    assert torch.equal(p, pr) and torch.equal(s.view(torch.uint8), sr.view(torch.uint8))


def test_capture_caps_chunks_and_round_trip(tmp_path):
    cap = ActivationCapture(tmp_path / "cap", max_tokens=50, chunk_tokens=16)
    xs, ids = [], []
    for i in range(7):
        x = torch.randn(9, 8)
        t = torch.randint(0, 4, (9, 2))
        cap.add(3, "model.layers.3.mlp.experts", x, t)
        xs.append(x)
        ids.append(t)
    cap.flush()
    assert cap.kept(3) == 50 and captured_layers(tmp_path / "cap") == [3]
    files = sorted((tmp_path / "cap" / "layer-00003").glob("chunk-*.pt"))
    assert len(files) == 3  # 18 + 18 (flushed at ≥16) + the capped remainder 14
    x, t = load_layer(tmp_path / "cap", 3)
    assert x.dtype == torch.float16 and t.dtype == torch.int32 and x.shape == (50, 8)
    assert torch.equal(x, torch.cat(xs)[:50].half()) and torch.equal(t, torch.cat(ids)[:50].int())


def test_capture_stops_on_write_failure_without_raising(tmp_path):
    blocker = tmp_path / "cap"
    blocker.write_text("a file where the capture directory should be")
    msgs = []
    cap = ActivationCapture(blocker, chunk_tokens=4, warn=msgs.append)
    cap.add(1, "l1", torch.randn(5, 8), torch.zeros(5, 2, dtype=torch.int32))
    cap.add(1, "l1", torch.randn(5, 8), torch.zeros(5, 2, dtype=torch.int32))
    assert cap.stopped and len(msgs) == 1 and "serving continues without capture" in msgs[0]


def test_gptq_checkpoint_beats_rtn_on_held_out_tokens(tiny_bf16, make_ckpt, tmp_path_factory, record_property):
    from nf3_hybrid.checkpoint.reference import expert_output_errors, quality_report
    from nf3_hybrid.checkpoint.tiny import sample_token_ids

    root = tmp_path_factory.mktemp("gptq")
    train = capture_hf(tiny_bf16, sample_token_ids(tiny_bf16, 16, 64, seed=11), root / "train")
    capture_hf(tiny_bf16, sample_token_ids(tiny_bf16, 8, 64, seed=12), root / "held")
    assert sorted(train) == [1, 2, 3] and all(n == 16 * 64 for n in train.values())
    rtn = make_ckpt("tiny-hybrid")
    gq = make_ckpt("gptq", gptq_dir=str(root / "train"), gptq_min_tokens=32)
    rows_r = {(r.layer, r.tier): r for r in expert_output_errors(tiny_bf16, rtn, root / "held")}
    rows_g = {(r.layer, r.tier): r for r in expert_output_errors(tiny_bf16, gq, root / "held")}
    for layer in (1, 2, 3):
        r, g = rows_r[(layer, "nf3")], rows_g[(layer, "nf3")]
        print(f"layer {layer} NF3 tier held-out output error: RTN {r.rel_error:.4f}, GPTQ {g.rel_error:.4f}")
        assert g.rel_error < r.rel_error
        # the kept tier was left to round-to-nearest: identical
        assert rows_g[(layer, "kept")].rel_error == pytest.approx(rows_r[(layer, "kept")].rel_error)
    tokens = sample_token_ids(tiny_bf16, 4, 64, seed=13)
    k_r = quality_report(tiny_bf16, rtn, tokens).hybrid_vs_source.kld
    k_g = quality_report(tiny_bf16, gq, tokens).hybrid_vs_source.kld
    print(f"end-to-end KLD vs bf16 source: RTN {k_r:.5f}, GPTQ {k_g:.5f}")
    record_property("kld_rtn", k_r)
    record_property("kld_gptq", k_g)
    assert k_g < 1.1 * k_r


def test_gptq_falls_back_to_rtn_and_reports(tiny_bf16, tmp_path):
    from nf3_hybrid.checkpoint.maker import MakerOptions, make_hybrid_checkpoint, summarize
    from nf3_hybrid.checkpoint.tiny import sample_token_ids

    capture_hf(tiny_bf16, sample_token_ids(tiny_bf16, 1, 16, seed=5), tmp_path / "cap")
    res = make_hybrid_checkpoint(tiny_bf16, tmp_path / "out", MakerOptions(gptq_dir=str(tmp_path / "cap"),
                                                                          gptq_min_tokens=10_000, progress=False))
    assert all(g["gptq"] == 0 and len(g["rtn"]) == 24 for g in res.gptq.values())
    assert "round-to-nearest for 24 experts with too few tokens" in summarize(res)
    with pytest.raises(ValueError, match="no captured activations"):
        MakerOptions(gptq_dir=str(tmp_path / "nothing")).validate()
