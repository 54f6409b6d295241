# committed copy of the script run on the H200 in session 7 (from the repository root; bench/scratch/old/overlay = git archive 076efe6 overlay; the mul.hi code it timed was dropped)
#!/bin/bash
# session 7, bare H200 host: selector half by mul.hi (FMA pipe) instead of shr (integer pipe); old = 076efe6
set -x
export PYTHONPATH=$PWD/overlay:$PWD
timeout 120 python3 -m pytest -q tests/kernels -k "matches_reference or multiple_of or ptx or graph" 2>&1 | tail -3
T="--ours-only --shape glm5.2 --inter 512 --tokens 1 2 4 8 16 64 512 2048 --out-dir $OUT"
for r in 1 2; do
PYTHONPATH=$PWD/bench/scratch/old/overlay:$PWD timeout 100 python3 -m nf3_hybrid bench $T --tag h200_s7_mulhi_old$r 2>&1 | grep "^| glm" 
timeout 100 python3 -m nf3_hybrid bench $T --tag h200_s7_mulhi_new$r 2>&1 | grep "^| glm"
done
