#!/bin/bash
# session 11 (narrow class to 576 tokens): the benchmark with vLLM's Marlin NVFP4 and bf16 MoE
# in the same run, in the call that staged part 3 of the vLLM bundle:
#   bash .gpu-bundle/part3/stage.sh 3 >/tmp/stage.log 2>&1; source .gpu-bundle/part3/env.sh &&
#   bash scripts/install_overlay.sh --python python3 --no-extras && bash bench/results/s11_runs/run_final.sh
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
timeout 240 python3 -m nf3_hybrid bench --shape glm5.2 --inter 512 2048 --tokens 1 2 4 8 16 32 64 128 512 1024 2048 4096 --out-dir $OUT --tag h200 2>&1 | grep -v Warning | tail -26
