#!/bin/bash
# session 10, final code: the GPU kernel tests (bare host or with the bundle staged)
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
PYTHONPATH=$PWD/overlay:$PWD timeout 280 python3 -m pytest -q tests/kernels tests/test_nf3_nibble.py 2>&1 | tail -15 > $OUT/kernels_h200_s10_final.txt; tail -3 $OUT/kernels_h200_s10_final.txt
