#!/bin/bash
# Session 33, after call 4 on the same warm host (carry bench/scratch/gpu-extra: pytest and
# xdist copied from the test venv): the whole GPU kernel suite on this tree, four xdist
# workers — first run since session 32 changed the GEMV tile-option tests and the
# checkpoint test. -> kernels_h200_s33.txt (renamed _h100_ if the host is an H100)
: "${OUT:?set by the device tool}"
nvidia-smi --query-gpu=name --format=csv,noheader
X=$PWD/bench/scratch/gpu-extra
s=$SECONDS
PYTHONPATH=$PWD/overlay:$PWD:$X timeout "${LIMIT:-480}" python3 -m pytest -q -p xdist -n 4 \
  tests/kernels tests/test_nf3_nibble.py tests/test_nf3_tiled.py 2>&1 \
  | grep --line-buffered -v "Warning\|warn" | tail -40 > "$OUT/kernels_h200_s33.txt"
echo "kernel suite took $((SECONDS-s)) s"; tail -8 "$OUT/kernels_h200_s33.txt"
