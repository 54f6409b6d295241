#!/bin/bash
# Session 18, bare H200 host: where the per-pair decode GEMV stops beating the grouped
# "small" tiles, per intermediate size (call 1 had the small tiles 16 % faster at 16 tokens
# for I=2048, even at I=512) — both paths at the same token counts, I = 512 / 1024 / 2048;
# then the small class's candidate tiles swept at I=2048.
# -> bench_moe_h200_s18_{gemv,grouped}_bounds.json, bench_moe_h200_s18_small_sweep_i2048.json
set -u
: "${OUT:?set by the device tool}"
export PYTHONPATH=$PWD/overlay:$PWD
B="python3 -m nf3_hybrid bench --ours-only --out-dir $OUT --shape glm5.2"
timeout 150 $B --gemv-tokens 24 --inter 512 1024 2048 --tokens 2 3 4 6 8 12 16 20 24 --tag h200_s18_gemv_bounds 2>&1 \
  | grep -E "^glm5" | cut -c1-160
timeout 150 $B --gemv-tokens 0 --inter 512 1024 2048 --tokens 2 3 4 6 8 12 16 20 24 --tag h200_s18_grouped_bounds 2>&1 \
  | grep -E "^glm5" | cut -c1-160
timeout 150 $B --sweep --sweep-classes small --inter 2048 --tokens 8 --tag h200_s18_small_sweep_i2048 2>&1 \
  | grep -E "^sweep|^glm5" | cut -c1-300
rm -f "$OUT"/*.png
