"""Our NF3 packing → b12x's ``nf3_2p1`` W4A16 weight layout (b12x 1.1.0), and back.

b12x's NF3 kernel reads the B operand as a stream of 32-code *units*: one unit covers
two 16-column halves (columns C1 and C1+8) × a 16-deep K row pair, i.e. the codes one MMA
thread owns for one K16 step, stored as three 32-bit words — two planes of 2-bit low
parts and one plane of high bits. Units are ordered N-tile-major for a fixed CTA tile
width ``tile_n``:

    unit I = nt·(K/16)·(tile_n/2) + R·(tile_n/2) + p      (nt: N tile, R: K16 row, p: N pair)
    w = p + (tile_n/2)·nt;  n64 = w // 32;  t = w % 32
    for word group jj = 0..3:  C1 = 64·n64 + 16·jj + t//4,  C2 = C1 + 8,  K0 = 16·R + 2·(t%4)
    8 codes (v = 0..7): (C1,K0) (C1,K0+1) (C1,K0+8) (C1,K0+9) (C2,K0) (C2,K0+1) (C2,K0+8) (C2,K0+9)
    lo16[jj] = Σ_v (code_v & 3) << 2v,   hi8[jj] = Σ_v (code_v >> 2) << v
    words = (lo16[0] | lo16[1] << 16, lo16[2] | lo16[3] << 16, hi8[0] | hi8[1] << 8 | hi8[2] << 16 | hi8[3] << 24)

Scales (e4m3 per 32 along K) become one byte per (K group, column): the scale as fp16
times 2**-4, its top byte after dropping the sign bit (5 exponent + 3 mantissa bits, so
an e4m3 value survives exactly); columns permuted as b12x's Marlin-style scale layout
expects; the per-tensor global scale 2**116 undoes the 2**-4 in the kernel's bf16
exponent trick. Non-zero scales below 2**-10 are raised to it (the kernel needs the fp16
value normal) — ``scale_floor_count`` says how many a tensor has.

Pure torch; the test suite checks both directions byte for byte against b12x 1.1.0's own
packers, in a separate environment (that release cannot share one with vLLM 0.33).
"""
from __future__ import annotations

import torch

GLOBAL_SCALE = 2.0**116
SCALE_FLOOR = 2.0**-10
SCALE_LIMIT = 32.0
_CODE_COLS = (0, 0, 0, 0, 8, 8, 8, 8)  # column offset of code v from C1
_CODE_KS = (0, 1, 8, 9, 0, 1, 8, 9)  # K offset of code v from K0


def check_shape(size_k: int, size_n: int, tile_n: int) -> None:
    if size_k % 32:
        raise ValueError(f"nf3_2p1 needs K divisible by 32, got {size_k}")
    if size_n % 64:
        raise ValueError(f"nf3_2p1 needs N divisible by 64, got {size_n}")
    if tile_n % 16 or tile_n < 64 or size_n % tile_n:
        raise ValueError(f"nf3_2p1 tile_n must be a multiple of 16, at least 64 and divide N={size_n}; got {tile_n}")


def code_positions(size_k: int, size_n: int, tile_n: int, device=None) -> torch.Tensor:
    """long [units, 4, 8]: flat index n·K + k of every code in the unit stream."""
    check_shape(size_k, size_n, tile_n)
    half = tile_n // 2
    rows = size_k // 16
    units = rows * (size_n // 2)
    unit = torch.arange(units, device=device)
    nt, rem = unit // (rows * half), unit % (rows * half)
    r, p = rem // half, rem % half
    w = p + half * nt
    n64, t = w // 32, w % 32
    c1 = 64 * n64[:, None] + 16 * torch.arange(4, device=device)[None, :] + (t // 4)[:, None]  # [units, 4]
    k0 = (16 * r + 2 * (t % 4))[:, None, None]
    cols = c1[:, :, None] + torch.tensor(_CODE_COLS, device=device)[None, None, :]
    ks = k0 + torch.tensor(_CODE_KS, device=device)[None, None, :]
    return cols * size_k + ks


def pack_codes(codes: torch.Tensor, tile_n: int) -> torch.Tensor:
    """codes uint8 [N, K] (0..7) → int32 [units·3] words."""
    size_n, size_k = codes.shape
    pos = code_positions(size_k, size_n, tile_n, codes.device)
    c = codes.reshape(-1).to(torch.int64)[pos]  # [units, 4, 8]
    v = torch.arange(8, device=codes.device)
    lo16 = ((c & 3) << (2 * v)).sum(-1)  # [units, 4]
    hi8 = (((c >> 2) & 1) << v).sum(-1)
    words = torch.stack([lo16[:, 0] | (lo16[:, 1] << 16), lo16[:, 2] | (lo16[:, 3] << 16),
                         hi8[:, 0] | (hi8[:, 1] << 8) | (hi8[:, 2] << 16) | (hi8[:, 3] << 24)], dim=1)
    return (words - (words >= 2**31).to(torch.int64) * 2**32).to(torch.int32).reshape(-1)


def unpack_codes(words: torch.Tensor, size_k: int, size_n: int, tile_n: int) -> torch.Tensor:
    """Inverse of ``pack_codes``: int32 [units·3] → codes uint8 [N, K]."""
    pos = code_positions(size_k, size_n, tile_n, words.device)
    w = words.to(torch.int64).reshape(-1, 3) & 0xFFFFFFFF
    lo16 = torch.stack([w[:, 0] & 0xFFFF, w[:, 0] >> 16, w[:, 1] & 0xFFFF, w[:, 1] >> 16], dim=1)
    hi8 = torch.stack([(w[:, 2] >> (8 * j)) & 0xFF for j in range(4)], dim=1)
    v = torch.arange(8, device=words.device)
    c = ((lo16[:, :, None] >> (2 * v)) & 3) | (((hi8[:, :, None] >> v) & 1) << 2)
    out = torch.empty(size_n * size_k, dtype=torch.uint8, device=words.device)
    out[pos.reshape(-1)] = c.reshape(-1).to(torch.uint8)
    return out.reshape(size_n, size_k)


def _column_perm(groups: int, size_n: int, device=None) -> torch.Tensor:
    """Column order of the packed scales: an 8×8 transpose inside every 64 columns when
    K has several groups, a fixed 32-column interleave when it has one."""
    if groups > 1:
        block = torch.arange(64, device=device).reshape(8, 8).t().reshape(-1)
        width = 64
    else:
        block = torch.tensor([2 * i + j for i in range(4) for j in (0, 1, 8, 9, 16, 17, 24, 25)], device=device)
        width = 32
    base = torch.arange(0, size_n, width, device=device)[:, None]
    return (base + block[None, :]).reshape(-1)


def pack_scales(scale: torch.Tensor) -> torch.Tensor:
    """e4m3 scales [N, K/32] → uint8 [K/32, N] in the kernel's order and byte encoding."""
    size_n, groups = scale.shape
    s = scale.float()
    zero = s == 0
    s = torch.where(zero, torch.zeros_like(s), s.clamp(min=SCALE_FLOOR))
    if bool((s >= SCALE_LIMIT).any()):
        raise ValueError(f"nf3_2p1 scales must be below {SCALE_LIMIT} (e4m3 K/32 byte encoding)")
    t = s.t()[:, _column_perm(groups, size_n, s.device)]  # [G, N]
    h = t.to(torch.float16).reshape(groups, -1, 4)[:, :, [0, 2, 1, 3]].reshape(groups, size_n)
    h = (h.float() * 2.0**-4).to(torch.float16)
    return ((h.view(torch.int16) << 1).view(torch.uint8)[:, 1::2]).contiguous()


def scale_floor_count(scale: torch.Tensor) -> int:
    s = scale.float()
    return int(((s > 0) & (s < SCALE_FLOOR)).sum())


def unpack_scales(packed: torch.Tensor, size_n: int) -> torch.Tensor:
    """Inverse of ``pack_scales`` (after the floor): uint8 [K/32, N] → float32 [N, K/32]."""
    groups = packed.shape[0]
    h = (packed.to(torch.int16) << 7).view(torch.float16).float() * 2.0**4  # top byte back into fp16 bits
    h = h.reshape(groups, -1, 4)[:, :, [0, 2, 1, 3]].reshape(groups, size_n)
    inv = torch.empty(size_n, dtype=torch.long, device=packed.device)
    perm = _column_perm(groups, size_n, packed.device)
    inv[perm] = torch.arange(size_n, device=packed.device)
    return h[:, inv].t().contiguous()
