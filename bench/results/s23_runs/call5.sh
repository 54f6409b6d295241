#!/bin/bash
# Session 23, call 5 (bare host, no vLLM): splitk_walls.py -> splitk_walls_h200_s23.json
: "${OUT:?set by the device tool}"
PYTHONPATH=$PWD/overlay:$PWD timeout 400 python3 bench/results/s23_runs/splitk_walls.py \
  "$OUT/splitk_walls_h200_s23.json" 2>&1 | grep -v Warning | grep -E "^(concurrent|serial)|Error|error" | cut -c1-300
