# committed copy of the script run on the H200 in session 8 (from the repository root)
#!/bin/bash
# session 8, bare H200 host: decode GEMV prefetch depth (tile option pf=2: the weight words
# and scales of the next two K-blocks in flight instead of one) and narrower tiles, swept
# at I=512 and I=2048
export PYTHONPATH=$PWD/overlay:$PWD
timeout 500 python3 - <<'PY' 2>&1 | grep -v Warning | tail -30
import json, os
from nf3_hybrid import bench as b
b.SWEEP = {"gemv": [dict(BN13=2, BK13=1024, BN2=8, BK2=512, warps=1),
                    dict(BN13=2, BK13=1024, BN2=8, BK2=512, warps=1, pf=2),
                    dict(BN13=2, BK13=512, BN2=8, BK2=256, warps=1, pf=2),
                    dict(BN13=1, BK13=1024, BN2=4, BK2=512, warps=1, pf=2),
                    dict(BN13=1, BK13=1024, BN2=4, BK2=512, warps=1)]}
out = {}
for inter in (512, 2048):
    out[inter] = b.sweep(inter=inter, classes=["gemv"])
json.dump(dict(out, command="bench/results/s8_runs/run_c.sh: nf3_hybrid.bench.sweep(inter, classes=['gemv']) over the candidates above"),
          open(os.environ["OUT"] + "/sweep_h200_s8_pf.json", "w"), indent=1)
PY
