#!/bin/bash
# Session 16, after the decode GEMV's tiled row order (expert_gemv.tiled_row: a program's
# consecutive outputs on rows k and k + 8, the two rows a tile keeps side by side), in the
# call that stages part 1 of the vLLM bundle (no vLLM used): the decode sizes timed with the NF3
# tier in nibble layout and tiled, one process each.
# -> bench_moe_h200_s16_decode_{nibble,tiled}.json
set -u
: "${OUT:?set by the device tool}"
for layout in nibble tiled; do
  HYBRID_NF3_LAYOUT=$layout PYTHONPATH=$PWD/overlay timeout 150 python3 -m nf3_hybrid bench --ours-only \
    --shape glm5.2 --inter 512 1024 2048 --tokens 1 2 4 8 16 --out-dir "$OUT" --tag "h200_s16_decode_$layout" 2>&1 |
    grep -v Warning | grep -E "^glm5" | sed "s/^/$layout /" | cut -c1-200
  rm -f "$OUT/bench_moe_h200_s16_decode_$layout.png"
done
