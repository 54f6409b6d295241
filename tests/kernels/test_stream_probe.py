"""bench/stream_probe.py times a read-only kernel and divides the bytes it names by the
time: that is only a bandwidth if the kernel reads exactly those bytes. Its checksums
against torch (which the probe also runs before timing on a GPU) say so, here under the
CPU interpreter, and fail when one word it should read differs."""
import importlib.util
from pathlib import Path

import pytest
import torch

_spec = importlib.util.spec_from_file_location("stream_probe", Path(__file__).parents[2] / "bench" / "stream_probe.py")
sp = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(sp)
# compiled on a GPU host (the barrier probes included), interpreted on the CPU
DEV = "cuda" if torch.cuda.is_available() else "cpu"


def test_every_probe_reads_exactly_its_tier_words_and_scales():
    assert sp.check(DEV, tiers=6, inter=64, hidden=256, tokens=3)


@pytest.mark.parametrize("where", ["w", "s"])
def test_a_changed_word_in_the_last_step_of_an_up_stream_changes_the_checksum(where):
    tier = sp.Tier(6, 64, 256, DEV)
    hit = sp.hit_experts(3, 10, 4, 2, 0, DEV)
    out = torch.empty((hit.numel() * tier.blocks // 4, 4, sp.RUN + sp.SCALE_RUN), dtype=torch.int32, device=DEV)
    sp.launch(tier, hit, out, 64, 4, 1, True, 0, 2)
    assert torch.equal(out, sp.expected(tier, hit, 4, 1, 2))
    getattr(tier, where)[hit[-1].long(), 1, tier.blocks - 1, tier.steps - 1, 3] += 1
    assert not torch.equal(out, sp.expected(tier, hit, 4, 1, 2))


def test_bad_tiles_are_refused():
    tier = sp.Tier(2, 64, 256, "cpu")
    with pytest.raises(ValueError, match="BN 48 must be 16 rows a warp"):
        sp.launch(tier, torch.zeros(1, dtype=torch.int32), None, 48, 4, 0, True, 0)
    with pytest.raises(ValueError, match="whole 16-row blocks"):
        sp.Tier(2, 40, 256, "cpu")


def test_the_decode_stand_in_keeps_every_byte_permute_of_the_real_decode():
    """The decode probe's work is and-ed with a run-time zero into the checksum; were ptxas
    to see through that, the probe would time the pattern alone and call it the decode.
    Compiled for SM90 on the CPU (ptxas, no GPU, no interpreter): a K step decodes 16 code
    words, eight byte permutes each — the real decode's count — and the pattern alone has none."""
    import json
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    res = subprocess.run([sys.executable, str(Path(sp.__file__)), "--sass", "90", "--only", "mirror", "--only",
                          "decode"], env=env, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    loops = json.loads(res.stdout.strip().splitlines()[-1])
    assert loops["decode"]["ops"].get("PRMT", 0) == 16 * 8
    assert loops["mirror"]["ops"].get("PRMT", 0) == 0
