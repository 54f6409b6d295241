#!/bin/bash
# session 11 (narrow class to 576 tokens): the GPU kernel tests that cross the grouped
# classes' bounds, in the call that staged part 2 of the vLLM bundle:
#   bash .gpu-bundle/part2/stage.sh 2 && bash bench/results/s11_runs/run_tests.sh
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
PYTHONPATH=$PWD/overlay:$PWD timeout 200 python3 -m pytest -q tests/kernels/test_expert_kernels.py \
  -k "glm5_shapes or mma_tiles_match or decoded_in_registers or cuda_graph_replay" 2>&1 | tail -15 > $OUT/kernels_h200_s11.txt
tail -3 $OUT/kernels_h200_s11.txt
