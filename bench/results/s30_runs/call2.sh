#!/bin/bash
# Session 30, call 2 (bare host; carry .gpu-bundle/part2 and bench/scratch/gpu-extra; run as
# `bash .gpu-bundle/part2/stage.sh 2 >/tmp/stage.log 2>&1; bash bench/results/s30_runs/call2.sh`):
# the whole GPU kernel suite on this tree, four xdist workers (session 29 ran it on an H100
# only, before nf3x4 and the bound test's new parameters).
# -> kernels_h200_s30.txt
: "${OUT:?set by the device tool}"
X=$PWD/bench/scratch/gpu-extra
s=$SECONDS
PYTHONPATH=$PWD/overlay:$PWD:$X timeout 500 python3 -m pytest -q -p xdist -n 4 \
  tests/kernels tests/test_nf3_nibble.py tests/test_nf3_tiled.py 2>&1 \
  | grep -v "Warning\|warn" | tail -40 > "$OUT/kernels_h200_s30.txt"
echo "kernel suite took $((SECONDS-s)) s"; tail -8 "$OUT/kernels_h200_s30.txt"
