#!/bin/bash
# Session 34, call 3 (carry .gpu-bundle/part3, after parts 1 and 2 were staged; run as
# `bash .gpu-bundle/part3/stage.sh 3 >/tmp/stage.log 2>&1; source .gpu-bundle/part3/env.sh &&
# bash bench/results/s34_runs/call3.sh`). On an H200 (none lent since session 20): the
# README's table on today's kernels at I=512 and 2048, Marlin and bf16 in the same run
# (session 31's call3.sh). On any other GPU (session 33 measured that table on an H100): the
# agreement runs with decode tokens/s on turns (e2e.sh).
: "${OUT:?set by the device tool}"
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1); echo "$gpu"
tail -n 1 /tmp/stage.log
case "$gpu" in
  *H200*) LIMIT=${LIMIT:-420} bash bench/results/s31_runs/call3.sh ;;
  *) bash bench/results/s34_runs/e2e.sh ;;
esac
