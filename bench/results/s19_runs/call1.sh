#!/bin/bash
# Session 19, call 1 (bare host, after `bash .gpu-bundle/part1/stage.sh 1`): the L2
# prefetch's GPU tests, then the decode GEMV swept with and without it (tile option l2pf)
# at I=512 and I=2048. Writes /tmp/nf3_l2pf_default (1 or 0) for call 3: 1 when the sweep
# chose l2pf at both sizes.
: "${OUT:?set by the device tool}"
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
export PYTHONPATH=$PWD/overlay:$PWD
timeout 150 python3 -m pytest -q tests/kernels/test_expert_kernels.py -k "l2_prefetch" 2>&1 | tail -8 > "$OUT/kernels_h200_s19_l2pf.txt"
tail -2 "$OUT/kernels_h200_s19_l2pf.txt"
for inter in 512 2048; do
  timeout 200 python3 -m nf3_hybrid bench --ours-only --sweep --sweep-classes gemv --sweep-only l2pf --shape glm5.2 \
    --inter $inter --tokens 1 2 4 8 16 --out-dir "$OUT" --tag "h200_s19_l2pf_i$inter" 2>&1 | grep -v Warning | grep sweep
done
python3 - "$OUT" <<'PY'
import json, sys, pathlib
wins = []
for inter in (512, 2048):
    p = pathlib.Path(sys.argv[1], f"bench_moe_h200_s19_l2pf_i{inter}.json")
    d = json.loads(p.read_text()) if p.exists() else {}
    chosen = d.get("kernel_configs", {}).get("chosen", {}).get("gemv", {})
    print(inter, "chosen gemv:", chosen)
    wins.append(bool(chosen.get("l2pf")))
ok = pathlib.Path(sys.argv[1], "kernels_h200_s19_l2pf.txt").read_text()
passed = " passed" in ok and "failed" not in ok and "error" not in ok
val = int(all(wins) and passed)
pathlib.Path("/tmp/nf3_l2pf_default").write_text(str(val))
print("l2pf default for call 3:", val)
PY
