"""Compile the decode GEMV kernels for a GPU target on any machine (Triton ships ptxas and
nvdisasm) and report what matters for tuning without a GPU: layout conversions in the
TTGIR, registers, spills, shared memory, and SASS instruction counts by kind.
Usage: python3 bench/compile_probe.py [--arch 90] [--cfg BN13=4,BK13=512,...] [--dump DIR]"""
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

from nf3_hybrid.kernels import expert_gemv

COMMON = dict(A_FMT=1, A_GROUP=16, HAS_A=True, HAS_B=True, A_HAS_S2=True, WEIGHT_ON_INPUT=False, ASM=True)
TIER = ("map", "w", "s", "s2", "swe", "swn", "sse", "ssn", "vtab", "stab")
TYPES = {"map": "*i32", "w": "*i32", "s": "*u8", "s2": "*fp32", "vtab": "*fp16", "stab": "*fp16"}


def signature(kernel, consts):
    sig = {}
    for name in kernel.arg_names:
        if name in consts:
            sig[name] = "constexpr"
            continue
        tail = name.split("_", 1)[-1]
        if name.endswith("_ptr"):
            sig[name] = {"xa_ptr": "*fp32", "xb_ptr": "*fp32", "h_ptr": "*fp32", "ids_ptr": "*i32", "tw_ptr": "*fp32",
                         "y_ptr": "*fp32"}[name]
        elif name[:2] in ("a_", "b_") and tail in TYPES:
            sig[name] = TYPES[tail]
        else:
            sig[name] = "i32"
    return sig


def probe(kernel, consts, arch, warps, dump=None):
    src = ASTSource(kernel, signature(kernel, consts), constexprs={(kernel.arg_names.index(k),): v
                                                                   for k, v in consts.items()})
    ck = triton.compile(src, target=GPUTarget("cuda", arch, 32), options=dict(num_warps=warps))
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
    ops = collections.Counter(m.group(1).split(".")[0] for m in re.finditer(r"^\s+/\*[0-9a-f]+\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)", sass, re.M))
    if dump:
        Path(dump).mkdir(parents=True, exist_ok=True)
        for k in ("ttgir", "ptx"):
            Path(dump, f"{kernel.__name__}.{k}").write_text(ck.asm[k])
        Path(dump, f"{kernel.__name__}.sass").write_text(sass)
    return dict(convert_layout=ttgir.count("convert_layout"), local_alloc=ttgir.count("local_alloc"),
                regs=int(usage.get("REG", -1)), stack=int(usage.get("STACK", -1)), shared=ck.metadata.shared,
                sass_total=sum(ops.values()), top=ops.most_common(14))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--arch", type=int, default=90)
    ap.add_argument("--cfg", default="BN13=4,BK13=512,BN2=8,BK2=256,warps=2")
    ap.add_argument("--dump")
    a = ap.parse_args()
    cfg = {k: int(v) for k, v in (kv.split("=") for kv in a.cfg.split(","))}
    c = dict(COMMON)
    for kernel, bn, bk, extra in ((expert_gemv._gemv13_kernel, cfg["BN13"], cfg["BK13"], c),
                                  (expert_gemv._gemv2_kernel, cfg["BN2"], cfg["BK2"], COMMON)):
        r = probe(kernel, dict(extra, BN=bn, BK=bk), a.arch, cfg["warps"], a.dump)
        print(kernel.__name__, r)


if __name__ == "__main__":
    sys.exit(main())
