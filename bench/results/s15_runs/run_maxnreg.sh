#!/bin/bash
# Session 15, bare H200 host (no vLLM): tile option wg_maxnreg's GPU tests (capped tiles give
# the uncapped bits), then its candidates swept against the built-in tiles, mid / wide / large
# classes, I=512 and I=2048.
# -> kernels_h200_s15_maxnreg.txt, sweep_h200_s15_maxnreg.json, sweep_h200_s15_maxnreg_i2048.json
set -u
: "${OUT:?set by the device tool}"
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
PYTHONPATH=$PWD/overlay:$PWD timeout 200 python3 -m pytest -q tests/kernels/test_expert_kernels.py \
  -k "register_cap or built_in_tiles" 2>&1 | tail -15 > "$OUT/kernels_h200_s15_maxnreg.txt"
tail -3 "$OUT/kernels_h200_s15_maxnreg.txt"
for inter in 512 2048; do
  sfx=""; [ $inter = 2048 ] && sfx="_i2048"
  PYTHONPATH=$PWD/overlay timeout 170 python3 -m nf3_hybrid bench --ours-only --sweep --sweep-classes mid wide large \
    --sweep-only wg_maxnreg --shape glm5.2 --inter $inter --tokens 1024 2048 4096 --out-dir "$OUT" \
    --tag "h200_s15_maxnreg$sfx" 2>&1 | grep -v Warning | grep -E "^sweep|^glm5" | cut -c1-400
  mv "$OUT/bench_moe_h200_s15_maxnreg$sfx.json" "$OUT/sweep_h200_s15_maxnreg$sfx.json"
  rm -f "$OUT/bench_moe_h200_s15_maxnreg$sfx.png"
done
