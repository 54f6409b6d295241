#!/bin/bash
# Session 18, bare H200 host: the per-pair output rows in bf16 (bench --pair-rows bf16)
# against the fp32 default, both on the same code in one call; the grouped "small" class at
# decode sizes against the per-pair GEMV (--gemv-tokens 0), since sessions 14-17 changed the
# mma kernels' layout and the routing; per-kernel times at 16 tokens on both paths.
# -> kernels_h200_s18_pairs.txt, bench_moe_h200_s18_{fp32,bf16,small}.json,
#    kernel_breakdown_h200_s18_{gemv16,small16,bf16}.json
set -u
: "${OUT:?set by the device tool}"
export PYTHONPATH=$PWD/overlay:$PWD
B="python3 -m nf3_hybrid bench --ours-only --out-dir $OUT"
timeout 120 python3 -m pytest -q tests/kernels/test_expert_kernels.py -k "bf16_pair_rows" 2>&1 | tail -8 \
  > "$OUT/kernels_h200_s18_pairs.txt"
tail -2 "$OUT/kernels_h200_s18_pairs.txt"
for rows in fp32 bf16; do
  timeout 170 $B --pair-rows $rows --shape glm5.2 --inter 512 2048 --tokens 1 2 4 8 16 512 1024 2048 4096 \
    --tag h200_s18_$rows 2>&1 | grep -E "^glm5" | grep hybrid | cut -c1-160
done
timeout 90 $B --gemv-tokens 0 --shape glm5.2 --inter 512 2048 --tokens 8 16 24 32 --tag h200_s18_small 2>&1 \
  | grep -E "^glm5" | grep -E "hybrid|tier" | cut -c1-160
timeout 40 $B --breakdown --tokens 16 --tag h200_s18_gemv16 2>&1 | grep -E "^M=" | cut -c1-400
timeout 40 $B --breakdown --gemv-tokens 0 --tokens 16 --tag h200_s18_small16 2>&1 | grep -E "^M=" | cut -c1-400
timeout 40 $B --breakdown --pair-rows bf16 --tokens 2048 --tag h200_s18_bf16 2>&1 | grep -E "^M=" | cut -c1-400
rm -f "$OUT"/*.png
