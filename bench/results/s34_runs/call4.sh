#!/bin/bash
# Session 34, call 4 (the same warm host as call 3, no carry; run as `source
# .gpu-bundle/part3/env.sh 2>/dev/null || source /tmp/gpu-bundle/part3/env.sh; bash
# bench/results/s34_runs/call4.sh`). On an H200: the agreement runs (e2e.sh). Elsewhere: the
# agreement runs again (PASS=b), for the spread of the decode tokens/s ratio run to run.
: "${OUT:?set by the device tool}"
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1); echo "$gpu"
bash .gpu-bundle/part3/stage.sh status 2>&1 | tail -1
case "$gpu" in
  *H200*) bash bench/results/s34_runs/e2e.sh ;;
  *) PASS=b bash bench/results/s34_runs/e2e.sh ;;
esac
