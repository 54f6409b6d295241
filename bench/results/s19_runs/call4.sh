#!/bin/bash
# Session 19, call 4 (after `bash .gpu-bundle/part1/stage.sh 1` on a fresh host): call 2's
# order again with -x, so the one failure it showed (at ~30 %, its summary lost to the
# timeout) stops the run with its traceback; lines written as they come.
: "${OUT:?set by the device tool}"
export PYTHONPATH=$PWD/overlay:$PWD
timeout 330 python3 -m pytest -x -rfE --tb=long -p no:randomly tests/test_nf3_tiled.py tests/test_nf3_nibble.py \
  tests/kernels/test_scale_decode.py tests/kernels/test_ptx_decode.py tests/kernels/test_pair_sum.py \
  tests/kernels/test_mma_tiles.py tests/kernels/test_expert_kernels.py -v > "$OUT/kernels_h200_s19_x.txt" 2>&1
grep -E "FAILED|PASSED|ERROR" "$OUT/kernels_h200_s19_x.txt" | tail -4; grep -cE "PASSED" "$OUT/kernels_h200_s19_x.txt"
