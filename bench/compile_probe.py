"""Compile the decode GEMV kernels, or the grouped (prefill) NF3 kernels, for a GPU target
on any machine (Triton ships ptxas and nvdisasm) and report what matters for tuning
without a GPU: layout conversions in the TTGIR, registers, spills, shared memory, SASS
instruction counts by kind, and for each loop (a backward branch) its instructions by kind.
Usage: python3 bench/compile_probe.py [--arch 90] [--cfg BN13=4,BK13=512,...] [--dump DIR]
       python3 bench/compile_probe.py --grouped [--cfg BM=64,BN13=64,BK13=64,BN2=128,BK2=64,warps=4,stages=3,ptx=1]
       (add fmt=1 for an NVFP4 tier's kernels, with magic=1 or 2, or ptx4=1)
       python3 bench/compile_probe.py --mma [--cfg BM=64,fmt=1] (the Gluon mma kernels of
       kernels/mma_gluon.py, as mma_tiles launches them, ahead=2 their mma_ahead, xahead=1 mma_xahead,
       xreg=1 mma_xreg, splitk=2 mma_splitk,
       tabvec=1 mma_tabvec, dahead=1 mma_dahead; wgmma=1,BM=128 the
       wgmma kernels)
       (tiled=1 anywhere: an NF3 tier in tiled layout, formats/nf3_tiled.py; kconst=1 the
       decode GEMVs with their K a constant, inter=I the down GEMV's; clamp=1 / e2m1x2=1 /
       nf3x4=1 their tile options clamp / e2m1x2 / nf3x4)
       python3 bench/compile_probe.py --serve (probes asked for on stdin, a line each: serve())
Another Triton than the venv's (the H200 host has 3.6, the pinned stack 3.8; their code
differs): pip download triton==3.6.0 --no-deps, unzip the wheel into DIR, then
PYTHONPATH=DIR:overlay python3 bench/compile_probe.py ...
Sizes and strides are assumed divisible by 16 as the launcher specialises them for
GLM-5.2's shapes (without that, loads compile scalar and the counts describe code that
never runs)."""
import argparse
import collections
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

import triton.language as tl

from nf3_hybrid.formats import nf3
from nf3_hybrid.kernels import expert_gemv, expert_mlp, ptx_decode

COMMON = dict(A_FMT=1, A_GROUP=16, HAS_A=True, HAS_B=True, A_HAS_S2=True, WEIGHT_ON_INPUT=False, ASM=True)
TIER = ("map", "w", "s", "s2", "swe", "swn", "sse", "ssn", "vtab", "stab")
TYPES = {"map": "*i32", "w": "*i32", "s": "*u8", "s2": "*fp32", "vtab": "*fp16", "stab": "*fp16"}


def signature(kernel, consts, x_type="*bf16", w_type="*i32"):
    sig = {}
    for name in kernel.arg_names:
        if name in consts:
            sig[name] = "constexpr"
            continue
        tail = name.split("_", 1)[-1]
        if name.endswith("_ptr"):
            sig[name] = {"xa_ptr": "*i32", "xb_ptr": "*i32",
                         "h_ptr": "*i32" if kernel.__name__ == "_gemv2_kernel" else "*fp16", "ids_ptr": "*i32", "tw_ptr": "*fp32",
                         "y_ptr": "*fp32", "x_ptr": x_type, "w_ptr": w_type, "s_ptr": "*u8", "s2_ptr": "*fp32",
                         "sorted_ptr": "*i32", "bexp_ptr": "*i32", "inter_ptr": "*fp16", "out_ptr": "*fp32", "part_ptr": "*fp32",
                         "val_tab_ptr": "*fp16", "scale_tab_ptr": "*fp16"}[name]
        elif name[:2] in ("a_", "b_") and tail in TYPES:
            sig[name] = TYPES[tail]
        else:
            sig[name] = "i32"
    return sig


def launch_attrs(kernel, sig):
    """What Triton's launcher assumes at a real launch with GLM-5.2's shapes: pointers
    16-byte aligned, integer arguments (sizes, strides) divisible by 16 unless the
    kernel opts out — without it loads along a row are not vectorised and the counts
    describe a kernel that never runs."""
    skip = {kernel.arg_names[a] if isinstance(a, int) else a for a in kernel.do_not_specialize}
    out = {}
    for i, name in enumerate(kernel.arg_names):
        kind = sig[name]
        if kind == "constexpr" or name in skip:
            continue
        if kind.startswith("*") or kind == "i32":
            out[(i,)] = [["tt.divisibility", 16]]
    return out


def loops(sass: str):
    """Instructions by kind inside each loop body: the span from a label to the backward
    branch that returns to it."""
    lines = sass.splitlines()
    labels = {m.group(1): i for i, l in enumerate(lines) if (m := re.match(r"^\.(L_x_\d+):", l))}
    out = []
    for i, l in enumerate(lines):
        m = re.search(r"\bBRA\b.*`\(\.(L_x_\d+)\)", l)
        if m and m.group(1) in labels and labels[m.group(1)] < i:
            body = "\n".join(lines[labels[m.group(1)]:i + 1])
            ops = collections.Counter(x.group(1).split(".")[0] for x in re.finditer(_OP, body, re.M))
            out.append(dict(instructions=sum(ops.values()), top=ops.most_common(10)))
    return out


_OP = r"^\s+/\*[0-9a-f]+\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)"


def probe(kernel, consts, arch, warps, dump=None, stages=None, x_type="*bf16", maxnreg=None, w_type="*i32",
          gluon=False):
    """``w_type``: the packed weights' pointer type (int32 words: NF3, or e2m1 decoded in
    registers; bytes otherwise); ``gluon``: a Gluon kernel."""
    sig = signature(kernel, consts, x_type, w_type)
    if consts.get("SPLITK", 1) > 1 and "x_ptr" in sig:
        sig["inter_ptr"] = "*fp32"  # the gate/up kernel's partial sums (mma_splitk)
    if gluon:
        from triton.experimental.gluon._runtime import GluonASTSource as source
    else:
        source = ASTSource
    src = source(kernel, sig, constexprs={(kernel.arg_names.index(k),): v for k, v in consts.items()},
                 attrs=launch_attrs(kernel, sig))
    opts = dict(num_warps=warps) if stages is None else dict(num_warps=warps, num_stages=stages)
    if maxnreg:
        opts["maxnreg"] = maxnreg
    ck = triton.compile(src, target=GPUTarget("cuda", arch, 32), options=opts)
    ttgir = ck.asm["ttgir"]
    with tempfile.TemporaryDirectory() as d:
        cubin = Path(d, "k.cubin")
        cubin.write_bytes(ck.asm["cubin"])
        nvdisasm = Path(triton.__file__).parent / "backends/nvidia/bin/nvdisasm"
        sass = subprocess.run([str(nvdisasm), "-c", str(cubin)], capture_output=True, text=True).stdout
        cuobjdump = Path(triton.__file__).parent / "backends/nvidia/bin/cuobjdump"
        res = subprocess.run([str(cuobjdump), "--dump-resource-usage", str(cubin)], capture_output=True,
                             text=True).stdout
    usage = dict(re.findall(r"(REG|STACK|SHARED|LOCAL):(\d+)", res))
    ops = collections.Counter(m.group(1).split(".")[0] for m in re.finditer(_OP, sass, re.M))
    if dump:
        Path(dump).mkdir(parents=True, exist_ok=True)
        for k in ("ttgir", "ptx"):
            Path(dump, f"{kernel.__name__}.{k}").write_text(ck.asm[k])
        Path(dump, f"{kernel.__name__}.sass").write_text(sass)
    return dict(convert_layout=ttgir.count("convert_layout"), local_alloc=ttgir.count("local_alloc"),
                regs=int(usage.get("REG", -1)), stack=int(usage.get("STACK", -1)), shared=ck.metadata.shared,
                sass_total=sum(ops.values()), top=ops.most_common(14), loops=loops(sass))


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--arch", type=int, default=90)
    ap.add_argument("--cfg", default=parser_default_cfg())
    ap.add_argument("--dump")
    ap.add_argument("--grouped", action="store_true", help="the grouped NF3 w13/w2 kernels instead")
    ap.add_argument("--mma", action="store_true", help="the Gluon mma kernels instead")
    a = ap.parse_args(argv)
    if a.grouped:
        return grouped(a)
    if a.mma:
        return mma(a)
    cfg = _cfg(a)
    c = dict(COMMON, PDL=bool(cfg.get("pdl", 1)), B_TILED=bool(cfg.get("tiled")), L2PF=bool(cfg.get("l2pf")),
             CLAMP=bool(cfg.get("clamp")), E2M1X2=bool(cfg.get("e2m1x2")), NF3X4=bool(cfg.get("nf3x4")))
    # kconst=1: both GEMVs' K as the launcher passes it under tile options kconst13 /
    # kconst2 (GLM-5.2's hidden size; the down GEMV's intermediate size inter=, default 512)
    kconst = bool(cfg.get("kconst"))
    for kernel, bn, bk, kc in ((expert_gemv._gemv13_kernel, cfg["BN13"], cfg["BK13"], 6144),
                               (expert_gemv._gemv2_kernel, cfg["BN2"], cfg["BK2"], cfg.get("inter", 512))):
        r = probe(kernel, dict(c, BN=bn, BK=bk, KC=kc if kconst else 0), a.arch, cfg["warps"], a.dump, maxnreg=cfg.get("maxnreg"))
        print(kernel.__name__, r)



def _cfg(a, defaults=None) -> dict:
    """``--cfg`` as ints; over ``defaults`` for the grouped and mma kernels (the option's
    own default is the decode GEMV's tiles)."""
    given = {k: int(v) for k, v in (kv.split("=") for kv in a.cfg.split(","))}
    if defaults is None:
        return given
    return dict(defaults, **({} if a.cfg == parser_default_cfg() else given))


def grouped(a):
    cfg = _cfg(a, dict(BM=64, BN13=64, BK13=64, BN2=128, BK2=64, warps=4, stages=3, ptx=1))
    fmt = cfg.get("fmt", expert_mlp.FMT_NF3)  # fmt=1: an NVFP4 tier (its tile option magic=1/2 applies)
    words = expert_mlp.ptx_words(fmt, cfg, ptx_decode.nf3_table_words(nf3.validate_codebook(None)), False)
    base = dict(FMT=fmt, HAS_S2=fmt != expert_mlp.FMT_NF3, WEIGHT_ON_INPUT=False, BM=cfg["BM"], DT=tl.float16,
                GROUP=expert_mlp._group(fmt), MAGIC=expert_mlp.e2m1_decode_mode(fmt, cfg), PTX=words is not None,
                TILED=bool(cfg.get("tiled")))
    for kernel, extra in ((expert_mlp._w13_kernel, dict(BN=cfg["BN13"], BK=cfg["BK13"], SWAP=bool(cfg.get("swap13")))),
                          (expert_mlp._w2_kernel, dict(BN=cfg["BN2"], BK=cfg["BK2"], PAIR_ROWS=True,
                                                       SWAP=bool(cfg.get("swap2"))))):
        r = probe(kernel, dict(base, **extra), a.arch, cfg["warps"], a.dump, cfg["stages"],
                  "*fp16" if cfg.get("x16") else "*bf16", w_type="*i32" if fmt == 0 or words else "*u8")
        print(kernel.__name__, r)


def mma(a):
    from nf3_hybrid.kernels import mma_gluon, mma_tiles

    cfg = _cfg(a, dict(BM=32, fmt=0, BN=mma_tiles.BN, warps=mma_tiles.WARPS, split=1))
    if cfg.get("wgmma"):
        return wgmma(cfg, a)
    lay, lw, xl = mma_gluon.layouts(cfg["BN"], mma_tiles.BK, cfg["warps"], cfg["split"])
    base = dict(FMT=cfg["fmt"], HAS_S2=cfg["fmt"] == 1, WEIGHT_ON_INPUT=False, BM=cfg["BM"], BN=cfg["BN"],
                BK=mma_tiles.BK, MMA=lay, LW=lw, XL=xl, SPLIT=cfg["split"], TILED=bool(cfg.get("tiled")),
                AHEAD=cfg.get("ahead", 1), XAHEAD=bool(cfg.get("xahead", 0)), XREG=bool(cfg.get("xreg", 0)),
                TABVEC=bool(cfg.get("tabvec", 0)))
    parts = int(cfg.get("splitk", 1))
    kernels = [(mma_gluon.mma13_kernel, dict(SPLITK=parts, DAHEAD=bool(cfg.get("dahead", 0)))),
               (mma_gluon.mma2_kernel, dict(PAIR_ROWS=True))]
    if parts > 1:
        kernels.append((mma_gluon.splitk13_kernel, dict(SPLITK=parts)))
    for kernel, extra in kernels:
        consts = dict(base, **extra)
        if kernel is mma_gluon.splitk13_kernel:
            consts = {k: v for k, v in consts.items() if k in kernel.arg_names}
        r = probe(kernel, consts, a.arch, cfg["warps"], a.dump, x_type="*fp16", gluon=True,
                  maxnreg=cfg.get("maxnreg") or mma_tiles.launch_options(cfg, cfg["fmt"]).get("maxnreg"))
        print(kernel.__name__, r)


def wgmma(cfg, a):
    """``--mma --cfg wgmma=1,BM=128[,fmt=1,wg_warps=8,wg_stages=3,wg_tail=16,wg_maxnreg=168]``: the wgmma kernels of
    kernels/wgmma_gluon.py as mma_tiles launches them (BM: tokens a block)."""
    from nf3_hybrid.kernels import mma_tiles, wgmma_gluon

    size = 16 * cfg.get("wg_warps", mma_tiles.WG_WARPS)
    for kernel, gemm, extra in ((wgmma_gluon.wg13_kernel, "13", {}), (wgmma_gluon.wg2_kernel, "2", dict(PAIR_ROWS=True))):
        _, _, warps, tiles = mma_tiles._kernel_tiles(cfg, size, gemm)
        base = dict(FMT=cfg["fmt"], HAS_S2=cfg["fmt"] == 1, WEIGHT_ON_INPUT=False, TILED=bool(cfg.get("tiled")),
                    **tiles)
        r = probe(kernel, dict(base, **extra), a.arch, warps, a.dump, x_type="*fp16", gluon=True,
                  maxnreg=mma_tiles.launch_options(cfg).get("maxnreg"))
        print(kernel.__name__, r)


def parser_default_cfg():
    return "BN13=2,BK13=1024,BN2=8,BK2=512,warps=1"


# --serve: the marker that starts each answer line (anything else on stdout is not ours)
ANSWER = "@@compile_probe@@ "


def serve() -> int:
    """Probes one after another in this process, each asked for by a line on stdin (the
    arguments as a JSON list) and answered by one line on stdout: ANSWER and a JSON object
    with rc (0, or 1 with the error), the report a plain run would print, and the error's
    traceback. Why: starting Python and importing torch, Triton and the kernels takes ~5 s
    of a ~7 s probe on the CI machine, and the tests ask for dozens (tests/kernels/sm90.py
    keeps one server a test process). A failed probe is answered, not fatal: the next one
    still runs; the asker decides what a failure means."""
    import contextlib
    import io
    import json
    import traceback

    for line in sys.stdin:
        if not line.strip():
            continue
        out = io.StringIO()
        answer = dict(rc=0, error="")
        try:
            with contextlib.redirect_stdout(out):
                rc = main(json.loads(line))
            answer["rc"] = int(rc or 0)
        except (Exception, SystemExit):  # noqa: BLE001 - reported to the asker, who fails on it
            answer.update(rc=1, error=traceback.format_exc())
        answer["stdout"] = out.getvalue()
        sys.stdout.write(ANSWER + json.dumps(answer) + "\n")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(serve() if sys.argv[1:] == ["--serve"] else main())
