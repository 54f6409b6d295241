# committed copy of the script run on the H200 in session 8 (from the repository root)
#!/bin/bash
# session 8, bare H200 host (nibble-layout kernels): per-kernel time of the hybrid layer from
# decode to prefill sizes, and the grouped path's decode tiles against the per-pair GEMV
export PYTHONPATH=$PWD/overlay:$PWD
timeout 200 python3 - <<'PY' 2>&1 | grep -v Warning | tail -8
import json, os
from nf3_hybrid import bench as b
r = {inter: b.breakdown(inter=inter, tokens=(1, 16, 64, 128, 256, 512, 2048), log=lambda *a: None) for inter in (512, 2048)}
json.dump(dict(r, command="bench/results/s8_runs/run_d.sh: nf3_hybrid.bench.breakdown(inter, tokens=(1, 16, 64, 128, 256, 512, 2048))"),
          open(os.environ["OUT"] + "/kernel_breakdown_h200_s8.json", "w"), indent=1)
for inter, d in r.items():
    for m, rows in d["per_call_us"].items():
        print(inter, m, {k[:20]: v for k, v in rows.items()})
PY
T="--ours-only --shape glm5.2 --inter 512 2048 --tokens 16 32 64 128 --out-dir $OUT"
timeout 150 python3 -m nf3_hybrid bench $T --tag h200_s8_gemv_mid 2>&1 | grep -v Warning | tail -9
timeout 150 python3 -m nf3_hybrid bench $T --gemv-tokens 8 --tag h200_s8_grouped_mid 2>&1 | grep -v Warning | tail -9
