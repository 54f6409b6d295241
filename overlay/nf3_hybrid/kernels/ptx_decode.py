"""Byte-permute decoding of 3- and 4-bit codes, as inline PTX: the decode GEMV's dot
blocks and the grouped tiles' value blocks.

Why: at a few tokens the GEMV is bound by instruction issue, not by bandwidth. Looking a
code up in a table in memory costs one load per weight, and reading the activation in the
order the codes come out of their packing costs another. Here eight codes (one 32-bit
word) become eight fp16 values with register-only instructions: the codes sit in the
nibbles of a selector and ``prmt`` (byte permute) picks the low and high bytes of each
level from an 8-entry fp16 table held in four registers; the same inline block then
multiplies them with the eight activations of that word — four fp16 pairs, packed
multiply-adds. About 2.5 instructions per weight, no loads.

Why fp16 products: converting each value to fp32 for its own multiply-add cost two
instructions per weight, a quarter of the GEMV's instructions (compile_probe). The NF3
group block sums the products of two words in fp16 (eight per half; relative rounding
2**-11 per step, below the bf16 rounding of the activations themselves), then in fp32;
the e2m1 block four products per half. The activations are the bf16 input or the fp32
SiLU·up intermediate rounded to fp16 — the range the grouped path's fp16 tensor-core
operands already have.

- NF3: a 32-code group in nibble layout (formats/nf3_nibble.py), three words A, B, C;
  code i of a word in the low bits of nibble i, the fourth word (codes 24-31) gathered
  from the nibbles' top bits. The group block (GEMV) takes the three words and returns
  the group's dot; the values block (grouped tiles) takes one word. The table is the
  checkpoint's codebook in fp16, passed as four 32-bit registers (low bytes of levels 0-3
  / 4-7, high bytes of levels 0-3 / 4-7). Session 8, H200: against the checkpoint's
  24-bit words (a three-step spread into nibbles per word) the NF3 GEMV loop went from
  538 to 422 SASS instructions per 128 weights and the NF3 tier got 8-16 % faster from
  1 to 64 tokens (bench/results/bench_moe_h200_s8_nibble_*.json; of that, the fp16 sum
  over two words was 4-5 % in bench_moe_h200_s8_hack*.json).
- e2m1 in the grouped NVFP4 tiles (tile option ``ptx4``): the values block, scaled in
  fp16 by the kernel — 43 % fewer instructions in the w13 loop than the shift decoding.
- e2m1 word: eight nibbles, code i at bits 4i, bit 3 of a nibble its sign. The table of
  magnitudes {0, ½, 1, 1½, 2, 3, 4, 6} is two registers of high bytes (their fp16 low
  bytes are all zero); signs are copied into the high bytes with ``prmt``'s sign-replicate
  mode.

Session 24, tried and dropped (eb16584): the blocks' constant shifts written as multiplies
(``mul.hi.u32`` / ``mul.lo.u32``), which ptxas issues as IMAD on the FMA pipe instead of SHF
on the ALU pipe — session 20's ncu had the ALU pipe the busiest (GEMV 70 %, NF3 mma.sync
gate/up 55 %; "math pipe throttle" the first stall). compile_probe (Triton 3.6): the tiled
NF3 gate/up loop's SHF 32 → 16, the GEMV's NF3 loop 31 → 6. H200, hybrid layer, alternating
processes (bench/results/bench_moe_h200_s24_{alu,fma,gemv}*.json): with every block moved the
GEMV was within noise and the grouped kernels 2 % slower at 16-64 tokens and 2-7 % at
512-2048; with the GEMV's blocks only, within ±3 % of the shifts at 1-16 tokens. Neither
kernel is bound by the ALU pipe's throughput alone.

The instruction lists below are the single source of both the PTX text and
``emulate`` — a Python interpreter of exactly these instructions, so that the CPU suite
checks the bit logic against the format decoders (the Triton interpreter cannot run
inline assembly; there the kernels look codes up in a table instead).
"""
from __future__ import annotations

import re
import struct
from fractions import Fraction
from typing import Dict, List, Sequence

import numpy as np

MASK32 = 0xFFFFFFFF

# One word of a group in nibble layout (formats/nf3_nibble.py): code i in the low three
# bits of nibble i. The nibbles' top bits (another code's bits) are cleared, because a set
# bit would switch prmt to sign mode for that byte.
_NF3_BODY = """
and.b32 sel, w, 0x77777777;
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

# The fourth word of a group, codes 24-31, gathered from the top bits of the nibbles of
# A, B, C (bit b of code 24 + i at bit 4i + 3 of word b) into the low bits of ``d``'s
# nibbles (lop3 0xE4 is "a where c else b"); its top bits are left for _NF3_BODY's AND.
_NF3_FOURTH = """
shr.b32 t, A, 3;
shr.b32 u, B, 2;
mov.b32 m, 0x11111111;
lop3.b32 t, t, u, m, 0xE4;
shr.b32 u, C, 1;
mov.b32 m, 0x33333333;
lop3.b32 d, t, u, m, 0xE4;
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

# the e2m1 word block: the word, its four activation pairs (x0q: pair q, x_2q in the low
# half, x_2q+1 in the high), the table
_E2M1_INPUTS = ("w", "x00", "x01", "x02", "x03", "ta", "tb", "z")
# the e2m1 table registers: high bytes of the fp16 magnitudes {0, ½, 1, 1½} and {2, 3, 4, 6},
# and a zero (passed in rather than set inside the block, so that they are set once per
# kernel instead of once per word)
E2M1_TABLE_WORDS = (0x3E3C3800, 0x46444240, 0)
_TEMPS = ("t", "m", "sel", "lo", "hi", "u", "sg", "q0", "q1", "q2", "q3")
# the unit block: the group's three words, its 16 activation pairs (word j, pair q: xjq),
# the table
_UNIT_INPUTS = ("A", "B", "C") + tuple(f"x{j}{q}" for j in range(4) for q in range(4)) + ("L0", "L1", "H0", "H1")
# products summed in fp16 per this many words (8 per half) before one conversion to fp32
UNIT_FP16_WORDS = 2


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


def _render_dot(prologue: str, body: str, inputs: Sequence[str], words: Sequence[str],
                per_sum: int = UNIT_FP16_WORDS) -> str:
    """A dot block for tl.inline_asm_elementwise: $0 = fp32 dot of the weights (unscaled) of
    the code ``words`` (each decoded by ``body`` with ``w`` renamed to it, after
    ``prologue``) with their activations (inputs ``x{j}{q}``: word j, pair q), $1.. =
    ``inputs``. The products of ``per_sum`` words are summed in fp16 (a packed
    accumulator), then in fp32."""
    names = {name: f"${i + 1}" for i, name in enumerate(inputs)}
    out = ["{", ".reg .b32 " + ", ".join(_TEMPS) + ", d, acc;", ".reg .b16 h0, h1;", ".reg .f32 f0, f1, r;"]
    out += _renamed(prologue, names)
    for j, word in enumerate(words):
        out += _renamed(body, dict(names, w=names.get(word, word)))
        for q in range(4):
            x = names[f"x{j}{q}"]
            if q == 0 and j % per_sum == 0:
                out.append(f"mul.rn.f16x2 acc, q0, {x};")
            else:
                out.append(f"fma.rn.f16x2 acc, q{q}, {x}, acc;")
        if (j + 1) % per_sum == 0 or j == len(words) - 1:
            out += ["mov.b32 {h0, h1}, acc;", "cvt.f32.f16 f0, h0;", "cvt.f32.f16 f1, h1;"]
            if j < per_sum:
                out.append("add.f32 r, f0, f1;")
            else:
                out += ["add.f32 f0, f0, f1;", "add.f32 r, r, f0;"]
    out += ["mov.b32 $0, r;", "}"]
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


NF3_UNIT_DOT_ASM = _render_dot(_NF3_FOURTH, _NF3_BODY, _UNIT_INPUTS, ("A", "B", "C", "d"))
NF3_UNIT_DOT_CONSTRAINTS = "=r," + ",".join(["r"] * len(_UNIT_INPUTS))
# the NF3 group block with all four words' products summed in fp16 (16 a half) before one
# conversion to fp32 (tile option nf3x4, expert_gemv._nf3_group_dots): per group one
# register move, two conversions and two adds fewer, as e2m1x2 did for the kept tier (a
# default since session 29: its own share of the GEMV's gain 2-4 % on the H100). Its fp16 sums hold
# twice the products: with every level at ±1 they overflow once 16 same-half activations
# average above 65504 / 16 ≈ 4094 in magnitude, against ≈ 8190 with two-word runs.
NF3_UNIT4_DOT_ASM = _render_dot(_NF3_FOURTH, _NF3_BODY, _UNIT_INPUTS, ("A", "B", "C", "d"), per_sum=4)
# the grouped (tensor-core) path's NF3 tile: the values, scaled and fed to tl.dot there
NF3_VALUES_ASM = _render_values(_NF3_BODY, ("w", "L0", "L1", "H0", "H1"))
NF3_VALUES_CONSTRAINTS = ",".join(["=h"] * 8 + ["r"] * 5)
# the grouped path's NVFP4 tile (tile option ``ptx4``): one e2m1 word's eight values
E2M1_VALUES_ASM = _render_values(_E2M1_BODY, ("w", "ta", "tb", "z"))
E2M1_VALUES_CONSTRAINTS = ",".join(["=h"] * 8 + ["r"] * 4)
# the decode GEMV's e2m1 block, one word
E2M1_DOT_ASM = _render_dot("", _E2M1_BODY, _E2M1_INPUTS, ("w",))
E2M1_DOT_CONSTRAINTS = "=r," + ",".join(["r"] * len(_E2M1_INPUTS))
# the decode GEMV's e2m1 block over two words, one NVFP4 scale group (tile option e2m1x2):
# their 16 products summed in fp16 (eight a half, as the NF3 group block sums two words), then
# one conversion to fp32 and one add instead of two of each. Session 8 tried it when the
# gate/up GEMV was at 128 registers: 542 → 507 SASS instructions in the down GEMV's e2m1 loop,
# 132 registers in gate/up, not timed. Session 27: the GEMVs now run at 96 registers
# (kconst, clamp), so it was built again (expert_gemv._rows_dot).
_E2M1_PAIR_INPUTS = ("w0", "w1") + tuple(f"x{j}{q}" for j in range(2) for q in range(4)) + ("ta", "tb", "z")
E2M1_PAIR_DOT_ASM = _render_dot("", _E2M1_BODY, _E2M1_PAIR_INPUTS, ("w0", "w1"))
E2M1_PAIR_DOT_CONSTRAINTS = "=r," + ",".join(["r"] * len(_E2M1_PAIR_INPUTS))


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


def _run(body: str, regs: Dict[str, int]) -> None:
    """Executes the instruction list on ``regs`` (name → 32-bit value), in place."""
    def val(tok: str) -> int:
        return regs[tok] if tok in regs else int(tok, 0) & MASK32

    for line in _lines(body):
        op, rest = line.split(" ", 1)
        d, *src = [a.strip() for a in rest.rstrip(";").split(",")]
        regs[d] = _bit_op(op, [val(s) for s in src])


def _bit_op(op: str, v: Sequence[int]) -> int:
    """The 32-bit result of one of the blocks' integer instructions on operand values v."""
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
    return r & MASK32


def _halves(regs: Dict[str, int]) -> List[int]:
    halves = []
    for i in range(4):
        q = regs[f"q{i}"]
        halves += [q & 0xFFFF, q >> 16]
    return halves


def emulate(kind: str, word: int, tables: Sequence[int] = ()) -> List[int]:
    """The eight fp16 bit patterns the PTX block computes for one word (``kind`` 'nf3': a
    nibble-layout word, or 'e2m1'; ``tables`` = nf3_table_words(...) for NF3)."""
    regs: Dict[str, int] = {"w": word & MASK32}
    if kind == "nf3":
        regs.update(zip(("L0", "L1", "H0", "H1"), (t & MASK32 for t in tables)))
        _run(_NF3_BODY, regs)
    else:
        regs.update(zip(("ta", "tb", "z"), E2M1_TABLE_WORDS))
        _run(_E2M1_BODY, regs)
    return _halves(regs)


def emulate_nf3_group(words: Sequence[int], tables: Sequence[int]) -> List[int]:
    """The 32 fp16 bit patterns the unit block decodes from one group's three nibble-layout
    words (A, B, C), in code order."""
    regs: Dict[str, int] = dict(zip(("A", "B", "C"), (w & MASK32 for w in words)))
    regs.update(zip(("L0", "L1", "H0", "H1"), (t & MASK32 for t in tables)))
    _run(_NF3_FOURTH, regs)
    out: List[int] = []
    for name in ("A", "B", "C", "d"):
        regs["w"] = regs[name]
        _run(_NF3_BODY, regs)
        out += _halves(regs)
    return out


def _fp16_exact(bits: int) -> Fraction:
    v = struct.unpack("<e", struct.pack("<H", bits & 0xFFFF))[0]
    if v != v or v in (float("inf"), float("-inf")):
        raise ValueError(f"emulate: fp16 operand {bits:#06x} is not finite")
    return Fraction(v)


def _fp16_round(q: Fraction) -> int:
    """The fp16 bits of ``q`` rounded to nearest even (overflow to infinity, subnormals
    kept): what a ``.rn`` f16 instruction writes for an exact result ``q``."""
    if q == 0:
        return 0
    sign, a = (0x8000, -q) if q < 0 else (0, q)
    e = a.numerator.bit_length() - a.denominator.bit_length()
    if Fraction(2) ** e > a:
        e -= 1
    ulp = Fraction(2) ** (max(e, -14) - 10)
    n = a / ulp
    whole, rest = divmod(n.numerator, n.denominator)
    if 2 * rest > n.denominator or (2 * rest == n.denominator and whole % 2):
        whole += 1
    v = whole * ulp
    if v > 65504:
        return sign | 0x7C00
    return sign | _fp16_bits(float(v))


def _f16x2(op: str, *words: int) -> int:
    """mul.rn.f16x2 (two operands) or fma.rn.f16x2 (three) on packed halves, each half
    rounded once from its exact result."""
    out = 0
    for h in (0, 16):
        v = [_fp16_exact(w >> h) for w in words]
        exact = v[0] * v[1] + (v[2] if op == "fma" else 0)
        out |= _fp16_round(exact) << h
    return out


def emulate_dot(asm: str, args: Sequence[int]) -> float:
    """Runs a rendered dot block (``*_DOT_ASM``: $0 the fp32 result, $1.. = ``args``, the
    32-bit inputs in the block's order) instruction by instruction, and returns $0: the
    bit logic as in ``emulate``, each packed fp16 multiply or multiply-add rounded once, as
    the ``.rn`` instructions are, and the fp32 conversions and adds in float32. So that the
    CPU suite checks which activations each decoded value meets and in what order the block
    sums them, not only the decoding."""
    regs: Dict[str, object] = {}

    def val(tok: str):
        if tok.startswith("$"):
            return args[int(tok[1:]) - 1] & MASK32
        return regs[tok] if tok in regs else int(tok, 0) & MASK32

    result = None
    for line in (ln.strip() for ln in asm.splitlines()):
        if line in ("{", "}") or line.startswith(".reg"):
            continue
        op, rest = line.split(" ", 1)
        d, *src = re.findall(r"\{[^}]*\}|[^,\s]+", rest.rstrip(";"))
        if op == "mov.b32" and d.startswith("{"):
            lo, hi = (n.strip() for n in d.strip("{}").split(","))
            w = val(src[0])
            regs[lo], regs[hi] = w & 0xFFFF, w >> 16
        elif op == "mov.b32" and d == "$0":
            result = regs[src[0]]
        elif op in ("mul.rn.f16x2", "fma.rn.f16x2"):
            regs[d] = _f16x2(op[:3], *(val(s) for s in src))
        elif op == "cvt.f32.f16":
            regs[d] = np.float32(_fp16_exact(regs[src[0]]))
        elif op == "add.f32":
            regs[d] = np.float32(regs[src[0]]) + np.float32(regs[src[1]])
        else:
            regs[d] = _bit_op(op, [val(s) for s in src])
    if result is None:
        raise ValueError("emulate_dot: the block never writes $0")
    return float(result)


def _render_scaled_values(body: str, tables: Sequence[str]) -> str:
    """The mma kernels' block (kernels/mma_gluon.py): one code word ($8) → its eight fp16
    values times the fp16x2 scale $9, as $0..$7 (pack=1); $10.. = ``tables``.

    Session 21, tried and dropped: NF3 groups share one scale, so each group's table was
    scaled once (four fp16x2 multiplies and four byte permutes, the same fp16 products)
    instead of each value (16 multiplies a group) — compile_probe (Triton 3.6, SM90, tiled
    NF3): small-class gate/up loop 380 → 355 SASS instructions, down 208 → 201, wgmma 32 +
    16 slots 486 → 470 / 278 → 247 and 168 → 153 registers; 246 GPU tests passed. Yet on
    the H200, two alternating runs each (bench_moe_h200_s21_{base,new}{1,2}.json.gz), the
    hybrid layer was 3-4 % slower at 32 / 64 tokens (I=512: 324.7 → 335.5, 426.7 → 443.1
    µs) and at 16 / 32 at I=2048 (724.9 → 747.4, 1145.9 → 1175.7), and within ±1 % at 512
    to 4096 tokens but one 2048-token run: these kernels wait on latency — the scale now
    sits in a longer chain before the first decode — not on instruction issue."""
    names = {"w": "$8", **{name: f"${10 + i}" for i, name in enumerate(tables)}}
    out = ["{", ".reg .b32 " + ", ".join(_TEMPS) + ";"]
    out += _renamed(body, names)
    for i in range(4):
        out.append(f"mul.rn.f16x2 q{i}, q{i}, $9;")
        out.append(f"mov.b32 {{${2 * i}, ${2 * i + 1}}}, q{i};")
    out.append("}")
    return "\n".join(out)


NF3_SCALED_ASM = _render_scaled_values(_NF3_BODY, ("L0", "L1", "H0", "H1"))
NF3_SCALED_CONSTRAINTS = ",".join(["=h"] * 8 + ["r"] * 6)
E2M1_SCALED_ASM = _render_scaled_values(_E2M1_BODY, ("ta", "tb", "z"))
E2M1_SCALED_CONSTRAINTS = ",".join(["=h"] * 8 + ["r"] * 5)
