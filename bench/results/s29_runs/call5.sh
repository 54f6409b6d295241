#!/bin/bash
# Session 29, call 5 (bare host; carry .gpu-bundle/part2; run as `bash .gpu-bundle/part2/stage.sh 2
# && bash bench/results/s29_runs/call5.sh`): the accuracy probe on the built-in GEMV options
# before (kconst only) and after (kconst, clamp, e2m1x2) this session's change, max relative
# error against float32 at 1, 3, 8 and 16 tokens (I=512, 64 experts of which 16 kept).
# -> accuracy_h100_s29_defaults.json
: "${OUT:?set by the device tool}"
for opt in "clamp=0,e2m1x2=0" ""; do
  PYTHONPATH=$PWD/overlay:$PWD timeout 60 python3 bench/accuracy_probe.py --hidden 6144 --inter 512 --experts 64 \
    --kept 16 --tokens 1 3 8 16 ${opt:+--gemv-options $opt} 2>&1 | tail -1
done > "$OUT/accuracy_h100_s29_defaults.json"
cat "$OUT/accuracy_h100_s29_defaults.json"
