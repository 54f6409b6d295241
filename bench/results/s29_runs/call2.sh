#!/bin/bash
# Session 29, call 2 (bare host; carry .gpu-bundle/part2 and bench/scratch/gpu-extra; run as
# `bash .gpu-bundle/part2/stage.sh 2 && bash bench/results/s29_runs/call2.sh`): the whole GPU
# kernel suite on this tree, four xdist workers (last run whole in session 24; the kconst
# default, clamp's and e2m1x2's bit tests and the mma tile options have changed since).
# -> kernels_h200_s29.txt
: "${OUT:?set by the device tool}"
X=$PWD/bench/scratch/gpu-extra
s=$SECONDS
PYTHONPATH=$PWD/overlay:$PWD:$X timeout 530 python3 -m pytest -q -p xdist -n 4 \
  tests/kernels tests/test_nf3_nibble.py tests/test_nf3_tiled.py 2>&1 \
  | grep -v "Warning\|warn" | tail -40 > "$OUT/kernels_h200_s29.txt"
echo "kernel suite took $((SECONDS-s)) s"; tail -8 "$OUT/kernels_h200_s29.txt"
