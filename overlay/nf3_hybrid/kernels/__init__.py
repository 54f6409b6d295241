"""Triton kernels of the hybrid tiers (no vLLM import). ``interpret()`` tells whether
they run under TRITON_INTERPRET=1 (CPU), where bf16 ``tl.dot`` is wrong and the kernels
dot in float32 instead."""
import os


def interpret() -> bool:
    return os.environ.get("TRITON_INTERPRET", "0") not in ("", "0")


def fit_tile(size: int, want: int) -> int:
    """The tile a config asking for ``want`` gets along a dimension of ``size``: the largest
    power of two ≤ want that divides size. The kernels cover N and K in whole tiles, with
    neither masks nor a partial last tile, and all a checkpoint guarantees is sizes that
    are multiples of 32 (the NF3/MXFP4 group; gpt-oss has hidden 2880): a 1024-wide K step
    read past every row there, a 128-row N tile left the last 64 rows unwritten."""
    t = 1 << (min(want, size).bit_length() - 1)
    while size % t:
        t //= 2
    if t < min(want, 32):
        raise ValueError(f"a size of {size} is not a multiple of 32")
    return t


def register_cap(option: str, cap, bounds) -> dict:
    """ptxas's ``maxnreg`` launch option from a tile option's register cap (``None``: no
    cap): a clear error naming the option for a cap ptxas would not take (a whole multiple
    of 8 within ``bounds``, the kernel's own range)."""
    if cap is None:
        return {}
    lo, hi = bounds
    if int(cap) != cap or int(cap) % 8 or not lo <= int(cap) <= hi:
        raise ValueError(f"{option}={cap}: a multiple of 8 in {lo}-{hi}")
    return dict(maxnreg=int(cap))
