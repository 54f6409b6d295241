# committed copy of the script run on the H200 in session 8 (from the repository root)
#!/bin/bash
# session 8, bare H200 host: the grouped path's NVFP4 tile decoded by the byte-permute PTX
# block (tile option ptx4) — correctness against magic=2 and the reference, then timed
# against magic=2 in every grouped class
export PYTHONPATH=$PWD/overlay:$PWD
timeout 200 python3 -m pytest -q tests/kernels/test_expert_kernels.py -k "registers" 2>&1 | tail -4 > $OUT/kernels_h200_s8_ptx4.txt; cat $OUT/kernels_h200_s8_ptx4.txt
timeout 300 python3 - <<'PY' 2>&1 | grep -v Warning | tail -12
import json, os
from nf3_hybrid import bench as b
from nf3_hybrid.backends import triton_tiers as tt
b.SWEEP = {c: [tt.grouped_config(m, False), dict(tt.grouped_config(m, False), magic=0, ptx4=1)]
           for c, m in (("small", 1), ("mid", 500), ("large", 2000))}
r = b.sweep(classes=["small", "mid", "large"])
json.dump(dict(r, command="bench/results/s8_runs/run_f.sh: nf3_hybrid.bench.sweep over each grouped class's default tiles and the same with ptx4=1"),
          open(os.environ["OUT"] + "/sweep_h200_s8_ptx4.json", "w"), indent=1)
PY
