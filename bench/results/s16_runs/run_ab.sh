#!/bin/bash
# Session 16, bare H200 host (no vLLM): the NF3 tiled layout (formats/nf3_tiled.py) — first
# the GPU test that it gives the nibble layout's bits on every kernel (decode GEMV, wgmma,
# mma.sync), then the hybrid layer and both tiers timed with the NF3 tier in nibble layout
# (HYBRID_NF3_LAYOUT=nibble, the code before) and tiled (the new default), one process each.
# -> kernels_h200_s16_tiled.txt, bench_moe_h200_s16_{nibble,tiled}.json
set -u
: "${OUT:?set by the device tool}"
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
PYTHONPATH=$PWD/overlay:$PWD timeout 150 python3 -m pytest -q tests/kernels/test_expert_kernels.py \
  -k "tiled_nf3_layout" 2>&1 | tail -15 > "$OUT/kernels_h200_s16_tiled.txt"
tail -3 "$OUT/kernels_h200_s16_tiled.txt"
for layout in nibble tiled; do
  HYBRID_NF3_LAYOUT=$layout PYTHONPATH=$PWD/overlay timeout 190 python3 -m nf3_hybrid bench --ours-only \
    --shape glm5.2 --inter 512 2048 --tokens 1 8 16 512 1024 2048 4096 --out-dir "$OUT" --tag "h200_s16_$layout" 2>&1 |
    grep -v Warning | grep -E "^glm5" | sed "s/^/$layout /" | cut -c1-200
  rm -f "$OUT/bench_moe_h200_s16_$layout.png"
done
