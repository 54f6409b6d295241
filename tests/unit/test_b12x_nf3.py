"""HYBRID_KEPT=b12x_nf3 (both tiers through b12x 1.1.0's two-tier W4A16 kernel, SM120
only): what can be checked without such a GPU — the NF3 inputs against our own
dequantization, the refusals, and (in the b12x 1.1.0 side environment `make test` builds)
b12x's tile selection, packers and expert map on our inputs. The kernels never ran."""
import json
import subprocess
import textwrap
from pathlib import Path

import pytest
import torch

from nf3_hybrid.backends import b12x_nf3
from nf3_hybrid.backends.base import MXFP4, NF3, NVFP4
from nf3_hybrid.backends.select import BackendError
from nf3_hybrid.formats import nf3
from tests.kernels.tiers import make_tier

ROOT = Path(__file__).resolve().parents[2]
SIDE_PY = ROOT / ".venv-b12x110" / "bin" / "python"
E, KN = 12, 4
KMAP = [i // 3 if i % 3 == 0 else -1 for i in range(E)]  # experts 0, 3, 6, 9 kept
NMAP = [-1 if i % 3 == 0 else i - i // 3 - 1 for i in range(E)]


def _tiers(hidden=128, inter=64, codebook=None, kept_fmt=NVFP4):
    return (make_tier(kept_fmt, KN, hidden, inter, KMAP, seed=1),
            make_tier(NF3, E - KN, hidden, inter, NMAP, seed=2, codebook=codebook))


def test_nf3_inputs_dequantize_to_our_tier_with_up_rows_first():
    _, t = _tiers()
    got = b12x_nf3.nf3_inputs(t)
    cb = torch.tensor(nf3.CODEBOOK)
    for key, packed, scale in (("w13", t.w13, t.w13_scale), ("w2", t.w2, t.w2_scale)):
        codes, s = got[f"{key}_codes"], got[f"{key}_scale"]
        assert codes.dtype == torch.uint8 and s.dtype == torch.float32
        theirs = cb[codes.long()] * s.repeat_interleave(32, dim=-1)  # b12x: level × K/32 scale
        ours = torch.stack([nf3.dequantize(packed[e], scale[e]) for e in range(t.num_experts)])
        if key == "w13":
            ours = torch.cat([ours[:, t.inter:], ours[:, :t.inter]], dim=1)
        assert torch.equal(theirs, ours), key


def test_global_ids_follow_the_local_maps():
    k, n = _tiers()
    assert b12x_nf3.tier_global_ids(k) == [0, 3, 6, 9]
    assert b12x_nf3.tier_global_ids(n) == [i for i in range(E) if i % 3]


def test_refusals_name_what_to_use_instead():
    k, n = _tiers()
    b12x_nf3.check_supported(k, n)  # the supported case passes
    with pytest.raises(BackendError, match="NVFP4 kept tiers.*HYBRID_KEPT=b12x with HYBRID_NF3=fast"):
        b12x_nf3.check_supported(_tiers(kept_fmt=MXFP4)[0], n)
    custom = (-1.2, -0.7, -0.3, -0.1, 0.1, 0.3, 0.7, 1.2)
    with pytest.raises(BackendError, match="nf3_codebook.*HYBRID_NF3=fast"):
        b12x_nf3.check_supported(k, _tiers(codebook=custom)[1])
    empty = make_tier(NF3, 0, 128, 64, [-1] * E)
    with pytest.raises(BackendError, match="0 NF3 experts"):
        b12x_nf3.check_supported(k, empty)


SIDE_SCRIPT = textwrap.dedent('''
    import json, sys, torch
    from b12x.moe._shared.kernels.w4a16 import kernel as K, prepare as P
    from nf3_hybrid.backends import b12x_nf3
    d = torch.load(sys.argv[1])
    out = {"tiles": {}}
    # GLM-5.2 per-rank shapes on an RTX PRO 6000 (188 SMs, 99 KiB opt-in shared memory per block)
    for inter in (512, 1024, 2048):
        out["tiles"][inter] = b12x_nf3.tile_config(K, 6144, inter, 8, 188, 101376)
    tiles = b12x_nf3.tile_config(K, d["hidden"], d["inter"], 4, 188, 101376)
    out["small_tiles"] = tiles
    # b12x's own packers take our inputs at those tiles (prepare_nf3_moe_weights itself
    # also allocates a CUDA workspace, so it is the two packing steps it runs)
    w13 = P._nf3_pack_code_experts(d["w13_codes"], size_k=d["hidden"], size_n=2 * d["inter"], tile_n=tiles[1])
    w2 = P._nf3_pack_code_experts(d["w2_codes"], size_k=d["inter"], size_n=d["hidden"], tile_n=tiles[3])
    s13 = P._nf3_pack_scale_experts(d["w13_scale"], size_k=d["hidden"], size_n=2 * d["inter"])
    out["packed_numel"] = [w13.numel(), w2.numel(), s13.numel()]
    out["map"] = K.build_w4a16_tier_local_map(d["kept_ids"], d["nf3_ids"], map_slots=d["slots"]).tolist()
    print(json.dumps(out))
''')


def test_b12x_1_1_0_tiles_packers_and_map_on_our_inputs(tmp_path):
    if not SIDE_PY.is_file():
        pytest.fail(f"{SIDE_PY} is missing: `make test` builds the b12x 1.1.0 side environment")
    k, n = _tiers(hidden=256, inter=128)
    inputs = b12x_nf3.nf3_inputs(n)
    torch.save(dict(inputs, hidden=256, inter=128, kept_ids=b12x_nf3.tier_global_ids(k),
                    nf3_ids=b12x_nf3.tier_global_ids(n), slots=E), tmp_path / "in.pt")
    (tmp_path / "side.py").write_text(SIDE_SCRIPT)
    p = subprocess.run([str(SIDE_PY), str(tmp_path / "side.py"), str(tmp_path / "in.pt")], capture_output=True,
                       text=True, timeout=300, env={"PYTHONPATH": str(ROOT / "overlay"), "PATH": "/usr/bin:/bin"})
    assert p.returncode == 0, p.stderr[-3000:]
    out = json.loads(p.stdout.strip().splitlines()[-1])
    for inter, tiles in out["tiles"].items():
        fc1_k, fc1_n, fc2_k, fc2_n = tiles
        assert (2 * int(inter)) % fc1_n == 0 and 6144 % fc1_k == 0 and 6144 % fc2_n == 0 and int(inter) % fc2_k == 0
    # 3 bits per code: the packed planes hold exactly the codes, the scales one byte per group
    en = E - KN
    assert out["packed_numel"] == [en * 256 * 256 * 3 // 32, en * 128 * 256 * 3 // 32, en * 256 * 256 // 32]
    want = [-1] * E
    for local, g in enumerate(b12x_nf3.tier_global_ids(k)):
        want[g] = local
    for local, g in enumerate(b12x_nf3.tier_global_ids(n)):
        want[g] = (1 << 8) | local
    assert out["map"] == want
