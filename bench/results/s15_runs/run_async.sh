#!/bin/bash
# Session 15, bare H200 host (no vLLM): tile option wg_async's GPU tests (asynchronous MMAs
# give the synchronous kernels' bits), then its candidates swept against the built-in tiles,
# narrow / mid / wide / large classes, I=512 and I=2048.
# -> kernels_h200_s15_async.txt, sweep_h200_s15_async.json, sweep_h200_s15_async_i2048.json
set -u
: "${OUT:?set by the device tool}"
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
PYTHONPATH=$PWD/overlay:$PWD timeout 200 python3 -m pytest -q tests/kernels/test_expert_kernels.py \
  -k "asynchronous_mmas or built_in_tiles" 2>&1 | tail -15 > "$OUT/kernels_h200_s15_async.txt"
tail -3 "$OUT/kernels_h200_s15_async.txt"
for inter in 512 2048; do
  sfx=""; [ $inter = 2048 ] && sfx="_i2048"
  PYTHONPATH=$PWD/overlay timeout 170 python3 -m nf3_hybrid bench --ours-only --sweep --sweep-classes narrow mid wide large \
    --sweep-only wg_async --shape glm5.2 --inter $inter --tokens 1024 2048 4096 --out-dir "$OUT" \
    --tag "h200_s15_async$sfx" 2>&1 | grep -v Warning | grep -E "^sweep|^glm5" | cut -c1-400
  mv "$OUT/bench_moe_h200_s15_async$sfx.json" "$OUT/sweep_h200_s15_async$sfx.json"
  rm -f "$OUT/bench_moe_h200_s15_async$sfx.png"
done
