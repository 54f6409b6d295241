#!/bin/bash
# Session 21, call 6 (bare host, no vLLM): the grouped path at I=2048 took 725 µs at 16
# tokens in call 1 (workspace planned for 4096 tokens) and 824-830 in call 3 (planned for
# 20). The same batches with the workspace planned small and large, alternating.
# -> bench_moe_h200_s21_ws{small,large}{1,2}.json
: "${OUT:?set by the device tool}"
export PYTHONPATH=$PWD/overlay:$PWD
for i in 1 2; do
  for ws in small large; do
    if [ $ws = small ]; then t="6 8 12 16 20"; else t="6 8 12 16 20 4096"; fi
    timeout 100 python3 -m nf3_hybrid bench --ours-only --shape glm5.2 --gemv-tokens 0 --inter 512 2048 --tokens $t \
      --out-dir "$OUT" --tag h200_s21_ws$ws$i 2>&1 | grep -v Warning | grep -E "^\| glm5.2" \
      | awk -F'|' -v p=$ws$i '{printf "%s I=%s M=%s %s us\n", p, $3, $4, $5}'
  done
done
