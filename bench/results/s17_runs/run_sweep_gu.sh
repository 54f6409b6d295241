#!/bin/bash
# Session 17, bare H200 host: every grouped class on wgmma swept, its built-in tiles against
# the candidates with gate and up rows in one tile (wg_gu), I=512; then the huge class's
# baseline: chunks of 4096 on the large class's 64 + 16-slot tiles (huge_as_large.json).
# -> sweep_h200_s17_gu.json, bench_moe_h200_s17_as_large.json
set -u
: "${OUT:?set by the device tool}"
PYTHONPATH=$PWD/overlay timeout 330 python3 -m nf3_hybrid bench --ours-only --sweep --sweep-classes narrow mid wide large huge \
  --sweep-only wg_gu --shape glm5.2 --inter 512 --tokens 2048 --out-dir "$OUT" --tag h200_s17_gu 2>&1 |
  grep -v Warning | grep -E "^sweep|^glm5" | cut -c1-260
mv "$OUT/bench_moe_h200_s17_gu.json" "$OUT/sweep_h200_s17_gu.json"; rm -f "$OUT"/*.png
PYTHONPATH=$PWD/overlay timeout 150 python3 -m nf3_hybrid bench --ours-only --tiles bench/results/s17_runs/huge_as_large.json \
  --shape glm5.2 --inter 512 2048 --tokens 3072 4096 --out-dir "$OUT" --tag h200_s17_as_large 2>&1 |
  grep -v Warning | grep -E "^glm5" | cut -c1-200
rm -f "$OUT"/*.png
