# committed copy of the script run on the H200 in session 7 (from the repository root; bench/scratch/old/overlay = 'git archive <commit> overlay', see bench/results/README.md)
#!/bin/bash
# session 7, bare H200 host: large-class tiles on eight warps (the down tile register-fed)
set -x
export PYTHONPATH=$PWD/overlay:$PWD
timeout 400 python3 - <<'PY' 2>&1 | tail -12
import json, os
from nf3_hybrid import bench as b
base = dict(BM=64, BN13=64, BK13=64, BN2=128, BK2=64, warps=4, stages=3, magic=2, ptx=1, x16=1)
b.SWEEP = {"large": [base, dict(base, warps=8), dict(base, BN13=128, warps=8), dict(base, BM=128, BN13=128, warps=8),
                     dict(base, BN2=64, BK2=128)]}
r = b.sweep(classes=["large"])
json.dump(dict(r, command="bench/scratch/run_c.sh: bench.sweep over large-class tiles on eight warps"),
          open(os.environ["OUT"] + "/sweep_h200_s7_large8w.json", "w"), indent=1)
PY
