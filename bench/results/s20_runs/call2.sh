#!/bin/bash
# Session 20, call 2 (after `bash .gpu-bundle/part2/stage.sh 2`): the whole GPU kernel
# suite in one run, four pytest-xdist workers on the one GPU (compiling is most of its time;
# session 19's single-process runs were cut at 500 s).
: "${OUT:?set by the device tool}"
export PYTHONPATH=$PWD/overlay:$PWD:$PWD/.gpu-extra
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
s=$SECONDS
timeout 520 python3 -m pytest -q -p xdist -n 4 tests/test_nf3_tiled.py tests/test_nf3_nibble.py tests/kernels/ \
  2>&1 | tail -25 > "$OUT/kernels_h200_s20.txt"
echo "suite took $((SECONDS-s)) s"
tail -4 "$OUT/kernels_h200_s20.txt"
