#!/bin/bash
# Session 32, one call on a bare host (no carry, no vLLM; run as
# `bash bench/results/s32_runs/bare.sh`). Written when refused starts had left too little
# device time for vLLM's three staged parts: our kernels on today's code without the stock
# contenders, so that the numbers are this code's but no ratio to Marlin comes from them.
# 1. On an H200 only: session 30's serial-tier rule (the large class at I=2048 with its tiers
#    one after the other) against always-concurrent tiers at 2048 / 4096 tokens: s31 call 1,
#    one pass.
# 2. Our tiers and the hybrid layer (`bench --ours-only`) at I=512 and 2048, decode and
#    prefill token counts, with the copy bandwidth measured in the same run.
# LIMIT (seconds, default 240) bounds the table; its rows are kept as they come.
# -> tiers_h200_s31.txt and s31_call1.tgz (H200), table_<gpu>_s32.txt, s32_bare.tgz (the
#    table's JSON), the PNG
: "${OUT:?set by the device tool}"
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1); echo "$gpu"
case "$gpu" in *H200*) tag=h200;; *H100*) tag=h100;; *) tag=gpu;; esac
B="env PYTHONPATH=$PWD/overlay:$PWD python3 -u -m nf3_hybrid bench --ours-only --shape glm5.2"
ROUNDS=1 bash bench/results/s31_runs/call1.sh  # an H200 only; leaves s31_call1.tgz
s=$SECONDS
timeout "${LIMIT:-240}" $B --inter 512 2048 --tokens 1 2 4 8 16 64 512 1024 2048 4096 --out-dir "$OUT" \
  --tag ${tag}_s32_ours 2>&1 | grep --line-buffered -v Warning | tee "$OUT/table_${tag}_s32.txt" | tail -30
echo "table took $((SECONDS-s)) s"
(cd "$OUT" && tar czf s32_bare.tgz *.json && rm -f *.json && ls)
