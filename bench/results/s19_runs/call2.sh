#!/bin/bash
# Session 19, call 2 (after `bash .gpu-bundle/part2/stage.sh 2`): the GPU kernel suite,
# files in reverse order (session 18's run was cut at ~70 % of the forward order).
: "${OUT:?set by the device tool}"
export PYTHONPATH=$PWD/overlay:$PWD
timeout 500 python3 -m pytest -q tests/test_nf3_tiled.py tests/test_nf3_nibble.py tests/kernels/test_scale_decode.py \
  tests/kernels/test_ptx_decode.py tests/kernels/test_pair_sum.py tests/kernels/test_mma_tiles.py \
  tests/kernels/test_expert_kernels.py 2>&1 | tail -15 > "$OUT/kernels_h200_s19.txt"
tail -3 "$OUT/kernels_h200_s19.txt"
