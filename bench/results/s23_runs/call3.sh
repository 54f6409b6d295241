#!/bin/bash
# Session 23, call 3 (bare host, no vLLM): mma_splitk's GPU test first, then the small
# class swept with mma_splitk at I=512 and I=2048 (the built-in tiles first in each run),
# then every mma GPU test.
# -> kernels_h200_s23_splitk.txt, bench_moe_h200_s23_splitk_i{512,2048}.json, kernels_h200_s23_mma3.txt
: "${OUT:?set by the device tool}"
s=$SECONDS
PYTHONPATH=$PWD/overlay:$PWD:$PWD/.gpu-extra timeout 150 python3 -m pytest -q -p xdist -n 4 \
  tests/kernels/test_expert_kernels.py -k "split_k_gives" 2>&1 | tail -30 > "$OUT/kernels_h200_s23_splitk.txt"
echo "splitk test took $((SECONDS-s)) s"; tail -3 "$OUT/kernels_h200_s23_splitk.txt"
for I in 512 2048; do
  s=$SECONDS
  PYTHONPATH=$PWD/overlay:$PWD timeout 120 python3 -m nf3_hybrid bench --ours-only --sweep --sweep-classes small \
    --sweep-only mma_splitk --shape glm5.2 --inter $I --tokens 16 --out-dir "$OUT" --tag h200_s23_splitk_i$I 2>&1 \
    | grep -v Warning | grep -E "^sweep|Error|error" | sed 's/.BM.: 16, .BN13.: 64, .BK13.: 128, .BN2.: 64, .BK2.: 128, .warps.: 4, .stages.: 3, .ptx.: 1, .ptx4.: 1, .mma.: 1, .mma_kept.: 1, //' | head -20
  echo "sweep I=$I took $((SECONDS-s)) s"
done
s=$SECONDS
PYTHONPATH=$PWD/overlay:$PWD:$PWD/.gpu-extra timeout 200 python3 -m pytest -q -p xdist -n 4 \
  tests/kernels/test_mma_tiles.py tests/kernels/test_expert_kernels.py -k "mma" 2>&1 \
  | tail -8 > "$OUT/kernels_h200_s23_mma3.txt"
echo "mma tests took $((SECONDS-s)) s"; tail -3 "$OUT/kernels_h200_s23_mma3.txt"
