"""kernels/pair_sum.py: each token's top-k pair rows summed k ascending in float32 and
rounded once, against that sum done by torch step by step (bit for bit in float32: the same
IEEE adds in the same order), with and without the tiers' maps masking the rows of pairs no
tier holds (those rows hold NaN here, so reading one would show). Rounded to bf16 the
result must be one of the sum's two bf16 neighbours: the GPU rounds to nearest, Triton's
CPU interpreter toward zero."""
import pytest
import torch

from nf3_hybrid.kernels import pair_sum

DEV = "cuda" if torch.cuda.is_available() else "cpu"


def _ordered_sum(rows, topk, keep=None):
    m = rows.shape[0] // topk
    r = rows.view(m, topk, -1)
    acc = torch.zeros_like(r[:, 0])
    for k in range(topk):
        v = r[:, k]
        if keep is not None:
            v = torch.where(keep.view(m, topk)[:, k:k + 1], v, torch.zeros_like(v))
        acc = acc + v
    return acc


@pytest.mark.parametrize("topk,n", [(8, 1536), (3, 200), (1, 64)])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
def test_pair_rows_are_summed_k_ascending_and_rounded_once(topk, n, dtype):
    g = torch.Generator().manual_seed(topk * 1000 + n)
    m = 5
    rows = (torch.randn(m * topk, n, generator=g) * 10).to(DEV)
    out = torch.full((m, n), 3.0, dtype=dtype, device=DEV)
    pair_sum.launch(rows, out, topk)
    _assert_rounded(out, _ordered_sum(rows, topk))


def _assert_rounded(out, want):
    """``out`` is ``want`` (float32) itself, or in bf16 one of its two neighbours."""
    if out.dtype == torch.float32:
        assert torch.equal(out, want)
        return
    assert torch.isfinite(out.float()).all()
    err = (out.float() - want).abs()
    assert (err <= want.abs() * 2.0 ** -7).all(), err.max()
    if DEV == "cuda":
        assert torch.equal(out, want.to(out.dtype))


def test_rows_of_pairs_no_tier_holds_are_never_read():
    g = torch.Generator().manual_seed(5)
    m, topk, n, experts = 6, 4, 1024, 10
    ids = torch.randint(0, experts, (m * topk,), generator=g).to(torch.int32).to(DEV)
    maps = torch.full((2, experts), -1, dtype=torch.int32, device=DEV)
    maps[0, :3] = torch.arange(3, dtype=torch.int32)
    maps[1, 5:8] = torch.arange(3, dtype=torch.int32)  # experts 3, 4, 8, 9: in no tier
    held = (maps[0, ids.long()] >= 0) | (maps[1, ids.long()] >= 0)
    assert held.any() and not held.all()
    rows = (torch.randn(m * topk, n, generator=g) * 10).to(DEV)
    rows[~held] = float("nan")
    for dtype in (torch.float32, torch.bfloat16):
        out = torch.empty((m, n), dtype=dtype, device=DEV)
        pair_sum.launch(rows, out, topk, ids, maps)
        _assert_rounded(out, _ordered_sum(rows, topk, held))
