#!/bin/bash
# Session 34, after staging part 3 on the same host (run as `bash .gpu-bundle/part3/stage.sh 3
# >/tmp/stage.log 2>&1; source .gpu-bundle/part3/env.sh && bash bench/results/s34_runs/e2e.sh`):
# the overlay installed into the host Python beside vLLM 0.33.0, then the tiny checkpoint's
# agreement runs (session 31's call 4) with decode tokens/s timed on turns (scripts/
# decode_turns.py): the hybrid and the uniform-NVFP4 engine each time batch 1 and 32 three
# times, alone on the GPU after every other engine has exited, in the order A B B A A B.
# PASS names a second run on the same host (e2e_<gpu>_tp1_s34<PASS>.json).
# -> e2e_<gpu>_tp1_s34.json
: "${OUT:?set by the device tool}"
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1); echo "$gpu"
case "$gpu" in *H200*) tag=h200;; *H100*) tag=h100;; *) tag=gpu;; esac
bash scripts/install_overlay.sh --python python3 --no-extras >/tmp/install.log 2>&1 || { tail -20 /tmp/install.log; exit 1; }
s=$SECONDS
timeout "${LIMIT:-420}" python3 scripts/vllm_e2e.py --out "$OUT/e2e_${tag}_tp1_s34${PASS:-}.json" --work /tmp/nf3-e2e \
  --runs src_bf16,src_bf16_eager,hyb_triton,hyb_triton_eager,hyb_ref_eager,uniform_overlay --parallel 6 --mem 0.1 2>&1 | tail -30
echo "e2e took $((SECONDS-s)) s"
