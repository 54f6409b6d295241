#!/bin/bash
# Session 31, call 1 (bare host, no carry: `bench --ours-only` needs no vLLM; run as
# `bash bench/results/s31_runs/call1.sh`).
# Only where the host is an H200 (sessions 29-30 got H100s and measured this there): the
# serial-tier rule of session 30 (large class at I=2048 with its tiers one after the other)
# against the tiers always concurrent at 2048 / 4096 tokens, two passes alternating
# (ROUNDS=1: one). (The GEMV-bound sweep planned beside it was dropped: three failed starts
# had spent a fifth of the session's device time.)
# -> tiers_h200_s31.txt, s31_call1.tgz (bench_moe_h200_s31_rule_*.json)
: "${OUT:?set by the device tool}"
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1); echo "$gpu"
case "$gpu" in *H200*) ;; *) echo "not an H200: nothing to add to session 30's H100 runs"; exit 0;; esac
B="env PYTHONPATH=$PWD/overlay:$PWD python3 -m nf3_hybrid bench --ours-only --shape glm5.2"
{
for r in ${ROUNDS:-1 2}; do for t in auto concurrent; do
  timeout 60 $B --tiers $t --inter 2048 --tokens 2048 4096 --out-dir "$OUT" \
    --tag h200_s31_rule_${t:0:4}${r}_i2048 2>&1 | grep "^glm5.2" | cut -c1-60
done; done
} 2>&1 | tee "$OUT/tiers_h200_s31.txt"
rm -f "$OUT"/*.png; (cd "$OUT" && tar czf s31_call1.tgz *.json && rm -f *.json)
