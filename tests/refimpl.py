"""Independent float64 re-implementations of the formats, written from the spec text
(not from the package's code), element by element with Python ints and floats."""
import math

import numpy as np

E2M1 = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]
NF3 = [-1.0, -0.6047, -0.3563, -0.1275, 0.1275, 0.3563, 0.6047, 1.0]


def e2m1_value(code: int) -> float:
    mag = E2M1[code & 7]
    return -mag if code & 8 else mag


def e4m3_value(byte: int) -> float:
    """float8_e4m3fn from its bit pattern: 1 sign, 4 exponent (bias 7), 3 mantissa; no inf."""
    s = -1.0 if byte & 0x80 else 1.0
    e = (byte >> 3) & 0xF
    m = byte & 7
    if e == 0xF and m == 7:
        return math.nan
    if e == 0:
        return s * (m / 8) * 2.0 ** -6
    return s * (1 + m / 8) * 2.0 ** (e - 7)


def nf3_unpack_row(row_bytes, cols):
    codes = []
    for w in range(cols // 8):
        b0, b1, b2 = (int(x) for x in row_bytes[3 * w:3 * w + 3])
        word = b0 | (b1 << 8) | (b2 << 16)
        codes += [(word >> (3 * k)) & 7 for k in range(8)]
    return codes


def nf3_dequant(packed: np.ndarray, scale_bytes: np.ndarray, codebook=NF3) -> np.ndarray:
    rows, nbytes = packed.shape
    cols = nbytes // 3 * 8
    out = np.zeros((rows, cols))
    for r in range(rows):
        codes = nf3_unpack_row(packed[r], cols)
        for c in range(cols):
            out[r, c] = codebook[codes[c]] * e4m3_value(int(scale_bytes[r, c // 32]))
    return out


def fp4_dequant(packed: np.ndarray, scale_of) -> np.ndarray:
    """scale_of(r, c) gives the float64 scale of element (r, c)."""
    rows, half = packed.shape
    out = np.zeros((rows, half * 2))
    for r in range(rows):
        for j in range(half):
            b = int(packed[r, j])
            out[r, 2 * j] = e2m1_value(b & 0xF) * scale_of(r, 2 * j)
            out[r, 2 * j + 1] = e2m1_value(b >> 4) * scale_of(r, 2 * j + 1)
    return out


def nvfp4_dequant(packed, scale_bytes, scale_2: float):
    return fp4_dequant(packed, lambda r, c: e4m3_value(int(scale_bytes[r, c // 16])) * scale_2)


def mxfp4_dequant(packed, e8m0):
    return fp4_dequant(packed, lambda r, c: 2.0 ** (int(e8m0[r, c // 32]) - 127))


def fp8_rev2_dequant(w_bytes, scale):
    rows, cols = w_bytes.shape
    return np.array([[e4m3_value(int(w_bytes[r, c])) * float(scale[r]) for c in range(cols)] for r in range(rows)])


def mxfp8_dequant(w_bytes, e8m0):
    rows, cols = w_bytes.shape
    return np.array(
        [[e4m3_value(int(w_bytes[r, c])) * 2.0 ** (int(e8m0[r, c // 32]) - 127) for c in range(cols)] for r in range(rows)]
    )
