# committed copy of the script run on the H200 in session 8 (from the repository root;
# bench/scratch/base/overlay = 'git archive 217e663 overlay', the code before the NF3 nibble layout)
#!/bin/bash
# session 8, bare H200 host: kernel tests of the nibble-layout kernels, then old and new
# kernels timed in one session (ours only: decode and prefill sizes)
export PYTHONPATH=$PWD/overlay:$PWD
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
timeout 240 python3 -m pytest -q tests/kernels tests/test_nf3_nibble.py 2>&1 | tail -15 > $OUT/kernels_h200_s8.txt; tail -3 $OUT/kernels_h200_s8.txt
T="--ours-only --shape glm5.2 --inter 512 2048 --tokens 1 2 4 8 16 64 512 1024 2048 4096 --out-dir $OUT"
PYTHONPATH=$PWD/bench/scratch/base/overlay:$PWD timeout 150 python3 -m nf3_hybrid bench $T --tag h200_s8_nibble_old 2>&1 | grep -v Warning | tail -22
timeout 150 python3 -m nf3_hybrid bench $T --tag h200_s8_nibble_new 2>&1 | grep -v Warning | tail -22
