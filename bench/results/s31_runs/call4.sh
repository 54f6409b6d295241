#!/bin/bash
# Session 31, call 4 (the same warm host as call 3: vLLM and the overlay already there; no
# carry): the tiny checkpoint's agreement runs in vLLM on today's code — bf16 source with
# and without CUDA graphs, the hybrid on the Triton tiers with and without graphs, the
# reference backend, the uniform-NVFP4 checkpoint — and decode tokens/s beside uniform NVFP4.
# -> e2e_h200_tp1_s31.json (renamed _h100_ if the host is an H100)
: "${OUT:?set by the device tool}"
nvidia-smi --query-gpu=name --format=csv,noheader
bash .gpu-bundle/part3/stage.sh status 2>&1 | tail -2
source .gpu-bundle/part3/env.sh 2>/dev/null || source /tmp/gpu-bundle/part3/env.sh
timeout 540 python3 scripts/vllm_e2e.py --out "$OUT/e2e_h200_tp1_s31.json" --work /tmp/nf3-e2e \
  --runs src_bf16,src_bf16_eager,hyb_triton,hyb_triton_eager,hyb_ref_eager,uniform_overlay --parallel 6 --mem 0.1 2>&1 | tail -25
