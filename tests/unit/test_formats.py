"""Bit formats against independent float64 element-by-element implementations
(tests/refimpl.py) and against vLLM 0.33's own NVFP4 dequantization."""
import numpy as np
import pytest
import torch

from nf3_hybrid.formats import e2m1, fp8, mxfp4, nf3, nvfp4
from tests import refimpl


def _gen(seed=0):
    return torch.Generator().manual_seed(seed)


# ---------------------------------------------------------------- packing


@pytest.mark.parametrize("rows,cols", [(1, 8), (3, 24), (5, 40), (7, 8 * 13), (2, 256)])
def test_nf3_pack_unpack_identity(rows, cols):
    codes = torch.randint(0, 8, (rows, cols), generator=_gen(rows * cols), dtype=torch.uint8)
    packed = nf3.pack(codes)
    assert packed.dtype == torch.uint8 and packed.shape == (rows, cols // 8 * 3)
    assert torch.equal(nf3.unpack(packed), codes)


def test_nf3_bit_layout_matches_spec():
    """8 codes → little-endian 24-bit word, code k at bits 3k..3k+2 (Python ints)."""
    codes = torch.randint(0, 8, (4, 32), generator=_gen(1), dtype=torch.uint8)
    packed = nf3.pack(codes).numpy()
    for r in range(4):
        for w in range(4):
            word = sum(int(codes[r, 8 * w + k]) << (3 * k) for k in range(8))
            assert list(packed[r, 3 * w:3 * w + 3]) == list(word.to_bytes(3, "little"))
        assert refimpl.nf3_unpack_row(packed[r], 32) == codes[r].tolist()


def test_nf3_pack_rejects_bad_input():
    with pytest.raises(ValueError, match="multiple of 8"):
        nf3.pack(torch.zeros(2, 12, dtype=torch.uint8))
    with pytest.raises(ValueError, match="0..7"):
        nf3.pack(torch.full((1, 8), 9, dtype=torch.uint8))
    with pytest.raises(ValueError, match="multiple of 3"):
        nf3.unpack(torch.zeros(1, 4, dtype=torch.uint8))
    with pytest.raises(TypeError):
        nf3.unpack(torch.zeros(1, 3, dtype=torch.int32))


@pytest.mark.parametrize("rows,cols", [(1, 2), (3, 6), (9, 34), (4, 64)])
def test_e2m1_pack_unpack_identity(rows, cols):
    codes = torch.randint(0, 16, (rows, cols), generator=_gen(cols), dtype=torch.uint8)
    packed = e2m1.pack(codes)
    assert packed.shape == (rows, cols // 2)
    # low nibble = even column
    assert torch.equal(packed & 0xF, codes[:, 0::2]) and torch.equal(packed >> 4, codes[:, 1::2])
    assert torch.equal(e2m1.unpack(packed), codes)
    with pytest.raises(ValueError, match="even"):
        e2m1.pack(torch.zeros(1, 3, dtype=torch.uint8))


def test_e2m1_encode_rounds_to_nearest_ties_even():
    mags = torch.tensor(refimpl.E2M1)
    for v in torch.cat([mags, -mags[1:]]):
        assert float(e2m1.decode(e2m1.encode(v))) == float(v)
    # ties: 0.25→0, 0.75→1, 1.25→1, 1.75→2, 2.5→2, 3.5→4, 5→4; beyond 6 saturates
    x = torch.tensor([0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0, 7.0, -5.0, 0.26])
    assert e2m1.decode(e2m1.encode(x)).tolist() == [0.0, 1.0, 1.0, 2.0, 2.0, 4.0, 4.0, 6.0, -4.0, 0.5]


# ---------------------------------------------------------------- dequantization vs float64


def test_nf3_dequant_matches_float64_reference():
    w = torch.randn(6, 64, generator=_gen(2)) * 0.05
    packed, scale = nf3.quantize(w)
    ours = nf3.dequantize(packed, scale).double().numpy()
    ref = refimpl.nf3_dequant(packed.numpy(), scale.view(torch.uint8).numpy())
    np.testing.assert_allclose(ours, ref, rtol=1e-6, atol=0)


def test_nf3_custom_codebook_is_used():
    cb = (-1.0, -0.7, -0.4, -0.1, 0.1, 0.4, 0.7, 1.0)
    w = torch.randn(4, 32, generator=_gen(3))
    packed, scale = nf3.quantize(w, codebook=cb)
    ref = refimpl.nf3_dequant(packed.numpy(), scale.view(torch.uint8).numpy(), codebook=cb)
    np.testing.assert_allclose(nf3.dequantize(packed, scale, cb).double().numpy(), ref, rtol=1e-6)
    with pytest.raises(ValueError, match="8 levels"):
        nf3.validate_codebook([0, 1])
    with pytest.raises(ValueError, match="increasing"):
        nf3.validate_codebook([1, 0, 2, 3, 4, 5, 6, 7])


def test_nvfp4_dequant_matches_float64_reference():
    w = torch.randn(5, 64, generator=_gen(4)) * 0.03
    packed, scale, s2 = nvfp4.quantize(w)
    ours = nvfp4.dequantize(packed, scale, s2).double().numpy()
    ref = refimpl.nvfp4_dequant(packed.numpy(), scale.view(torch.uint8).numpy(), float(s2))
    np.testing.assert_allclose(ours, ref, rtol=1e-6, atol=0)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("shape", [(16, 64), (48, 256), (3, 32)])
def test_nvfp4_dequant_equals_vllm(shape, dtype):
    """Bit-identical to vLLM 0.33's dequantize_to_dtype(..., swizzle=False) on random bytes."""
    from vllm.model_executor.layers.quantization.utils.nvfp4_emulation_utils import dequantize_to_dtype

    g = _gen(shape[0])
    packed = torch.randint(0, 256, (shape[0], shape[1] // 2), generator=g, dtype=torch.uint8)
    scale_bits = torch.randint(0, 0x7F, (shape[0], shape[1] // 16), generator=g, dtype=torch.uint8)
    scale = scale_bits.view(torch.float8_e4m3fn)
    s2 = torch.tensor(0.000731, dtype=torch.float32)
    theirs = dequantize_to_dtype(packed, scale, s2, dtype, 16, swizzle=False)
    assert torch.equal(nvfp4.dequantize(packed, scale, s2, dtype), theirs)


def test_mxfp4_dequant_matches_float64_reference():
    w = torch.randn(4, 96, generator=_gen(5)) * 0.02
    packed, scale = mxfp4.quantize(w)
    assert scale.dtype == torch.uint8 and scale.shape == (4, 3)
    ours = mxfp4.dequantize(packed, scale).double().numpy()
    np.testing.assert_allclose(ours, refimpl.mxfp4_dequant(packed.numpy(), scale.numpy()), rtol=1e-6, atol=0)


def test_fp8_rev2_and_mxfp8_match_float64_reference():
    w = torch.randn(6, 64, generator=_gen(6)) * 0.1
    q, s = fp8.quantize_rev2(w)
    assert q.dtype == torch.float8_e4m3fn and s.dtype == torch.bfloat16 and s.shape == (6,)
    ref = refimpl.fp8_rev2_dequant(q.view(torch.uint8).numpy(), s.float().numpy())
    np.testing.assert_allclose(fp8.dequantize_rev2(q, s, torch.float32).double().numpy(), ref, rtol=1e-6)
    q, s = fp8.quantize_mxfp8(w)
    assert s.dtype == torch.uint8 and s.shape == (6, 2)
    ref = refimpl.mxfp8_dequant(q.view(torch.uint8).numpy(), s.numpy())
    np.testing.assert_allclose(fp8.dequantize_mxfp8(q, s, torch.float32).double().numpy(), ref, rtol=1e-6)
    with pytest.raises(ValueError, match="output channels"):
        fp8.dequantize_rev2(q, torch.ones(5, dtype=torch.bfloat16))


# ---------------------------------------------------------------- quantizer error bounds


def _cell_width(x, levels):
    """Width of the nearest-level (Voronoi) cell containing each x; the outer cells end
    at the extreme levels (values beyond them are clipped by the absmax-covering scale)."""
    lv = torch.tensor(sorted(levels), dtype=torch.float64)
    mids = (lv[1:] + lv[:-1]) / 2
    lo, hi = torch.cat([lv[:1], mids]), torch.cat([mids, lv[-1:]])
    return (hi - lo)[torch.bucketize(x.double(), mids)]


def test_nf3_absmax_error_is_within_half_the_widest_gap():
    """With the absmax scale (scale_search=1) nothing clips, so every element's error is at
    most half the widest codebook gap (0.6047 → 1: 0.1977) times its group's scale."""
    w = torch.randn(64, 512, generator=_gen(7)) * 0.02
    packed, scale = nf3.quantize(w, scale_search=1)
    d = nf3.dequantize(packed, scale)
    s = scale.float().repeat_interleave(32, 1)
    assert bool(((d - w).abs() <= (1 - 0.6047) / 2 * s * (1 + 1e-6)).all())
    assert bool((w.abs() <= s * (1 + 1e-6)).all())


def test_nf3_scale_search_never_worse_than_absmax_per_group():
    w = torch.randn(64, 512, generator=_gen(8))
    err = {}
    for ss in (1, 8):
        p, s = nf3.quantize(w, scale_search=ss)
        err[ss] = ((nf3.dequantize(p, s) - w) ** 2).reshape(64, 16, 32).sum(-1)
    assert bool((err[8] <= err[1] * (1 + 1e-5) + 1e-12).all())
    assert float(err[8].sum()) < 0.9 * float(err[1].sum())


@pytest.mark.parametrize("fmt", ["nf3_absmax", "nf3", "nvfp4", "mxfp4"])
def test_gaussian_mse_matches_high_resolution_prediction(fmt, record_property):
    """Derived bound: a round-to-nearest quantizer behaves like uniform noise inside each
    cell, so E[err²] ≈ mean(width(cell of x/s)² / 12 · s²), computed from the codebook
    geometry and the stored scales only. The measured MSE must sit within [0.8, 1.3] of
    that prediction (the data are denser toward the cell centre, and outer cells clip),
    and the relative RMS error on N(0,1) weights is recorded for the note."""
    w = torch.randn(256, 1024, generator=_gen(9))
    if fmt.startswith("nf3"):
        p, s = nf3.quantize(w, scale_search=1 if fmt == "nf3_absmax" else 8)
        d, sc, levels = nf3.dequantize(p, s), s.float().repeat_interleave(32, 1), nf3.CODEBOOK
    else:
        levels = sorted({v for m in e2m1.E2M1_MAGNITUDES for v in (m, -m)})
        if fmt == "nvfp4":
            p, s, s2 = nvfp4.quantize(w)
            d, sc = nvfp4.dequantize(p, s, s2), (s.float() * s2).repeat_interleave(16, 1)
        else:
            p, s = mxfp4.quantize(w)
            d = mxfp4.dequantize(p, s)
            sc = torch.ldexp(torch.ones(s.shape), s.to(torch.int32) - 127).repeat_interleave(32, 1)
    mse = float(((d - w) ** 2).mean())
    pred = float((_cell_width(w / sc, levels) ** 2 / 12 * sc.double() ** 2).mean())
    rel_rms = float((d - w).norm() / w.norm())
    record_property("rel_rms", rel_rms)
    print(f"{fmt}: relative RMS error {rel_rms:.4f} (predicted MSE {pred:.5f}, measured {mse:.5f})")
    assert 0.8 * pred <= mse <= 1.3 * pred
    # and the ordering the tiers exist for: NVFP4 < MXFP4 < NF3
    assert rel_rms < {"nf3_absmax": 0.20, "nf3": 0.175, "nvfp4": 0.10, "mxfp4": 0.12}[fmt]


def test_nvfp4_shared_global_scale_for_gate_and_up():
    g = torch.randn(32, 64, generator=_gen(10))
    u = torch.randn(32, 64, generator=_gen(11)) * 3
    joint = max(float(g.abs().max()), float(u.abs().max()))
    _, sg, s2g = nvfp4.quantize(g, global_amax=joint)
    _, su, s2u = nvfp4.quantize(u, global_amax=joint)
    assert float(s2g) == float(s2u) == pytest.approx(joint / (6 * 448))
    assert float(su.float().max()) <= 448 and float(sg.float().max()) <= 448


def test_zero_weights_quantize_to_zero():
    z = torch.zeros(4, 64)
    assert torch.equal(nf3.dequantize(*nf3.quantize(z)), z)
    assert torch.equal(nvfp4.dequantize(*nvfp4.quantize(z)), z)
    assert torch.equal(mxfp4.dequantize(*mxfp4.quantize(z)), z)
