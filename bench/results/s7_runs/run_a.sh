# committed copy of the script run on the H200 in session 7 (from the repository root; bench/scratch/old/overlay = 'git archive <commit> overlay', see bench/results/README.md)
#!/bin/bash
# session 7, bare H200 host: kernel tests, old-vs-new decode GEMV layouts, magic=2 sweep, MMAv2 probe
set -x
export PYTHONPATH=$PWD/overlay:$PWD
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv
python3 -c "import matplotlib, pytest, triton; print(triton.__version__)"
timeout 200 python3 -m pytest -q tests/kernels 2>&1 | tail -15 > $OUT/kernels_h200_s7.txt; tail -3 $OUT/kernels_h200_s7.txt
T="--ours-only --shape glm5.2 --inter 512 2048 --tokens 1 2 4 8 16 32 64 512 2048 --out-dir $OUT"
PYTHONPATH=$PWD/bench/scratch/old/overlay:$PWD timeout 150 python3 -m nf3_hybrid bench $T --tag h200_s7_gemv_old 2>&1 | grep -v Warning | tail -22
timeout 150 python3 -m nf3_hybrid bench $T --tag h200_s7_gemv_new 2>&1 | grep -v Warning | tail -22
timeout 150 python3 - <<'PY' 2>&1 | tail -12
import json, os
from nf3_hybrid import bench as b
b.SWEEP = {"mid": [b.SWEEP["mid"][1], b.SWEEP["mid"][-1]], "large": [b.SWEEP["large"][1], b.SWEEP["large"][-1]]}
r = b.sweep(classes=["mid", "large"])
json.dump(dict(r, command="bench/scratch/run_a.sh: bench.sweep over the default mid/large tiles and their magic=2 twins"),
          open(os.environ["OUT"] + "/sweep_h200_s7_magic2.json", "w"), indent=1)
PY
DISABLE_MMA_V3=1 timeout 100 python3 -m nf3_hybrid bench --ours-only --shape glm5.2 --inter 512 --tokens 512 2048 --out-dir $OUT --tag h200_s7_mmav2 2>&1 | grep -v Warning | tail -6
