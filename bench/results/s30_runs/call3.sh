#!/bin/bash
# Session 30, call 3 (carry .gpu-bundle/part3; run as `bash .gpu-bundle/part3/stage.sh 3
# >/tmp/stage.log 2>&1; source .gpu-bundle/part3/env.sh && bash bench/results/s30_runs/call3.sh`):
# the overlay installed into the host Python with vLLM 0.33.0; the README's table re-measured
# on today's defaults with vLLM's Marlin NVFP4 and bf16 MoE in the same run (last measured in
# session 20; session 29 changed the GEMV defaults and bounds on an H100); then the tiny checkpoint's agreement runs in vLLM
# with the time left.
# (Ran on an H100: I=512 and 1024, as I=2048 does not fit beside the bf16 contender.)
# -> bench_moe_h100.json/.png, e2e_h100_tp1_s30.json
: "${OUT:?set by the device tool}"
start=$SECONDS
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
bash scripts/install_overlay.sh --python python3 --no-extras >/tmp/install.log 2>&1 || { tail -20 /tmp/install.log; exit 1; }
timeout 250 python3 -m nf3_hybrid bench --shape glm5.2 --inter 512 1024 \
  --tokens 1 2 4 8 16 32 64 128 512 1024 2048 4096 --out-dir "$OUT" --tag h100 2>&1 | grep -v Warning | tail -28
left=$((560 - (SECONDS - start)))
echo "time left for the agreement runs: $left s"
if [ "$left" -gt 100 ]; then
  timeout "$left" python3 scripts/vllm_e2e.py --out "$OUT/e2e_h100_tp1_s30.json" --work /tmp/nf3-e2e \
    --runs src_bf16,src_bf16_eager,hyb_triton,hyb_triton_eager,hyb_ref_eager,uniform_overlay --parallel 6 --mem 0.1 2>&1 | tail -25
fi
