#!/bin/bash
# Session 23, call 6 (bare host, no vLLM): mma_tabvec's GPU bit test first, then the small
# class swept with mma_tabvec at I=512 and I=2048, twice (the built-in tiles first in each run),
# then every mma GPU test.
# -> kernels_h200_s23_tabvec.txt, bench_moe_h200_s23_tabvec{1,2}_i{512,2048}.json, kernels_h200_s23_mma6.txt
: "${OUT:?set by the device tool}"
s=$SECONDS
PYTHONPATH=$PWD/overlay:$PWD:$PWD/.gpu-extra timeout 150 python3 -m pytest -q -p xdist -n 4 \
  tests/kernels/test_expert_kernels.py -k "table_in_vector" 2>&1 | tail -30 > "$OUT/kernels_h200_s23_tabvec.txt"
echo "tabvec test took $((SECONDS-s)) s"; tail -3 "$OUT/kernels_h200_s23_tabvec.txt"
for r in 1 2; do for I in 512 2048; do
  s=$SECONDS
  PYTHONPATH=$PWD/overlay:$PWD timeout 120 python3 -m nf3_hybrid bench --ours-only --sweep --sweep-classes small \
    --sweep-only mma_tabvec --shape glm5.2 --inter $I --tokens 16 --out-dir "$OUT" --tag h200_s23_tabvec${r}_i$I 2>&1 \
    | grep -v Warning | grep -E "^sweep|Error|error" | sed 's/.BM.: 16, .BN13.: 64, .BK13.: 128, .BN2.: 64, .BK2.: 128, .warps.: 4, .stages.: 3, .ptx.: 1, .ptx4.: 1, .mma.: 1, .mma_kept.: 1, //' | head -20
  echo "sweep $r I=$I took $((SECONDS-s)) s"
done; done
s=$SECONDS
PYTHONPATH=$PWD/overlay:$PWD:$PWD/.gpu-extra timeout 200 python3 -m pytest -q -p xdist -n 4 \
  tests/kernels/test_mma_tiles.py tests/kernels/test_expert_kernels.py -k "mma" 2>&1 \
  | tail -8 > "$OUT/kernels_h200_s23_mma6.txt"
echo "mma tests took $((SECONDS-s)) s"; tail -3 "$OUT/kernels_h200_s23_mma6.txt"
