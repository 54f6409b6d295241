#!/bin/bash
# Session 24, call 3 (bare host, no vLLM): the decode blocks' shifts as shifts (alu, the code
# before) and as multiplies (fma, ptx_decode.SHIFTS_ON_FMA), alternating processes, twice,
# our tiers and hybrid layer at GLM-5.2's I=512 and I=2048 from 1 to 2048 tokens
# -> bench_moe_h200_s24_{alu,fma}{1,2}.json
: "${OUT:?set by the device tool}"
for r in 1 2; do for mode in alu fma; do
  s=$SECONDS
  PYTHONPATH=$PWD/overlay:$PWD timeout 270 python3 bench/results/s24_runs/shifts_ab.py $mode --ours-only \
    --shape glm5.2 --inter 512 2048 --tokens 1 2 4 8 16 64 512 2048 --out-dir "$OUT" --tag h200_s24_${mode}$r 2>&1 \
    | grep -v Warning | grep -E "^shifts|hybrid|Error|error" | cut -c1-400 | head -40
  echo "$mode $r took $((SECONDS-s)) s"
done; done
rm -f "$OUT"/*.png
ls "$OUT"
