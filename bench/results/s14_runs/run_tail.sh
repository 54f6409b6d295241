#!/bin/bash
# Session 14, bare H200 host (no vLLM): tile option wg_tail's GPU tests, then its candidates
# swept against the built-in tiles at I=512 (narrow, mid, large) and I=2048 (mid, large).
# -> kernels_h200_s14_tail.txt, sweep_h200_s14_tail.json, sweep_h200_s14_tail_i2048.json
set -u
: "${OUT:?set by the device tool}"
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
PYTHONPATH=$PWD/overlay:$PWD timeout 200 python3 -m pytest -q tests/kernels/test_expert_kernels.py \
  -k "tail or built_in_tiles or routing_fills" 2>&1 | tail -15 > "$OUT/kernels_h200_s14_tail.txt"
tail -3 "$OUT/kernels_h200_s14_tail.txt"
for inter in 512 2048; do
  classes="narrow mid large"; [ $inter = 2048 ] && classes="mid large"
  sfx=""; [ $inter = 2048 ] && sfx="_i2048"
  PYTHONPATH=$PWD/overlay timeout 200 python3 -m nf3_hybrid bench --ours-only --sweep --sweep-classes $classes \
    --sweep-only wg_tail --shape glm5.2 --inter $inter --tokens 1024 2048 4096 --out-dir "$OUT" \
    --tag "h200_s14_tail$sfx" 2>&1 | grep -v Warning | grep -E "^sweep|^glm5" | cut -c1-400
  mv "$OUT/bench_moe_h200_s14_tail$sfx.json" "$OUT/sweep_h200_s14_tail$sfx.json"
  rm -f "$OUT/bench_moe_h200_s14_tail$sfx.png"
done
