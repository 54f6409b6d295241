# committed copy of the script run on the H200 in session 7 (from the repository root; bench/scratch/old/overlay = 'git archive <commit> overlay', see bench/results/README.md)
#!/bin/bash
# session 7, bare H200 host: kernel tests; grouped NF3 tables as registers (old = 09f1528 vs new); GEMV tile sweep
set -x
export PYTHONPATH=$PWD/overlay:$PWD
timeout 200 python3 -m pytest -q tests/kernels 2>&1 | tail -15 > $OUT/kernels_h200_s7b.txt; tail -3 $OUT/kernels_h200_s7b.txt
T="--ours-only --shape glm5.2 --inter 512 --tokens 256 512 1024 2048 4096 --out-dir $OUT"
PYTHONPATH=$PWD/bench/scratch/old/overlay:$PWD timeout 120 python3 -m nf3_hybrid bench $T --tag h200_s7_ptxargs_old 2>&1 | grep -v Warning | tail -8
timeout 120 python3 -m nf3_hybrid bench $T --tag h200_s7_ptxargs_new 2>&1 | grep -v Warning | tail -8
timeout 200 python3 - <<'PY' 2>&1 | tail -12
import json, os
from nf3_hybrid import bench as b
b.SWEEP = {"gemv": [dict(BN13=2, BK13=1024, BN2=8, BK2=512, warps=1),
                    dict(BN13=4, BK13=512, BN2=8, BK2=512, warps=1),
                    dict(BN13=2, BK13=512, BN2=8, BK2=256, warps=1),
                    dict(BN13=2, BK13=2048, BN2=8, BK2=512, warps=1),
                    dict(BN13=2, BK13=1024, BN2=8, BK2=512, warps=1, pdl=64),
                    dict(BN13=2, BK13=1024, BN2=4, BK2=512, warps=1)]}
r = b.sweep(classes=["gemv"])
json.dump(dict(r, command="bench/scratch/run_b.sh: bench.sweep over decode GEMV tiles after the flat loads"),
          open(os.environ["OUT"] + "/sweep_h200_s7_gemv.json", "w"), indent=1)
PY
