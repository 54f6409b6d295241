#!/bin/bash
# Session 26, call 1 (bare host, no vLLM; carry bench/scratch/gpu-extra: pytest-xdist):
# the GPU bit tests of tile option kconst (decode GEMVs with K a constant) and of mma_dahead
# after its operands moved into one helper, then the decode GEMV class swept with kconst at
# I=512 and I=2048 (built-in tiles first), twice each, alternating.
# -> kernels_h200_s26_kconst.txt, bench_moe_h200_s26_kconst{1,2}_i{512,2048}.json
: "${OUT:?set by the device tool}"
X=$PWD/bench/scratch/gpu-extra
s=$SECONDS
PYTHONPATH=$PWD/overlay:$PWD:$X timeout 200 python3 -m pytest -q -p xdist -n 4 \
  tests/kernels/test_expert_kernels.py -k "k_a_constant or decoded_ahead" 2>&1 | tail -30 > "$OUT/kernels_h200_s26_kconst.txt"
echo "tests took $((SECONDS-s)) s"; tail -3 "$OUT/kernels_h200_s26_kconst.txt"
for r in 1 2; do for I in 512 2048; do
  s=$SECONDS
  PYTHONPATH=$PWD/overlay:$PWD timeout 120 python3 -m nf3_hybrid bench --ours-only --sweep --sweep-classes gemv \
    --sweep-only kconst --shape glm5.2 --inter $I --tokens 1 --out-dir "$OUT" --tag h200_s26_kconst${r}_i$I 2>&1 \
    | grep -v Warning | grep -E "^sweep|Error|error" | head -20
  echo "sweep $r I=$I took $((SECONDS-s)) s"
done; done
rm -f "$OUT"/*.png
ls "$OUT"
