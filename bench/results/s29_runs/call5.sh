#!/bin/bash
# Session 29, call 5 (the same warm H100 right after call 4; carry bench/scratch/gpu-extra):
# the whole GPU kernel suite on the new GEMV defaults and bounds (the bounds changed in
# triton_tiers.GEMV_TOKENS_BY_INTER just before this call, their test's parameters not yet).
# -> kernels_h100_s29_final.txt
: "${OUT:?set by the device tool}"
X=$PWD/bench/scratch/gpu-extra
PYTHONPATH=$PWD/overlay:$PWD:$X timeout 420 python3 -m pytest -q -p xdist -n 4 tests/kernels tests/test_nf3_nibble.py \
  tests/test_nf3_tiled.py 2>&1 | grep -v "Warning\|warn" | tail -30 > "$OUT/kernels_h100_s29_final.txt"
tail -6 "$OUT/kernels_h100_s29_final.txt"
