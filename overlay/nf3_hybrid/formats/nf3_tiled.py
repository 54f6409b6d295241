"""NF3 codes in "tiled" layout: the nibble layout's words (formats/nf3_nibble.py) and the
e4m3 group scales reordered inside each tile of 16 rows × 128 columns (four groups), so
that what one warp of the mma / wgmma kernels loads for one K step is contiguous memory.
Same bytes, same tensor shapes; a lossless permutation in both directions.

A tile (16-row block b, 128-wide window w of K) holds 192 words at word offset
(b·K/128 + w)·192 of its matrix, ordered [word h (3)][lane (32)][r (2)]: word h of the
group u of row n sits at h·64 + 2·(4·(n % 8) + u % 4) + (n % 16) // 8. Its 64 scale bytes
sit at byte offset (b·K/128 + w)·64, ordered [lane][r]. "lane" is the mma.sync fragment's:
lane 4g + t holds rows g and g + 8 of a 16-row tile and (mma_gluon.py) group t of each
window — so a lane's two rows of one word are one 8-byte load, a warp's loads of one word
are 256 contiguous bytes, and its scales one 2-byte load a lane.

Why: in row-major order a lane's 4-byte loads of one word span the 8 rows of its warp,
one cache line each; ncu on the H200 (session 15, ncu_h200_s15_l1_m2048.txt.gz) showed
the NF3 prefill kernels bound by the L1 data pipe's wavefronts (64-69 %), their global
loads using 7.4-7.9 of every 32-byte sector they touched.

Needs whole tiles: rows a multiple of 16 and K a multiple of 128 (``fits``).
"""
from __future__ import annotations

import torch

ROWS = 16
WINDOW = 128  # K columns of a tile: four 32-code groups
GROUPS = WINDOW // 32
TILE_WORDS = 3 * 32 * 2  # 192: three words of 2 rows for each of 32 lanes
TILE_SCALES = 32 * 2


def fits(rows: int, cols: int) -> bool:
    """Whether a matrix of ``rows`` weight rows and ``cols`` K columns is whole tiles."""
    return rows % ROWS == 0 and cols % WINDOW == 0


def _tile_lane_r(n: torch.Tensor, u: torch.Tensor, groups: int):
    """(tile, lane, row pair r) of group u of row n in a matrix of ``groups`` groups a row."""
    tile = (n // ROWS) * (groups // GROUPS) + u // GROUPS
    return tile, 4 * (n % 8) + u % GROUPS, (n % ROWS) // 8


def word_index(n: torch.Tensor, u: torch.Tensor, h: torch.Tensor, groups: int) -> torch.Tensor:
    """Word offset, in a tiled matrix of ``groups`` 32-code groups a row, of word h of group u
    of row n (broadcasting)."""
    tile, lane, r = _tile_lane_r(n, u, groups)
    return tile * TILE_WORDS + h * 64 + 2 * lane + r


def scale_index(n: torch.Tensor, u: torch.Tensor, groups: int) -> torch.Tensor:
    """Byte offset, in a tiled scale matrix, of the scale of group u of row n."""
    tile, lane, r = _tile_lane_r(n, u, groups)
    return tile * TILE_SCALES + 2 * lane + r


def _perm(kind: str, rows: int, groups: int, device) -> torch.Tensor:
    """Flat destination index of each row-major element. Not cached: session 16 kept one
    per shape and device for as long as the process ran (~38 MB of GPU memory at GLM-5.2's
    TP 1 shapes), and working one out is a few elementwise kernels beside the copy of the
    tier it indexes."""
    n = torch.arange(rows, device=device).view(rows, 1)
    if kind == "words":
        u = torch.arange(groups, device=device).view(1, groups, 1)
        h = torch.arange(3, device=device).view(1, 1, 3)
        idx = word_index(n.view(rows, 1, 1), u, h, groups)
    else:
        idx = scale_index(n, torch.arange(groups, device=device).view(1, groups), groups)
    return idx.reshape(-1)


def _word_shape(words: torch.Tensor):
    if words.dtype != torch.uint8:
        raise TypeError(f"NF3 tiled layout: code words must be uint8, got {words.dtype}")
    rows, nbytes = words.shape[-2:]
    if nbytes % 12:
        raise ValueError(f"NF3 tiled layout: {nbytes} bytes a row is not whole 32-code groups (12 bytes each)")
    return _checked(words, rows, nbytes // 12)


def _checked(t: torch.Tensor, rows: int, groups: int):
    if not fits(rows, groups * 32):
        raise ValueError(f"NF3 tiled layout needs rows in 16s and K in 128s; got {rows} rows, K={groups * 32}")
    if not t.is_contiguous():
        raise ValueError("NF3 tiled layout: the tensor must be contiguous")
    return rows, groups


def _scale_shape(scales: torch.Tensor):
    if scales.element_size() != 1:
        raise TypeError(f"NF3 tiled layout: scales must be one byte each, got {scales.dtype}")
    return _checked(scales, *scales.shape[-2:])


def tile_inplace(words: torch.Tensor, scales: torch.Tensor) -> None:
    """Nibble layout, row-major ([..., rows, K/32·12] uint8 and [..., rows, K/32] one-byte
    scales) → tiled, in place, one matrix at a time (a matrix's copy is the only scratch)."""
    rows, groups = _word_shape(words)
    if tuple(scales.shape) != tuple(words.shape[:-1]) + (groups,):
        raise ValueError(f"NF3 tiled layout: scales {tuple(scales.shape)} do not match code words "
                         f"{tuple(words.shape)} ({groups} groups a row)")
    _scale_shape(scales)
    wm = words.view(-1, rows * groups * 12).view(torch.int32)
    sm = scales.view(torch.uint8).view(-1, rows * groups)
    pw, ps = _perm("words", rows, groups, words.device), _perm("scales", rows, groups, scales.device)
    for i in range(wm.shape[0]):
        wm[i, pw] = wm[i].clone()
        sm[i, ps] = sm[i].clone()


def untiled_words(words: torch.Tensor) -> torch.Tensor:
    """Tiled code words → nibble layout, row-major: a new tensor of the same shape (a tier's
    tensor, or whole experts of it)."""
    rows, groups = _word_shape(words)
    wm = words.view(-1, rows * groups * 12).view(torch.int32)
    return wm[:, _perm("words", rows, groups, words.device)].contiguous().view(torch.uint8).view(words.shape)


def untiled_scales(scales: torch.Tensor) -> torch.Tensor:
    """Tiled scales → row-major: a new tensor of the same shape and dtype."""
    rows, groups = _scale_shape(scales)
    sm = scales.view(torch.uint8).view(-1, rows * groups)
    out = sm[:, _perm("scales", rows, groups, scales.device)].contiguous()
    return out.view(scales.dtype).view(scales.shape)
