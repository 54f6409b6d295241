#!/bin/bash
# Session 31, call 3 (carry .gpu-bundle/part3; run as `bash .gpu-bundle/part3/stage.sh 3
# >/tmp/stage.log 2>&1; source .gpu-bundle/part3/env.sh && bash bench/results/s31_runs/call3.sh`):
# the overlay installed into the host Python beside vLLM 0.33.0, then the README's table at
# per-rank I = 512 and 2048 (the README's H200 sizes; 1024 dropped for device time) with
# vLLM's Marlin NVFP4 and bf16 MoE in the same run. I=2048 now fits an 80 GB card: the stock contenders' random weights are
# drawn one expert at a time (stock_moe.fill_random). First table on session 30's
# serial-tier rule with Marlin beside it.
# INTER / TOKENS / LIMIT narrow it when device time is short (the command line is in the JSON).
# -> bench_moe_h200.json/.png (renamed _h100_ if the host is an H100)
: "${OUT:?set by the device tool}"
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total --format=csv,noheader
bash scripts/install_overlay.sh --python python3 --no-extras >/tmp/install.log 2>&1 || { tail -20 /tmp/install.log; exit 1; }
s=$SECONDS
timeout "${LIMIT:-420}" python3 -u -m nf3_hybrid bench --shape glm5.2 --inter ${INTER:-512 2048} \
  --tokens ${TOKENS:-1 2 4 8 16 32 64 128 512 1024 2048 4096} --out-dir "$OUT" --tag h200 2>&1 | grep --line-buffered -v Warning | tee "$OUT/table_h200_s31.txt" | tail -40
echo "table took $((SECONDS-s)) s"
