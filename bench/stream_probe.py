"""How fast can the small class's NF3 gate/up *access pattern* stream from HBM, with no
decoding and no MMA? A read-only Triton kernel that walks the same bytes the same way as
mma13_kernel on the tiled NF3 layout (formats/nf3_tiled.py): one program per (expert hit,
tile of BN gate rows and their BN up rows), each of its W warps one 16-row block of the
gate rows and the same block of the up rows, every K step three 256-byte word runs and a
64-byte scale run of each — then an optional integer busy-loop per loaded word (``work``)
to stand in for the decode's instruction count, the real decode itself (``decode``: the
decode GEMV's NF3 byte-permute block on each lane's gate and up groups), and a switch to a
persistent grid.

Why: session 23 found the small class limited by none of the warps in flight, the
B-operand barrier or the instruction count (docs/measurements.md); the layer reads at
~44 % of the copy bandwidth. If this pattern alone streams near the copy bandwidth, the
loss is in how the kernel's compute and loads interleave; if it does not, the grid or the
access pattern caps it and no change to the decode can help.

Each probe reads exactly the bytes it names (its checksum over the words it read is
checked against torch on the first run), so its GB/s is bytes / median graph-replay time.

Usage (any CUDA GPU, no vLLM): PYTHONPATH=overlay python3 bench/stream_probe.py OUT.json
[--inter 512] [--tokens 16]; on the CPU ``TRITON_INTERPRET=1 ... --check`` runs the
checksums on a small shape only (no decode or barriers there: no inline assembly under the
interpreter); ``--sass 90 [--only NAME]`` compiles the probes without a GPU and prints
their K loops' SASS counts as JSON.
"""
from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import torch
import triton
import triton.language as tl

from nf3_hybrid.formats import nf3
from nf3_hybrid.kernels import ptx_decode

WORDS = tl.constexpr(3)  # 32-bit code words a lane holds per NF3 group (the nibble layout's)
RUN = tl.constexpr(64)  # words of one 256-byte run: 32 lanes × two rows
SCALE_RUN = tl.constexpr(16)  # words of one tile's 64 scale bytes
_UNIT_ASM = tl.constexpr(ptx_decode.NF3_UNIT_DOT_ASM)
_UNIT_CONS = tl.constexpr(ptx_decode.NF3_UNIT_DOT_CONSTRAINTS)
# the decode stand-in's codebook table (the default NF3 levels) and activation pair (1.0, 1.0
# in fp16, passed at run time so that ptxas cannot fold the multiplies)
TABLE = ptx_decode.nf3_table_words(nf3.CODEBOOK)
XPAIR = 0x3C003C00


@triton.jit
def _stream_kernel(w_ptr, s_ptr, exp_ptr, out_ptr, stride_we, stride_se, up_words, up_scales, steps, items,
                   t0, t1, t2, t3, xpair, live,
                   PER_EXPERT: tl.constexpr, W: tl.constexpr, WORK: tl.constexpr, AHEAD: tl.constexpr,
                   PERSIST: tl.constexpr, PAD: tl.constexpr, BAR: tl.constexpr = 0, DECODE: tl.constexpr = 0):
    """Item i = (expert slot i // PER_EXPERT, row tile i % PER_EXPERT); warp w of it reads
    16-row block (tile·W + w) of the gate rows and of the up rows: per K step WORDS runs of
    RUN words and one run of SCALE_RUN scale words, contiguous over the steps (the tiled
    layout). XORs (after WORK multiply-adds each, v = v² + c) what it read into out[item, w, :].
    ``PAD`` > 0 (a power of 2) keeps PAD more copies of each step's value live across the
    loop (copy j: pad = 3·pad + (v ^ j), summed over the copies at the end): 2·PAD registers a lane, to hold the probe
    at the real kernel's register count and so its occupancy. ``BAR``: CTA barriers a K
    step, as the real kernel's shared-memory staging of the activations has. ``DECODE``:
    each lane's gate group (its words of the three runs) and up group go through the decode
    GEMV's NF3 unit block (ptx_decode: the fourth word gathered, four words decoded by byte
    permutes — the same ~1.5 ALU-pipe instructions a weight as the real kernels — and 16
    packed multiply-adds with the activation pair ``xpair``), summed in fp32; the sum is
    and-ed with ``live`` (0 at run time) into the checksum, so the work is kept and the
    checksum stays the words'."""
    rows = tl.arange(0, W)[:, None]
    cols = tl.arange(0, RUN)[None, :]
    scols = tl.arange(0, SCALE_RUN)[None, :]
    first = tl.program_id(0)
    stride = tl.num_programs(0) if PERSIST else items
    for item in range(first, items, stride):
        e = tl.load(exp_ptr + item // PER_EXPERT).to(tl.int64)
        block = (item % PER_EXPERT) * W + rows
        wp = w_ptr + e * stride_we + block * (steps * WORDS * RUN) + cols
        sp = s_ptr + e * stride_se + block * (steps * SCALE_RUN) + scols
        acc = tl.zeros([W, RUN], tl.int32)
        sacc = tl.zeros([W, SCALE_RUN], tl.int32)
        if DECODE:
            dec = tl.zeros([W, RUN], tl.float32)
            xp = tl.zeros([W, RUN], tl.int32) + xpair
        if PAD:
            pad = tl.zeros([W, PAD, RUN], tl.int32)
            copy = tl.arange(0, PAD)[None, :, None]
        if AHEAD:
            g0 = tl.load(wp)
            g1 = tl.load(wp + RUN)
            g2 = tl.load(wp + 2 * RUN)
            u0 = tl.load(wp + up_words)
            u1 = tl.load(wp + up_words + RUN)
            u2 = tl.load(wp + up_words + 2 * RUN)
            gs = tl.load(sp)
            us = tl.load(sp + up_scales)
        for k in range(0, steps):
            if AHEAD:
                nk = tl.minimum(k + 1, steps - 1)
                o = nk * (WORDS * RUN)
                so = nk * SCALE_RUN
                n0 = tl.load(wp + o)
                n1 = tl.load(wp + o + RUN)
                n2 = tl.load(wp + o + 2 * RUN)
                m0 = tl.load(wp + up_words + o)
                m1 = tl.load(wp + up_words + o + RUN)
                m2 = tl.load(wp + up_words + o + 2 * RUN)
                ns = tl.load(sp + so)
                ms = tl.load(sp + up_scales + so)
            else:
                o = k * (WORDS * RUN)
                so = k * SCALE_RUN
                g0 = tl.load(wp + o)
                g1 = tl.load(wp + o + RUN)
                g2 = tl.load(wp + o + 2 * RUN)
                u0 = tl.load(wp + up_words + o)
                u1 = tl.load(wp + up_words + o + RUN)
                u2 = tl.load(wp + up_words + o + 2 * RUN)
                gs = tl.load(sp + so)
                us = tl.load(sp + up_scales + so)
            v = g0 ^ g1 ^ g2 ^ u0 ^ u1 ^ u2
            if DECODE:
                dec += tl.inline_asm_elementwise(_UNIT_ASM, _UNIT_CONS, [g0, g1, g2] + [xp] * 16 + [t0, t1, t2, t3],
                                                 dtype=tl.float32, is_pure=True, pack=1)
                dec += tl.inline_asm_elementwise(_UNIT_ASM, _UNIT_CONS, [u0, u1, u2] + [xp] * 16 + [t0, t1, t2, t3],
                                                 dtype=tl.float32, is_pure=True, pack=1)
            for _ in tl.static_range(BAR):  # (tl.debug_barrier() here was compiled away)
                k = tl.inline_asm_elementwise("bar.sync 0;\nmov.b32 $0, $1;", "=r,r", [k], dtype=tl.int32,
                                              is_pure=False, pack=1)
            for _ in tl.static_range(WORK):
                v = v * v + 1013904223  # quadratic: a chain the compiler cannot fold
            acc ^= v
            if PAD:
                pad = pad * 3 + (v[:, None, :] ^ copy)  # distinct copies: none can be merged
            sacc ^= gs ^ us
            if AHEAD:
                g0, g1, g2, u0, u1, u2, gs, us = n0, n1, n2, m0, m1, m2, ns, ms
        if PAD:
            acc ^= tl.sum(pad, axis=1)
        if DECODE:
            acc ^= dec.to(tl.int32, bitcast=True) & live
        out = out_ptr + item * (W * (RUN + SCALE_RUN)) + rows * (RUN + SCALE_RUN)
        tl.store(out + cols, acc)
        tl.store(out + RUN + scols, sacc)


def _wrap(v: torch.Tensor) -> torch.Tensor:
    """int64 → int32 with two's-complement wrap-around, as the kernel's int32 arithmetic."""
    v = v & 0xFFFFFFFF
    return torch.where(v >= 2 ** 31, v - 2 ** 32, v).to(torch.int32)


def _lcg(v: torch.Tensor, work: int) -> torch.Tensor:
    for _ in range(work):
        v = v.to(torch.int64)
        v = _wrap(v * v + 1013904223)
    return v


class Tier:
    """A tier's gate/up words and scales in tiled order: [experts, 2 (gate, up), blocks, steps, ...]."""

    def __init__(self, experts: int, inter: int, hidden: int, device):
        if inter % 16 or hidden % 128:
            raise ValueError(f"inter {inter} must be whole 16-row blocks and hidden {hidden} whole 128-wide windows")
        self.blocks, self.steps = inter // 16, hidden // 128
        g = torch.Generator(device=device).manual_seed(0)
        self.w = torch.randint(-2 ** 31, 2 ** 31 - 1, (experts, 2, self.blocks, self.steps, WORDS * RUN),
                               generator=g, device=device, dtype=torch.int32)
        self.s = torch.randint(-2 ** 31, 2 ** 31 - 1, (experts, 2, self.blocks, self.steps, SCALE_RUN),
                               generator=g, device=device, dtype=torch.int32)

    def bytes_per_expert(self) -> int:
        return (self.w[0].numel() + self.s[0].numel()) * 4


def launch(tier: Tier, experts: torch.Tensor, out: torch.Tensor, bn: int, warps: int, work: int, ahead: bool,
           persist: int, pad: int = 0, bar: int = 0, decode: int = 0):
    if bn != 16 * warps or tier.blocks % warps:
        raise ValueError(f"BN {bn} must be 16 rows a warp ({warps} warps) and divide the {tier.blocks} blocks")
    per_expert = tier.blocks // warps
    items = experts.numel() * per_expert
    grid = (min(persist, items) if persist else items,)
    return _stream_kernel[grid](tier.w, tier.s, experts, out, tier.w.stride(0), tier.s.stride(0), tier.w.stride(1),
                         tier.s.stride(1), tier.steps, items, *TABLE, XPAIR, 0, PER_EXPERT=per_expert, W=warps,
                         WORK=work, AHEAD=ahead, PERSIST=bool(persist), PAD=pad, BAR=bar, DECODE=decode,
                         num_warps=warps)


def expected(tier: Tier, experts: torch.Tensor, warps: int, work: int, pad: int = 0) -> torch.Tensor:
    """out[item, w] as torch computes it from the same words."""
    w = tier.w[experts.long()]  # [n, 2, blocks, steps, 3·RUN]
    w = w.view(*w.shape[:4], WORDS, RUN)
    v = w[:, 0, ..., 0, :] ^ w[:, 0, ..., 1, :] ^ w[:, 0, ..., 2, :] ^ w[:, 1, ..., 0, :] ^ w[:, 1, ..., 1, :] \
        ^ w[:, 1, ..., 2, :]
    v = _lcg(v, work)
    acc = v[:, :, 0]
    for k in range(1, v.shape[2]):
        acc = acc ^ v[:, :, k]
    if pad:
        p = torch.zeros((*acc.shape, pad), dtype=torch.int64, device=acc.device)
        j = torch.arange(pad, device=acc.device)
        for k in range(v.shape[2]):
            p = _wrap(p * 3 + (v[:, :, k, :, None].to(torch.int64) ^ j)).to(torch.int64)
        acc = acc ^ _wrap(p.sum(-1))
    s = tier.s[experts.long()]
    sacc = s[:, 0, :, 0] ^ s[:, 1, :, 0]
    for k in range(1, s.shape[3]):
        sacc = sacc ^ s[:, 0, :, k] ^ s[:, 1, :, k]
    both = torch.cat([acc, sacc], dim=-1)  # [n, blocks, RUN + SCALE_RUN]
    return both.reshape(-1, warps, RUN + SCALE_RUN)


def hit_experts(tokens: int, experts: int, kept: int, topk: int, seed: int, device) -> torch.Tensor:
    """The NF3 tier's local ids hit by random top-k routing of ``tokens`` (bench's routing)."""
    g = torch.Generator(device=device).manual_seed(seed)
    ids = torch.rand(tokens, experts, generator=g, device=device).topk(topk, dim=1).indices
    hit = torch.unique(ids)
    return (hit[hit >= kept] - kept).to(torch.int32)


# the real NF3 gate/up kernel (tiled, small tiles, Triton 3.6): 380 SASS instructions a K
# step and 96 registers (bench/compile_probe.py --mma --cfg BM=16,split=2,tiled=1); a
# WORK iteration is two multiply-adds a lane, a PAD copy four instructions and two registers
PROBES = [
    # name, BN, warps, work, ahead, persistent programs (0: one program per item)[, pad[, barriers[, decode]]]
    ("mirror", 64, 4, 0, True, 0),
    ("mirror_work16", 64, 4, 16, True, 0),
    ("mirror_work32", 64, 4, 32, True, 0),
    ("mirror_noahead", 64, 4, 0, False, 0),
    ("mirror_noahead_work32", 64, 4, 32, False, 0),
    ("bn32_w2", 32, 2, 0, True, 0),
    ("bn32_w2_work32", 32, 2, 32, True, 0),
    ("bn128_w8", 128, 8, 0, True, 0),
    ("persist_4x132", 64, 4, 0, True, 4 * 132),
    ("persist_4x132_work32", 64, 4, 32, True, 4 * 132),
    ("work190", 64, 4, 190, True, 0),
    ("work190_noahead", 64, 4, 190, False, 0),
    ("pad16_work158", 64, 4, 158, True, 0, 16),
    ("pad32_work126", 64, 4, 126, True, 0, 32),
    ("pad32_work126_noahead", 64, 4, 126, False, 0, 32),
    ("bn128_w8_pad32_work126", 128, 8, 126, True, 0, 32),
    ("bn32_w2_pad32_work126", 32, 2, 126, True, 0, 32),
    # about the real kernel's instructions a step and registers
    ("pad16_work60", 64, 4, 60, True, 0, 16),
    ("pad16_work60_noahead", 64, 4, 60, False, 0, 16),
    ("pad32_work0", 64, 4, 0, True, 0, 32),
    ("pad32_work0_noahead", 64, 4, 0, False, 0, 32),
    # and the CTA barriers of its activation staging (two a step in its SASS)
    ("pad16_work60_bar1", 64, 4, 60, True, 0, 16, 1),
    ("pad16_work60_bar2", 64, 4, 60, True, 0, 16, 2),
    ("pad32_work0_bar2", 64, 4, 0, True, 0, 32, 2),
    ("pad32_work0_noahead_bar2", 64, 4, 0, False, 0, 32, 2),
    # the real decode's ALU-pipe instructions (session 25): is the byte-permute decode what
    # holds the real kernel at ~55 % of this pattern's speed?
    ("decode", 64, 4, 0, True, 0, 0, 0, 1),
    ("decode_noahead", 64, 4, 0, False, 0, 0, 0, 1),
    ("decode_bar2", 64, 4, 0, True, 0, 0, 2, 1),
    ("decode_pad16", 64, 4, 0, True, 0, 16, 0, 1),
    ("decode_pad16_bar2", 64, 4, 0, True, 0, 16, 2, 1),
    ("bn32_w2_decode", 32, 2, 0, True, 0, 0, 0, 1),
    ("bn128_w8_decode", 128, 8, 0, True, 0, 0, 0, 1),
]


def _probe(row):
    """(name, BN, warps, work, ahead, persistent programs, pad, barriers, decode) of a PROBES row."""
    name, bn, warps, work, ahead, persist, *rest = row
    rest = list(rest) + [0] * (3 - len(rest))
    return (name, bn, warps, work, ahead, persist, *rest)


def check(device, tiers: int, inter: int, hidden: int, tokens: int):
    """Every probe's checksum equals torch's on one routing (a probe that skipped or repeated
    a word would not)."""
    tier = Tier(tiers, inter, hidden, device)
    hit = hit_experts(tokens, tiers + 4, 4, 2, 0, device)
    gpu = str(device) != "cpu"  # (no inline assembly, so no barrier and no decode, under the CPU interpreter)
    for name, bn, warps, work, ahead, persist, pad, bar, decode in map(_probe, PROBES):
        if tier.blocks % warps:
            continue
        out = torch.full((hit.numel() * tier.blocks // warps, warps, RUN + SCALE_RUN), -1, dtype=torch.int32,
                         device=device)
        launch(tier, hit, out, bn, warps, min(work, 2), ahead, min(persist, 3), min(pad, 2), bar if gpu else 0,
               decode if gpu else 0)
        ref = expected(tier, hit, warps, min(work, 2), min(pad, 2))
        if not torch.equal(out, ref):
            raise AssertionError(f"probe {name}: checksum differs from torch's on {int((out != ref).sum())} words")
    return True


def real_layer(inter: int, tokens: int):
    """The hybrid layer at this size on the grouped path, tiers one after the other (kept,
    then NF3; bench's random tiers and routing), warmed up: (run, restore), ``run()`` one
    forward pass, ``restore()`` puts the concurrent tiers back."""
    from nf3_hybrid import bench
    from nf3_hybrid.backends import triton_tiers
    from nf3_hybrid.backends.executor import LayerExecutor
    from nf3_hybrid.backends.triton_tiers import TritonTier, Workspace

    g = bench.GLM52
    h, e, kn, topk = g["hidden"], g["experts"], g["kept"], g["topk"]
    bench.set_gemv_tokens(0)
    triton_tiers.CONCURRENT_TIERS = False
    ws = Workspace(torch.device("cuda"))
    ws.reserve(64, topk, h, inter, e)
    ex = LayerExecutor({0: TritonTier(bench.random_tier("nvfp4", kn, h, inter, [i if i < kn else -1 for i in range(e)],
                                                        1), ws),
                        1: TritonTier(bench.random_tier("nf3", e - kn, h, inter,
                                                        [i - kn if i >= kn else -1 for i in range(e)], 2), ws)}, h)
    w, ids = bench.random_routing(tokens, e, topk, tokens)
    x = (torch.randn(tokens, h, device="cuda") * 0.5).to(torch.bfloat16)

    def restore():
        triton_tiers.CONCURRENT_TIERS = True

    return (lambda: ex.forward(x, w, ids)), restore


def real_kernels(inter: int, tokens: int) -> list:
    """The real layer's kernels (real_layer) as (name, µs) in launch order from
    torch.profiler: the NF3 tier's mma13_kernel is the second one."""
    from torch.profiler import ProfilerActivity, profile

    run, restore = real_layer(inter, tokens)
    for _ in range(3):
        run()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        run()
        torch.cuda.synchronize()
    kernels = sorted((ev for ev in prof.events() if ev.device_type.name == "CUDA"), key=lambda ev: ev.time_range.start)
    restore()
    return [(ev.name[:40], round(ev.time_range.elapsed_us(), 2)) for ev in kernels]


def sass_counts(arch: int = 90, only=None) -> dict:
    """Each probe compiled for ``arch`` without a GPU (compile_probe's way): registers and
    the K loop's SASS instructions, to set WORK and PAD against the real kernel's."""
    import compile_probe
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    kern = _stream_kernel
    out = {}
    for name, bn, warps, work, ahead, persist, pad, bar, decode in map(_probe, PROBES):
        if only and name not in only:
            continue
        consts = dict(PER_EXPERT=8, W=warps, WORK=work, AHEAD=ahead, PERSIST=bool(persist), PAD=pad, BAR=bar,
                      DECODE=decode)
        sig = {n: ("constexpr" if n in consts else "*i32" if n.endswith("_ptr") else "i32") for n in kern.arg_names}
        attrs = {(i,): [["tt.divisibility", 16]] for i, n in enumerate(kern.arg_names) if sig[n] != "constexpr"}
        src = ASTSource(kern, sig, constexprs={(kern.arg_names.index(k),): v for k, v in consts.items()},
                        attrs=attrs)
        ck = triton.compile(src, target=GPUTarget("cuda", arch, 32), options=dict(num_warps=warps))
        with tempfile.TemporaryDirectory() as d:
            cubin = Path(d, "k.cubin")
            cubin.write_bytes(ck.asm["cubin"])
            nvdisasm = Path(triton.__file__).parent / "backends/nvidia/bin/nvdisasm"
            sass = subprocess.run([str(nvdisasm), "-c", str(cubin)], capture_output=True, text=True,
                                  check=True).stdout
            cuobjdump = Path(triton.__file__).parent / "backends/nvidia/bin/cuobjdump"
            usage = subprocess.run([str(cuobjdump), "--dump-resource-usage", str(cubin)], capture_output=True,
                                   text=True, check=True).stdout
        body = max(compile_probe.loops(sass), key=lambda lp: lp["instructions"])
        out[name] = dict(loop_instructions=body["instructions"], top=body["top"][:5], ops=dict(body["top"]),
                         regs=int(re.search(r"REG:(\d+)", usage).group(1)))
        print(name, out[name], flush=True)
    return out


def main(argv=None) -> int:
    from nf3_hybrid import bench

    ap = argparse.ArgumentParser()
    ap.add_argument("out", nargs="?")
    ap.add_argument("--inter", type=int, action="append")
    ap.add_argument("--tokens", type=int, action="append")
    ap.add_argument("--only", action="append", help="run only the probes named")
    ap.add_argument("--no-real", action="store_true", help="skip the real kernels' profile")
    ap.add_argument("--check", action="store_true", help="checksums on a small shape only (CPU interpreter)")
    ap.add_argument("--sass", type=int, metavar="ARCH", help="compile the probes for ARCH (no GPU needed) and "
                    "print their K loops' SASS instruction counts")
    a = ap.parse_args(argv)
    if a.sass:
        print(json.dumps(sass_counts(a.sass, a.only)))
        return 0
    if a.check:
        dev = "cuda" if torch.cuda.is_available() else "cpu"
        print("checksums", check(dev, 6, 64, 256, 3))
        return 0
    dev = torch.device("cuda")
    check(dev, 6, 64, 256, 3)
    g = bench.GLM52
    nf3 = g["experts"] - g["kept"]
    copy = bench.copy_bandwidths()
    bw = max(copy.values())
    res = dict(device=torch.cuda.get_device_name(), copy_gbs=bw, copy_gbs_by_method=copy, runs=[],
               command="PYTHONPATH=overlay python3 bench/stream_probe.py " + " ".join(sys.argv[1:]))
    for inter in a.inter or [512, 2048]:
        tier = Tier(nf3, inter, g["hidden"], dev)
        for tokens in a.tokens or [16]:
            hit = hit_experts(tokens, g["experts"], g["kept"], g["topk"], tokens, dev)
            if not a.no_real:
                real = real_kernels(inter, tokens)
                res.setdefault("real_kernels", {})[f"i{inter}_m{tokens}"] = real
                print(f"I={inter} m={tokens} real kernels (serial tiers): {real}", flush=True)
            nbytes = hit.numel() * tier.bytes_per_expert()
            for name, bn, warps, work, ahead, persist, pad, bar, decode in map(_probe, PROBES):
                if a.only and name not in a.only:
                    continue
                out = torch.empty((hit.numel() * tier.blocks // warps, warps, RUN + SCALE_RUN), dtype=torch.int32,
                                  device=dev)
                args = (tier, hit, out, bn, warps, work, ahead, persist, pad, bar, decode)
                kernel = launch(*args)
                us = bench.time_graph(lambda: launch(*args), iters=50)
                row = dict(inter=inter, tokens=tokens, experts_hit=hit.numel(), probe=name, bn=bn, warps=warps,
                           work=work, ahead=ahead, persist=persist, pad=pad, barriers=bar, decode=decode,
                           regs=kernel.n_regs,
                           spills=kernel.n_spills, us=round(us, 2), bytes=nbytes,
                           gbs=round(nbytes / us / 1e3, 1), frac_copy_bw=round(nbytes / us / 1e3 / bw, 3))
                res["runs"].append(row)
                print(f"I={inter} m={tokens} {name:24s} {kernel.n_regs:4d} regs {us:8.1f} us {row['gbs']:7.0f} GB/s "
                      f"({100 * row['frac_copy_bw']:.0f}%)", flush=True)
        del tier
        torch.cuda.empty_cache()
    if a.out:
        json.dump(res, open(a.out, "w"), indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
