#!/bin/bash
# Session 15, bare H200 host (no vLLM): tile option wg_ashared's GPU tests (the weights through shared
# memory give the synchronous kernels' bits), then its candidates swept against the built-in tiles,
# narrow / mid / wide / large classes, I=512 and I=2048.
# -> kernels_h200_s15_ashared.txt, sweep_h200_s15_ashared.json, sweep_h200_s15_ashared_i2048.json
set -u
: "${OUT:?set by the device tool}"
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
PYTHONPATH=$PWD/overlay:$PWD timeout 200 python3 -m pytest -q tests/kernels/test_expert_kernels.py \
  -k "shared_memory or built_in_tiles" 2>&1 | tail -15 > "$OUT/kernels_h200_s15_ashared.txt"
tail -3 "$OUT/kernels_h200_s15_ashared.txt"
for inter in 512 2048; do
  sfx=""; [ $inter = 2048 ] && sfx="_i2048"
  PYTHONPATH=$PWD/overlay timeout 170 python3 -m nf3_hybrid bench --ours-only --sweep --sweep-classes narrow mid wide large \
    --sweep-only wg_ashared --shape glm5.2 --inter $inter --tokens 1024 2048 4096 --out-dir "$OUT" \
    --tag "h200_s15_ashared$sfx" 2>&1 | grep -v Warning | grep -E "^sweep|^glm5" | cut -c1-400
  mv "$OUT/bench_moe_h200_s15_ashared$sfx.json" "$OUT/sweep_h200_s15_ashared$sfx.json"
  rm -f "$OUT/bench_moe_h200_s15_ashared$sfx.png"
done
