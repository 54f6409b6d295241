#!/bin/bash
# Session 31, call 1 (bare host; carry .gpu-bundle/part1; run as
# `bash .gpu-bundle/part1/stage.sh 1 >/tmp/stage.log 2>&1; bash bench/results/s31_runs/call1.sh`).
# Only where the host is an H200 (sessions 29-30 got H100s and measured this there): the
# serial-tier rule of session 30 (large class at I=2048 with its tiers one after the other)
# against the tiers always concurrent, two passes alternating, and the GEMV's token bound at
# I=1024 / 2048 (set from H100 crossings in session 29), every size on the GEMV against
# every size on the grouped small class.
# -> tiers_h200_s31.txt, s31_call1.tgz (bench_moe_h200_s31_{rule_*,bound_*}.json)
: "${OUT:?set by the device tool}"
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1); echo "$gpu"
case "$gpu" in *H200*) ;; *) echo "not an H200: nothing to add to session 30's H100 runs"; exit 0;; esac
B="env PYTHONPATH=$PWD/overlay:$PWD python3 -m nf3_hybrid bench --ours-only --shape glm5.2"
{
for r in 1 2; do for t in auto concurrent; do
  timeout 60 $B --tiers $t --inter 2048 --tokens 1024 2048 4096 --out-dir "$OUT" \
    --tag h200_s31_rule_${t:0:4}${r}_i2048 2>&1 | grep "^glm5.2" | cut -c1-60
done; done
for I in 1024 2048; do
  toks="6 8 10 12 16"
  for g in 24 2; do
    name=$([ $g = 2 ] && echo small || echo gemv)
    timeout 70 $B --gemv-tokens $g --inter $I --tokens $toks --out-dir "$OUT" \
      --tag h200_s31_bound_${name}_i$I 2>&1 | grep "^| glm5.2" | cut -d'|' -f3-5
  done
done
} 2>&1 | tee "$OUT/tiers_h200_s31.txt"
rm -f "$OUT"/*.png; (cd "$OUT" && tar czf s31_call1.tgz *.json && rm -f *.json)
