#!/bin/bash
# Session 29, call 6 (carry .gpu-bundle/part3; run as `bash .gpu-bundle/part3/stage.sh 3
# >/tmp/stage.log 2>&1; source .gpu-bundle/part3/env.sh && bash bench/results/s29_runs/call6.sh`):
# the overlay installed into the host Python with vLLM 0.33.0; the tiny checkpoint's
# agreement runs in vLLM on the new GEMV defaults; then the table at I=512 and 1024 with
# vLLM's Marlin NVFP4 and bf16 MoE in the same run (I=2048 does not fit the H100's memory
# beside the bf16 contender).
# -> e2e_h100_tp1_s29_defaults.json, bench_moe_h100_s29_defaults.json/.png
: "${OUT:?set by the device tool}"
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
bash scripts/install_overlay.sh --python python3 --no-extras >/tmp/install.log 2>&1 || { tail -20 /tmp/install.log; exit 1; }
timeout 200 python3 scripts/vllm_e2e.py --out "$OUT/e2e_h100_tp1_s29_defaults.json" --work /tmp/nf3-e2e \
  --runs src_bf16,src_bf16_eager,hyb_triton,hyb_triton_eager,hyb_ref_eager,uniform_overlay --parallel 6 --mem 0.1 2>&1 | tail -4
timeout 200 python3 -m nf3_hybrid bench --shape glm5.2 --inter 512 1024 --tokens 1 2 4 8 16 32 64 128 512 1024 2048 4096 \
  --out-dir "$OUT" --tag h100_s29_defaults 2>&1 | grep -v Warning | grep "^|"
