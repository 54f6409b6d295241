#!/bin/bash
# Session 23, call 4 (bare host, no vLLM): per-kernel times of the small class with and
# without mma_splitk (splitk_breakdown.py) -> kernel_breakdown_h200_s23_splitk.json
: "${OUT:?set by the device tool}"
PYTHONPATH=$PWD/overlay:$PWD timeout 400 python3 bench/results/s23_runs/splitk_breakdown.py \
  "$OUT/kernel_breakdown_h200_s23_splitk.json" 2>&1 | grep -v Warning | grep -E "^==|^M=" | cut -c1-400
