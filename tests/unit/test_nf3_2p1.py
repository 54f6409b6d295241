"""Our NF3 → b12x nf3_2p1 conversion: round trip through our own decoder of the bit
planes, and byte equality with b12x 1.1.0's packers, run on the CPU in the side
environment `make test` builds (.venv-b12x110: b12x 1.1.0 pins nvidia-cutlass-dsl 4.6.0,
which cannot share an environment with vLLM 0.33.0)."""
import subprocess
import textwrap
from pathlib import Path

import pytest
import torch

from nf3_hybrid.formats import nf3, nf3_2p1

ROOT = Path(__file__).resolve().parents[2]
SIDE_PY = ROOT / ".venv-b12x110" / "bin" / "python"
SHAPES = [(64, 128, 64), (256, 256, 128), (32, 64, 64), (512, 256, 256)]  # K, N, tile_n


def _case(k, n, seed):
    g = torch.Generator().manual_seed(seed)
    codes = torch.randint(0, 8, (n, k), generator=g, dtype=torch.uint8)
    scale = (torch.rand(n, k // 32, generator=g) * 3 + 2.0**-12).to(torch.float8_e4m3fn)
    scale[0, 0] = 0.0  # an all-zero group must keep a zero scale
    return codes, scale


@pytest.mark.parametrize("k,n,tile_n", SHAPES)
def test_round_trip_through_our_decoder(k, n, tile_n):
    codes, scale = _case(k, n, k + n)
    words = nf3_2p1.pack_codes(codes, tile_n)
    assert words.dtype == torch.int32 and words.numel() == k * n * 3 // 32  # 3 bits per code
    assert torch.equal(nf3_2p1.unpack_codes(words, k, n, tile_n), codes)
    packed = nf3_2p1.pack_scales(scale)
    assert packed.dtype == torch.uint8 and packed.shape == (k // 32, n)
    floored = torch.where((scale.float() > 0) & (scale.float() < nf3_2p1.SCALE_FLOOR),
                          torch.full_like(scale.float(), nf3_2p1.SCALE_FLOOR), scale.float())
    assert torch.equal(nf3_2p1.unpack_scales(packed, n), floored)
    assert nf3_2p1.scale_floor_count(scale) == int(((scale.float() > 0) & (scale.float() < 2.0**-10)).sum())


def test_from_our_checkpoint_packing():
    """The maker's weight_packed/weight_scale → codes → planes decode to the same weights."""
    w = torch.randn(128, 256) * 0.05
    packed, scale = nf3.quantize(w)
    words = nf3_2p1.pack_codes(nf3.unpack(packed), 128)
    codes = nf3_2p1.unpack_codes(words, 256, 128, 128)
    back = nf3.dequantize_codes(codes, nf3_2p1.unpack_scales(nf3_2p1.pack_scales(scale), 128))
    assert torch.equal(back, nf3.dequantize(packed, scale))


def test_shape_errors():
    with pytest.raises(ValueError, match="N divisible by 64"):
        nf3_2p1.pack_codes(torch.zeros(96, 64, dtype=torch.uint8), 64)
    with pytest.raises(ValueError, match="tile_n"):
        nf3_2p1.pack_codes(torch.zeros(128, 64, dtype=torch.uint8), 48)
    with pytest.raises(ValueError, match="below 32"):
        nf3_2p1.pack_scales(torch.full((64, 2), 64.0).to(torch.float8_e4m3fn))


SIDE_SCRIPT = textwrap.dedent('''
    import sys, torch
    from b12x.moe._shared.kernels.w4a16.prepare import _nf3_pack_code_experts, _nf3_pack_scale_experts
    d = torch.load(sys.argv[1])
    out = {}
    for key, (codes, scale, tile_n) in d.items():
        n, k = codes.shape[1:]
        out[key] = (_nf3_pack_code_experts(codes, size_k=k, size_n=n, tile_n=tile_n),
                    _nf3_pack_scale_experts(scale.float(), size_k=k, size_n=n))
    torch.save(out, sys.argv[2])
''')


def test_byte_equal_to_b12x_1_1_0_packers(tmp_path):
    if not SIDE_PY.is_file():
        pytest.fail(f"{SIDE_PY} is missing: `make test` builds the b12x 1.1.0 side environment")
    cases = {}
    for k, n, tile_n in SHAPES:
        codes = torch.stack([_case(k, n, s)[0] for s in (1, 2)])
        scales = torch.stack([_case(k, n, s)[1] for s in (1, 2)])
        cases[f"{k}x{n}x{tile_n}"] = (codes, scales, tile_n)
    torch.save(cases, tmp_path / "in.pt")
    (tmp_path / "side.py").write_text(SIDE_SCRIPT)
    p = subprocess.run([str(SIDE_PY), str(tmp_path / "side.py"), str(tmp_path / "in.pt"), str(tmp_path / "out.pt")],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    theirs = torch.load(tmp_path / "out.pt")
    for key, (codes, scales, tile_n) in cases.items():
        words, sbytes = theirs[key]
        for e in range(2):
            assert torch.equal(nf3_2p1.pack_codes(codes[e], tile_n), words[e]), key
            assert torch.equal(nf3_2p1.pack_scales(scales[e]), sbytes[e]), key


def test_capability_probe_recognises_b12x_1_1_0():
    """Selection by what the installed b12x exports: the real b12x 1.1.0 (side
    environment) is recognised as NF3-capable (an earlier probe looked in module paths
    1.1.0 does not have and refused it), and HYBRID_KEPT=b12x_nf3 then gets past the
    b12x check on an SM120 device."""
    import json

    from nf3_hybrid.backends.select import BackendError, DeviceInfo, choose

    if not SIDE_PY.is_file():
        pytest.fail(f"{SIDE_PY} is missing: `make test` builds the b12x 1.1.0 side environment")
    p = subprocess.run([str(SIDE_PY), "-c", "import json; from nf3_hybrid.backends.b12x_support import capabilities; "
                        "print(json.dumps(capabilities()))"], capture_output=True, text=True, timeout=300,
                       env={"PYTHONPATH": str(ROOT / "overlay"), "PATH": "/usr/bin:/bin"})
    assert p.returncode == 0, p.stderr[-2000:]
    caps = json.loads(p.stdout.strip().splitlines()[-1])
    assert caps["version"] == "1.1.0" and caps["w4a16"] and caps["nf3"], caps
    sm120 = DeviceInfo("cuda", (12, 0), "RTX PRO 6000")
    nf3_module_missing = lambda m: "not in this build" if m.endswith("b12x_nf3") else None  # noqa: E731
    with pytest.raises(BackendError, match="not part of this nf3-hybrid build") as e:
        choose("b12x_nf3", "fast", sm120, probe=nf3_module_missing, caps_fn=lambda: caps)
    assert "nf3_2p1" not in str(e.value)  # it got past the capability check
