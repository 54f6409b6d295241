# committed copy of the script run on the H200 in session 7 (from the repository root; the xpf code it timed was dropped, not on main)
#!/bin/bash
# session 7, bare H200 host: decode GEMV activations loaded a K-step ahead (xpf) — correctness and sweep
set -x
export PYTHONPATH=$PWD/overlay:$PWD
timeout 120 python3 -m pytest -q tests/kernels/test_expert_kernels.py -k "prefetch or matches_reference or multiple_of" 2>&1 | tail -4
timeout 300 python3 - <<'PY' 2>&1 | tail -12
import json, os
from nf3_hybrid import bench as b
base = dict(BN13=2, BK13=1024, BN2=8, BK2=512, warps=1)
b.SWEEP = {"gemv": [base, dict(base, xpf=1), dict(base, BK13=512, xpf=1), dict(base, BK13=512, BK2=256, xpf=1),
                    dict(base, BK13=512)]}
r = b.sweep(classes=["gemv"])
json.dump(dict(r, command="bench/results/s7_runs/run_d.sh: bench.sweep over decode GEMV tiles with activations loaded a K-step ahead"),
          open(os.environ["OUT"] + "/sweep_h200_s7_xpf.json", "w"), indent=1)
PY
