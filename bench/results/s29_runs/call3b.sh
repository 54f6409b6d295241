#!/bin/bash
# Session 29, call 3b (the same warm H100 right after call 3, vLLM staged there; no carry):
# call 3's table ran out of GPU memory at I=2048 (the bf16 contender's 256 experts beside the
# others: 80 GB on the H100 against the H200's 141) and its JSON was not written, so the table
# again at I=512 and 1024 only.
# -> bench_moe_h100_s29.json/.png
: "${OUT:?set by the device tool}"
source .gpu-bundle/part3/env.sh; bash .gpu-bundle/part3/stage.sh status
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
timeout 400 python3 -m nf3_hybrid bench --shape glm5.2 --inter 512 1024 --tokens 1 2 4 8 16 32 64 128 512 1024 2048 4096 \
  --out-dir "$OUT" --tag h100_s29 2>&1 | grep -v Warning | tail -40
