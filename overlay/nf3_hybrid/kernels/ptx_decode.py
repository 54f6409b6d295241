"""Byte-permute decoding of 3- and 4-bit codes for the decode GEMV, as inline PTX.

Why: at a few tokens the GEMV is bound by instruction issue, not by bandwidth. Looking a
code up in a table in memory costs one load per weight, and reading the activation in the
order the codes come out of their packing costs another. Here eight codes (one 32-bit
word) become eight fp16 values with register-only instructions: the codes are spread into
the nibbles of a selector and ``prmt`` (byte permute) picks the low and high bytes of each
level from an 8-entry fp16 table held in four registers; the same inline block then
multiplies them with the eight activations of that word — four fp16 pairs, packed
multiply-adds — and returns the sum in fp32. About 3 instructions per weight, no loads.

Why fp16 products: converting each value to fp32 for its own multiply-add cost two
instructions per weight, a quarter of the GEMV's instructions (compile_probe). Four
products are summed in fp16 (relative rounding 2**-11 per step, below the bf16 rounding of
the activations themselves), each pair's two sums in fp32. The activations are the bf16
input or the fp32 SiLU·up intermediate rounded to fp16 — the range the grouped path's fp16
tensor-core operands already have.

- NF3 word: eight 3-bit codes, code i at bits 3i (bits 24-31 are ignored). The table is
  the checkpoint's codebook in fp16, passed as four 32-bit registers (low bytes of levels
  0-3 / 4-7, high bytes of levels 0-3 / 4-7).
- e2m1 word: eight nibbles, code i at bits 4i, bit 3 of a nibble its sign. The table of
  magnitudes {0, ½, 1, 1½, 2, 3, 4, 6} is two registers of high bytes (their fp16 low
  bytes are all zero); signs are copied into the high bytes with ``prmt``'s sign-replicate
  mode.

The instruction lists below are the single source of both the PTX text and
``emulate`` — a Python interpreter of exactly these instructions, so that the CPU suite
checks the bit logic against the format decoders (the Triton interpreter cannot run
inline assembly; there the kernels look codes up in a table instead).
"""
from __future__ import annotations

import struct
from typing import Dict, List, Sequence

MASK32 = 0xFFFFFFFF

# Spread the eight 3-bit codes of ``w`` into eight nibbles of ``sel`` in three moves
# (codes 4-7 up by 4, then 2-3 of each half up by 2, then the odd ones up by 1; lop3 0xE4
# is "a where c else b"), then clear the bit that would switch prmt to sign mode.
_NF3_BODY = """
shl.b32 t, w, 4;
mov.b32 m, 0x0000FFFF;
lop3.b32 s, w, t, m, 0xE4;
shl.b32 t, s, 2;
mov.b32 m, 0x003F003F;
lop3.b32 s, s, t, m, 0xE4;
shl.b32 t, s, 1;
mov.b32 m, 0x07070707;
lop3.b32 s, s, t, m, 0xE4;
and.b32 sel, s, 0x77777777;
prmt.b32 lo, L0, L1, sel;
prmt.b32 hi, H0, H1, sel;
prmt.b32 q0, lo, hi, 0x5140;
prmt.b32 q1, lo, hi, 0x7362;
shr.b32 sel, sel, 16;
prmt.b32 lo, L0, L1, sel;
prmt.b32 hi, H0, H1, sel;
prmt.b32 q2, lo, hi, 0x5140;
prmt.b32 q3, lo, hi, 0x7362;
"""

# Magnitudes by table (high bytes only), each code's sign (bit 4i+3) made the msb of a byte
# (``u`` = w << 4 for even codes, ``w`` itself for odd ones), replicated by prmt's sign
# mode and or-ed into bit 15 of the fp16 value (lop3 0xF8 is "a | (b & c)").
_E2M1_BODY = """
mov.b32 m, 0x80808080;
and.b32 sel, w, 0x77777777;
shl.b32 u, w, 4;
prmt.b32 hi, ta, tb, sel;
prmt.b32 sg, u, w, 0xD9C8;
lop3.b32 hi, hi, sg, m, 0xF8;
prmt.b32 q0, hi, z, 0x1404;
prmt.b32 q1, hi, z, 0x3424;
shr.b32 sel, sel, 16;
prmt.b32 hi, ta, tb, sel;
prmt.b32 sg, u, w, 0xFBEA;
lop3.b32 hi, hi, sg, m, 0xF8;
prmt.b32 q2, hi, z, 0x1404;
prmt.b32 q3, hi, z, 0x3424;
"""

# x0..x3: the word's activations as fp16 pairs (x_2i in the low half, x_2i+1 in the high)
_NF3_INPUTS = ("w", "x0", "x1", "x2", "x3", "L0", "L1", "H0", "H1")
_E2M1_INPUTS = ("w", "x0", "x1", "x2", "x3", "ta", "tb", "z")
# the e2m1 table registers: high bytes of the fp16 magnitudes {0, ½, 1, 1½} and {2, 3, 4, 6},
# and a zero (passed in rather than set inside the block, so that they are set once per
# kernel instead of once per word)
E2M1_TABLE_WORDS = (0x3E3C3800, 0x46444240, 0)
_TEMPS = ("t", "s", "m", "sel", "lo", "hi", "u", "sg", "q0", "q1", "q2", "q3")


def _lines(body: str) -> List[str]:
    return [ln.strip() for ln in body.strip().splitlines() if ln.strip()]


def _renamed(body: str, names: Dict[str, str]) -> List[str]:
    """The body's instructions with the named inputs replaced by their operands."""
    out = []
    for line in _lines(body):
        op, rest = line.split(" ", 1)
        args = [a.strip() for a in rest.rstrip(";").split(",")]
        out.append(f"{op} " + ", ".join(names.get(a, a) for a in args) + ";")
    return out


def _render(body: str, inputs: Sequence[str]) -> str:
    """The PTX block for tl.inline_asm_elementwise: $0 = fp32 dot, $1.. = ``inputs``."""
    names = {name: f"${i + 1}" for i, name in enumerate(inputs)}
    out = ["{", ".reg .b32 " + ", ".join(_TEMPS) + ", acc;", ".reg .b16 h0, h1;", ".reg .f32 f0, f1;"]
    out += _renamed(body, names)
    out.append(f"mul.rn.f16x2 acc, q0, {names['x0']};")
    for i in range(1, 4):
        out.append(f"fma.rn.f16x2 acc, q{i}, {names[f'x{i}']}, acc;")
    out.append("mov.b32 {h0, h1}, acc;")
    out.append("cvt.f32.f16 f0, h0;")
    out.append("cvt.f32.f16 f1, h1;")
    out.append("add.f32 f0, f0, f1;")
    out.append("mov.b32 $0, f0;")
    out.append("}")
    return "\n".join(out)


def _render_values(body: str, inputs: Sequence[str]) -> str:
    """The PTX block that returns the eight fp16 values themselves: $0..$7 (pack=1),
    $8.. = ``inputs``."""
    out = ["{", ".reg .b32 " + ", ".join(_TEMPS) + ";"]
    out += _renamed(body, {name: f"${i + 8}" for i, name in enumerate(inputs)})
    for i in range(4):
        out.append(f"mov.b32 {{${2 * i}, ${2 * i + 1}}}, q{i};")
    out.append("}")
    return "\n".join(out)


NF3_DOT_ASM = _render(_NF3_BODY, _NF3_INPUTS)
# the grouped (tensor-core) path's NF3 tile: the values, scaled and fed to tl.dot there
NF3_VALUES_ASM = _render_values(_NF3_BODY, ("w", "L0", "L1", "H0", "H1"))
NF3_VALUES_CONSTRAINTS = ",".join(["=h"] * 8 + ["r"] * 5)
NF3_DOT_CONSTRAINTS = "=r," + ",".join(["r"] * len(_NF3_INPUTS))
E2M1_DOT_ASM = _render(_E2M1_BODY, _E2M1_INPUTS)
E2M1_DOT_CONSTRAINTS = "=r," + ",".join(["r"] * len(_E2M1_INPUTS))


def _fp16_bits(v: float) -> int:
    return struct.unpack("<H", struct.pack("<e", v))[0]


def _signed(v: int) -> int:
    """As an int32 kernel argument (Triton would type an int ≥ 2**31 as int64)."""
    return v - (1 << 32) if v & 0x80000000 else v


def nf3_table_words(levels: Sequence[float]) -> tuple:
    """(L0, L1, H0, H1): low / high bytes of the eight fp16 levels, four per register."""
    bits = [_fp16_bits(float(v)) for v in levels]
    if len(bits) != 8:
        raise ValueError(f"NF3 table needs 8 levels, got {len(bits)}")

    def word(vals):
        return sum((b & 0xFF) << (8 * i) for i, b in enumerate(vals))

    lo = [b & 0xFF for b in bits]
    hi = [b >> 8 for b in bits]
    return tuple(_signed(word(v)) for v in (lo[:4], lo[4:], hi[:4], hi[4:]))


# --- Python interpreter of the instruction lists (for tests) -----------------------------

def _prmt(a: int, b: int, c: int) -> int:
    src = (a & MASK32) | ((b & MASK32) << 32)
    out = 0
    for i in range(4):
        nib = (c >> (4 * i)) & 0xF
        byte = (src >> (8 * (nib & 7))) & 0xFF
        if nib & 8:  # sign mode: replicate the byte's msb
            byte = 0xFF if byte & 0x80 else 0x00
        out |= byte << (8 * i)
    return out


def _lop3(a: int, b: int, c: int, lut: int) -> int:
    out = 0
    for bit in range(32):
        idx = (((a >> bit) & 1) << 2) | (((b >> bit) & 1) << 1) | ((c >> bit) & 1)
        out |= ((lut >> idx) & 1) << bit
    return out


def emulate(kind: str, word: int, tables: Sequence[int] = ()) -> List[int]:
    """The eight fp16 bit patterns the PTX block computes for one word (``kind`` 'nf3' or
    'e2m1'; ``tables`` = nf3_table_words(...) for NF3)."""
    body = _NF3_BODY if kind == "nf3" else _E2M1_BODY
    regs: Dict[str, int] = {"w": word & MASK32}
    if kind == "nf3":
        regs.update(zip(("L0", "L1", "H0", "H1"), (t & MASK32 for t in tables)))
    else:
        regs.update(zip(("ta", "tb", "z"), E2M1_TABLE_WORDS))

    def val(tok: str) -> int:
        return regs[tok] if tok in regs else int(tok, 0) & MASK32

    for line in _lines(body):
        op, rest = line.split(" ", 1)
        d, *src = [a.strip() for a in rest.rstrip(";").split(",")]
        v = [val(s) for s in src]
        if op == "mov.b32":
            r = v[0]
        elif op == "shl.b32":
            r = v[0] << v[1]
        elif op == "shr.b32":
            r = v[0] >> v[1]
        elif op == "and.b32":
            r = v[0] & v[1]
        elif op == "lop3.b32":
            r = _lop3(v[0], v[1], v[2], v[3])
        elif op == "prmt.b32":
            r = _prmt(v[0], v[1], v[2])
        else:
            raise ValueError(f"emulate: no rule for {op}")
        regs[d] = r & MASK32
    halves = []
    for i in range(4):
        q = regs[f"q{i}"]
        halves += [q & 0xFFFF, q >> 16]
    return halves
