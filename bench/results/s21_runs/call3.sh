#!/bin/bash
# Session 21, call 3 (bare host, no vLLM): where the per-pair GEMV should hand over to the
# grouped small tiles (triton_tiers.GEMV_TOKENS_BY_INTER, set in session 18): the hybrid
# layer with every batch on the GEMV (--gemv-tokens 24) and every batch grouped
# (--gemv-tokens 0), two alternating passes each.
# -> bench_moe_h200_s21_{gemv,grouped}_bounds{1,2}.json
: "${OUT:?set by the device tool}"
export PYTHONPATH=$PWD/overlay:$PWD
for i in 1 2; do
  for path in gemv grouped; do
    if [ $path = gemv ]; then n=24; else n=0; fi
    timeout 120 python3 -m nf3_hybrid bench --ours-only --shape glm5.2 --gemv-tokens $n --inter 512 1024 2048 \
      --tokens 3 4 5 6 8 10 12 14 16 20 --out-dir "$OUT" --tag h200_s21_${path}_bounds$i 2>&1 | grep -v Warning \
      | grep -E "^\| glm5.2" | awk -F'|' -v p=$path$i '{printf "%s I=%s M=%s %s us\n", p, $3, $4, $5}'
  done
done
